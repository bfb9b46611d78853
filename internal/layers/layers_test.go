package layers

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/joulebench/joulebench/"

// deps maps each package of the module (without the module prefix) to
// every package it imports, directly or not (tests excluded), as go list
// reports it.
func deps(t *testing.T) map[string][]string { return list(t, "Deps") }

// imports maps each package of the module to the packages it imports
// directly (tests excluded).
func imports(t *testing.T) map[string][]string { return list(t, "Imports") }

// list maps each package of the module to the module's packages in its
// go list field (Deps or Imports).
func list(t *testing.T, field string) map[string][]string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "list", "-f", `{{.ImportPath}}{{range .`+field+`}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		var ds []string
		for _, d := range f[1:] {
			if strings.HasPrefix(d, module) {
				ds = append(ds, strings.TrimPrefix(d, module))
			}
		}
		m[strings.TrimPrefix(f[0], module)] = ds
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// under reports whether pkg is dir or inside it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// TestRunnerNamesNoEngine: the run library builds the engine, its client
// and the simulated GPU from the injected registry's descriptors and
// engines/all; among the engine packages it imports engines and
// engines/all only (through engines/all it reaches all of them).
func TestRunnerNamesNoEngine(t *testing.T) {
	g := imports(t)
	if len(g["runner"]) == 0 {
		t.Fatal("go list found no imports of runner")
	}
	for _, d := range g["runner"] {
		if under(d, "engines") && d != "engines" && d != "engines/all" {
			t.Errorf("runner imports %s: an engine is named only in its own package (the runner asks the registry and engines/all)", d)
		}
	}
}

func TestImportsPointDown(t *testing.T) {
	g := deps(t)
	// The engine kinds and the OpenAI protocol client are independent of
	// each other: what they share lives below them, in engines/internal
	// (the streaming core, engines/internal/streamcore). The kinds build
	// on engines/external (the attach layer), never the reverse (below).
	kinds := []string{"engines/vllm", "engines/sglang", "engines/llamacpp", "engines/ollama", "engines/sim", "engines/openai"}
	rules := []struct {
		pkg, mustNot, why string
	}{
		{"loadgen", "engines", "the load generator speaks workload.Request, not an engine client's types"},
		{"workload", "engines", "request types sit below the clients"},
		{"workload", "loadgen", "request types sit below the load generator"},
		{"engines/ollama", "loadgen", "a client is a Doer without importing the load generator"},
		{"internal/runclock", "archive", "the run clock is the bottom layer"},
		{"internal/runclock", "engines", "the run clock is the bottom layer"},
		{"internal/runclock", "workflow", "the run clock is the bottom layer"},
		{"engines/openai", "loadgen", "a client is a Doer without importing the load generator"},
		{"engines/sglang", "engines/vllm", "shared helpers live below both (engines/internal)"},
		{"engines/external", "engines/vllm", "kinds configure the external engine, not the reverse"},
		{"engines/external", "engines/sglang", ""},
		{"engines/external", "engines/llamacpp", ""},
		{"engines/external", "engines/ollama", ""},
		{"engines/external", "engines/openai", "the external server and the OpenAI client share engines/internal"},
		{"engines/process", "engines/external", "the shared process layer is below every engine"},
		{"telemetry", "engines", "power sources know no engine"},
		{"metricdefs", "telemetry", "the formulas compute over records; the clock mapping they use is internal/clocksync, below the power sources"},
		{"telemetry", "telemetry/all", "telemetry/all lists the sources; no source, nor the registry, imports the list"},
		{"archive", "engines", "the archive format is the bottom layer"},
		{"engines", "steps", "engines know no step"},
		{"engines", "workflow", "engines know no workflow"},
		{"engines", "runner", "the run library is above the engines"},
		{"telemetry", "runner", "the run library is above the power sources"},
		{"workflow", "runner", "the run library is above the executor"},
		{"steps", "runner", "the run library is above the steps"},
		{"archive", "runner", "the run library is above the archive"},
		{"report", "runner", "reports render archives, whoever ran them"},
		{"compare", "runner", "comparisons read archives, whoever ran them"},
		{"runner", "cmd", "the run library knows no command line"},
		{"runner", "internal/cli", "the run library knows no command line"},
		{"analysis", "internal/cli", "the library knows no command line"},
		{"campaign", "internal/cli", "the library knows no command line"},
		{"internal/progress", "runner", "the progress display draws runprogress.Snapshot, not a run"},
		{"internal/progress", "steps", "the progress display draws runprogress.Snapshot; the steps are above it"},
		{"steps", "internal/progress", "the steps report a runprogress.Snapshot; the display (a terminal) is not theirs"},
		{"report", "analysis", "renderers take evaluated runs; the evaluation sits above them"},
		{"compare", "analysis", "renderers take evaluated runs; the evaluation sits above them"},
		{"plot", "analysis", "renderers take evaluated runs; the evaluation sits above them"},
		{"campaign", "analysis", "a campaign checks profiles through its Checker's function"},
		{"analysis", "campaign", "evaluation knows no campaign"},
		{"analysis", "cmd", "the library knows no command line"},
		{"campaign", "cmd", "the library knows no command line"},
		{"importer", "workflow", "an import writes an archive, no profile is evaluated"},
	}
	// engines/internal (the streaming core, the test helpers of
	// engines/internal/enginetest, ...) is below every engine package.
	for _, k := range append(kinds, "engines/external", "engines/all") {
		rules = append(rules, struct{ pkg, mustNot, why string }{"engines/internal", k, "the shared engine code is below every engine"})
	}
	for _, k := range kinds {
		for _, o := range kinds {
			if k != o {
				rules = append(rules, struct{ pkg, mustNot, why string }{k, o, "an engine package is independent of the others (shared code: engines/internal)"})
			}
		}
	}
	for _, r := range rules {
		for pkg, ds := range g {
			if !under(pkg, r.pkg) {
				continue
			}
			for _, d := range ds {
				if under(d, r.mustNot) {
					t.Errorf("%s imports %s: %s", pkg, d, r.why)
				}
			}
		}
	}
	if len(g) < 10 {
		t.Fatalf("go list found %d packages", len(g))
	}
	// Every library package may mark its errors with an exit code.
	if ds := g["internal/exitcode"]; len(ds) > 0 {
		t.Errorf("internal/exitcode imports %v: exit codes are the bottom layer", ds)
	}
	// The comparison builds a document of the output layer (internal/doc)
	// and renders through it; the run report (report) is beside it, not
	// below.
	for _, d := range g["compare"] {
		if d == "report" {
			t.Errorf("compare imports report: comparisons build internal/doc documents; the run report is not below them")
		}
	}
	// The steps and the progress display share one snapshot type, below
	// both.
	if ds := g["internal/runprogress"]; len(ds) > 0 {
		t.Errorf("internal/runprogress imports %v: the progress snapshot is the bottom layer", ds)
	}
}

// The record types users' profiles see are a package of their own without
// I/O, and the packages that compute over them (the measurement, the
// expression environment) use them without the codecs.
func TestRecordTypesApartFromCodecs(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "list", "-f", `{{join .Imports " "}}`, module+"archive/record").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		switch {
		case imp == "os" || imp == "io" || imp == "bufio" || strings.HasPrefix(imp, "net") || strings.HasPrefix(imp, "io/"):
			t.Errorf("archive/record imports %s: the record types do no I/O", imp)
		case strings.HasPrefix(imp, module):
			t.Errorf("archive/record imports %s: the record types are the bottom layer", imp)
		}
	}
	g := deps(t)
	for _, pkg := range []string{"measure", "metricdefs", "plot"} {
		for _, d := range g[pkg] {
			if d == "archive" {
				t.Errorf("%s imports archive (the codecs): it computes over archive/record's types", pkg)
			}
		}
	}
}

// One name per record type: the archive package (the codecs) declares no
// alias of a type of archive/record, so every package says record.Request,
// never record.Request.
func TestArchiveAliasesNoRecordType(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "archive", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("archive's files: %v (%d)", err, len(files))
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !ts.Assign.IsValid() {
				return true
			}
			if sel, ok := ts.Type.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "record" {
					t.Errorf("%s: type %s = record.%s: an alias gives a record type a second name", fset.Position(ts.Pos()), ts.Name.Name, sel.Sel.Name)
				}
			}
			return true
		})
	}
}
