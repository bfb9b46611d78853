package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/internal/golden"
)

// The outputs of analyze, report, compare and plot on the test archives,
// byte for byte against the files under testdata/golden (go test -run
// TestOutputsGolden -update rewrites them). A change to any of them (a
// number, a column, a line of the log, an exit code) fails here: the
// structure work must leave every output as it was.
//
// Each case keeps its standard output as NAME.stdout, its exit code and
// standard error as NAME.stderr (the log's clock and the output directory
// replaced by placeholders), and each file it writes as NAME.FILE (an HTML
// page's "written" time replaced too). Files over 64 KiB are kept gzipped
// (NAME.gz; compared uncompressed, the first differing line is shown). Plot files are kept as their SHA-256 (the
// PNG, SVG and PDF of three runs weigh 2.4 MB): PNG and SVG are
// byte-stable; the PDF carries its creation time, which is replaced by a
// fixed one (same length, so the cross-reference offsets hold) before the
// digest. One run's SVG and the frontier's are kept in full, so that a
// plot change can be read. Besides the test archives, frontierFixture
// makes three load points of one configuration, so that compare's and
// plot's energy–latency frontier is drawn too.

const (
	goldenDir     = "testdata/golden"
	goldenGzipMin = 64 << 10
)

// goldenArchives are the test archives, by the names the cases use.
var goldenArchives = []struct{ name, dir string }{
	{"sample-run", "../../archive/testdata/sample-run"},
	{"sample-run-ok", "../../archive/testdata/sample-run-ok"},
	{"run-small", smallRun},
}

// goldenCase is one command line; OUT in its arguments is a fresh
// directory, and files lists what the command writes there; FRONTIER is
// the directory of frontierFixture.
type goldenCase struct {
	name  string
	args  []string
	files []string
	// digest: keep the files as SHA-256 (plots), full: except this one.
	digest bool
	full   string
}

func goldenCases() []goldenCase {
	var cs []goldenCase
	dirs := make([]string, 0, len(goldenArchives))
	for _, a := range goldenArchives {
		dirs = append(dirs, a.dir)
		for _, f := range []string{"table", "json", "csv", "markdown"} {
			cs = append(cs,
				goldenCase{name: "analyze-" + a.name + "-" + f, args: []string{"analyze", a.dir, "--format", f}},
				goldenCase{name: "analyze-" + a.name + "-" + f + "-all", args: []string{"analyze", a.dir, "--format", f, "--all"}})
		}
		cs = append(cs,
			goldenCase{name: "analyze-" + a.name + "-output-file-all", args: []string{"analyze", a.dir, "--all", "--output-file", "OUT/results.json"}, files: []string{"results.json"}},
			goldenCase{name: "plot-" + a.name, args: []string{"plot", a.dir, "--out", "OUT/plot.svg"}, files: []string{"plot.svg"}, digest: true, full: fullIf(a.dir == smallRun, "plot.svg")},
			goldenCase{name: "plot-" + a.name + "-png", args: []string{"plot", a.dir, "--out", "OUT/plot.png"}, files: []string{"plot.png"}, digest: true},
			goldenCase{name: "plot-" + a.name + "-pdf", args: []string{"plot", a.dir, "--out", "OUT/plot.pdf", "--width", "800", "--height", "600"}, files: []string{"plot.pdf"}, digest: true})
	}
	sample, ok := goldenArchives[0].dir, goldenArchives[1].dir
	cs = append(cs,
		goldenCase{name: "analyze-baseline-table", args: []string{"analyze", sample, "--baseline", ok}},
		goldenCase{name: "analyze-baseline-json", args: []string{"analyze", sample, "--baseline", ok, "--format", "json"}},
		goldenCase{name: "analyze-set-profile", args: []string{"analyze", smallRun, "--profile", "benchmark-1.5", "--set", "release_hold=5s", "--all"}})
	for _, f := range []string{"table", "json", "csv", "markdown"} {
		cs = append(cs,
			goldenCase{name: "report-" + f, args: append([]string{"report", "--format", f}, dirs...)},
			goldenCase{name: "report-baseline-" + f, args: append([]string{"report", "--format", f, "--baseline", smallRun}, dirs[:2]...)},
			goldenCase{name: "compare-" + f, args: append([]string{"compare", "--format", f}, dirs...)})
	}
	cs = append(cs,
		goldenCase{name: "report-profile-1.0", args: append([]string{"report", "--profile", "benchmark-1.0"}, dirs...)},
		goldenCase{name: "report-html", args: append([]string{"report", "--format", "html", "--out", "OUT/report.html"}, dirs...), files: []string{"report.html"}},
		goldenCase{name: "report-out", args: append([]string{"report", "--format", "markdown", "--out", "OUT/report.md"}, dirs...), files: []string{"report.md"}},
		goldenCase{name: "compare-html", args: append([]string{"compare", "--format", "html", "--out", "OUT/compare.html"}, dirs...), files: []string{"compare.html"}},
		goldenCase{name: "compare-dir-of-runs", args: []string{"compare", "../../archive/testdata"}},
		goldenCase{name: "plot-frontier", args: append([]string{"plot", "--frontier", "--out", "OUT/frontier.svg"}, dirs...)})
	// Three load points of one configuration (frontierFixture).
	front := []string{"FRONTIER/c1", "FRONTIER/c4", "FRONTIER/c16"}
	for _, f := range []string{"table", "json", "csv", "markdown"} {
		cs = append(cs, goldenCase{name: "compare-frontier-" + f, args: append([]string{"compare", "--format", f}, front...)})
	}
	cs = append(cs,
		goldenCase{name: "compare-frontier-slo", args: append([]string{"compare", "--latency-max", "400", "--latency", "ttft_p99_ms"}, front...)},
		goldenCase{name: "compare-frontier-html", args: append([]string{"compare", "--format", "html", "--out", "OUT/compare.html"}, front...), files: []string{"compare.html"}},
		goldenCase{name: "plot-frontier-svg", args: append([]string{"plot", "--frontier", "--out", "OUT/frontier.svg"}, front...), files: []string{"frontier.svg"}, digest: true, full: "frontier.svg"},
		goldenCase{name: "plot-frontier-png", args: append([]string{"plot", "--frontier", "--latency-max", "400", "--out", "OUT/frontier.png"}, front...), files: []string{"frontier.png"}, digest: true})
	return cs
}

// frontierFixture writes three copies of sample-run-ok under a new
// directory, c1, c4 and c16: runs of one configuration at concurrency 1, 4
// and 16 (run.json's parameters mode and concurrency, and its run ID with
// the suffix -c1, -c4, -c16) whose power and energy counter readings are
// scaled by 1, 0.8 and 0.7, so that their J/token fall with the load: the
// load points of an energy–latency frontier.
func frontierFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	src := goldenArchives[1].dir
	for _, p := range []struct {
		conc  int
		scale float64
	}{{1, 1}, {4, 0.8}, {16, 0.7}} {
		dir := filepath.Join(root, fmt.Sprintf("c%d", p.conc))
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		var meta map[string]any
		b, err := os.ReadFile(filepath.Join(dir, "run.json"))
		if err == nil {
			err = json.Unmarshal(b, &meta)
		}
		if err != nil {
			t.Fatal(err)
		}
		params := meta["parameters"].(map[string]any)
		params["mode"], params["concurrency"] = "concurrency", p.conc
		meta["run_id"] = fmt.Sprintf("%s-c%d", meta["run_id"], p.conc)
		if b, err = json.MarshalIndent(meta, "", "  "); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		scalePower(t, filepath.Join(dir, "power.csv"), p.scale)
	}
	return root
}

// scalePower multiplies the power_w and energy_j columns of a power.csv.
func scalePower(t *testing.T, path string, f float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	head := strings.Split(lines[0], ",")
	cols := map[int]bool{}
	for i, h := range head {
		if h == "power_w" || h == "energy_j" {
			cols[i] = true
		}
	}
	if len(cols) != 2 {
		t.Fatalf("%s: header %q lacks power_w or energy_j", path, lines[0])
	}
	for li := 1; li < len(lines); li++ {
		cells := strings.Split(lines[li], ",")
		for i := range cells {
			if !cols[i] || cells[i] == "" {
				continue
			}
			v, err := strconv.ParseFloat(cells[i], 64)
			if err != nil {
				t.Fatalf("%s:%d: %v", path, li+1, err)
			}
			cells[i] = strconv.FormatFloat(v*f, 'g', -1, 64)
		}
		lines[li] = strings.Join(cells, ",")
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fullIf(cond bool, file string) string {
	if cond {
		return file
	}
	return ""
}

func TestOutputsGolden(t *testing.T) {
	// No user config or profile directory may change what is printed.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	if golden.Updating() {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	front := frontierFixture(t)
	// The cases share no state (each app is its own): they run in parallel.
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			args := make([]string, len(c.args))
			for i, a := range c.args {
				args[i] = strings.ReplaceAll(strings.ReplaceAll(a, "OUT", out), "FRONTIER", front)
			}
			stdout, stderr, code := runCLI(t, args...)
			checkGolden(t, c.name+".stdout", normalizeOutput([]byte(stdout), out, front))
			checkGolden(t, c.name+".stderr", normalizeOutput([]byte(fmt.Sprintf("exit %d\n%s", code, stderr)), out, front))
			var digests bytes.Buffer
			for _, f := range c.files {
				b, err := os.ReadFile(filepath.Join(out, f))
				if err != nil {
					t.Fatalf("%v: %v", args, err)
				}
				if !c.digest || f == c.full {
					checkGolden(t, c.name+"."+f, normalizeOutput(b, out, front))
				}
				if c.digest {
					fmt.Fprintf(&digests, "%x  %s\n", sha256.Sum256(fixedPDFDates(b)), f)
				}
			}
			if c.digest {
				checkGolden(t, c.name+".sha256", digests.Bytes())
			}
		})
	}
}

// The golden numbers of run-small, by hand (testdata/run-small: one
// device at 100 W throughout; formal [10, 20]; startup [5, 10]; release
// [20, 30], not closed with the default 30 s hold, so it runs to the end
// of the data; four formal requests sent at 10, 10, 12, 14, first token at
// 11, 12, 13, 15, done at 15, 16, 18, 20, with 50, 50, 100, 100 tokens).
// The golden file holds what the code computed; this says it is right.
func TestOutputsGoldenHandValues(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(goldenDir, "analyze-run-small-json.stdout"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]struct {
		Value any `json:"value"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"formal_energy_j":            1000,                        // 100 W × 10 s
		"formal_output_tokens":       300,                         // 50 + 50 + 100 + 100
		"formal_j_per_token":         1000.0 / 300,                // 3.333…
		"startup_energy_j":           500,                         // 100 W × 5 s
		"release_energy_j":           1000,                        // 100 W × 10 s
		"full_lifecycle_j_per_token": (500 + 1000 + 1000) / 300.0, // 8.333…
		"output_throughput_tok_s":    30,                          // 300 tokens / 10 s
		"mean_output_tokens":         75,                          // 300 / 4
		"e2e_latency_p50_ms":         6000,                        // latencies 5, 6, 6, 6 s
		"ttft_p50_ms":                1000,                        // TTFTs 1, 2, 1, 1 s
		"ttft_p90_ms":                1700,                        // sorted 1, 1, 1, 2: rank 0.9 × 3 = 2.7 → 1 + 0.7 × (2 − 1) s
	}
	for name, w := range want {
		v, ok := got[name].Value.(float64)
		if !ok || math.Abs(v-w) > 1e-9*math.Abs(w) {
			t.Errorf("%s = %v in the golden file, want %v", name, got[name].Value, w)
		}
	}
}

// The frontier fixture's load points, by hand: each is sample-run-ok with
// its power scaled by 1, 0.8 and 0.7 and the same requests, so its
// formal-window J/token is sample-run-ok's times that factor.
func TestOutputsGoldenFrontierHandValues(t *testing.T) {
	var ok map[string]struct {
		Value any `json:"value"`
	}
	var cmp struct {
		Frontier []struct {
			RunID     string  `json:"run_id"`
			JPerToken float64 `json:"j_per_token"`
			Basis     string  `json:"basis"`
		} `json:"frontier"`
	}
	for name, v := range map[string]any{"analyze-sample-run-ok-json.stdout": &ok, "compare-frontier-json.stdout": &cmp} {
		b, err := os.ReadFile(filepath.Join(goldenDir, name))
		if err == nil {
			err = json.Unmarshal(b, v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	base, isNum := ok["formal_j_per_token"].Value.(float64)
	if !isNum {
		t.Fatalf("formal_j_per_token = %v", ok["formal_j_per_token"].Value)
	}
	want := map[string]float64{"-c1": base, "-c4": 0.8 * base, "-c16": 0.7 * base}
	if len(cmp.Frontier) != len(want) {
		t.Fatalf("%d frontier points, want %d", len(cmp.Frontier), len(want))
	}
	for _, p := range cmp.Frontier {
		w := want[p.RunID[strings.LastIndex(p.RunID, "-"):]]
		if p.Basis != "formal" || math.Abs(p.JPerToken-w) > 1e-9*w {
			t.Errorf("%s: %v J/token (%s), want %v (formal)", p.RunID, p.JPerToken, p.Basis, w)
		}
	}
}

var (
	logClock    = regexp.MustCompile(`(?m)^[0-9]{2}:[0-9]{2}:[0-9]{2} `)
	htmlWritten = regexp.MustCompile(`written [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2} UTC`)
)

// normalizeOutput replaces what changes from one test run to the next:
// the console log's clock, the time an HTML page says it was written, the
// temporary output directory and that of the frontier fixture.
func normalizeOutput(b []byte, outDir, frontierDir string) []byte {
	b = logClock.ReplaceAll(b, []byte("HH:MM:SS "))
	b = htmlWritten.ReplaceAll(b, []byte("written YYYY-MM-DD HH:MM UTC"))
	b = bytes.ReplaceAll(b, []byte(outDir), []byte("OUT"))
	return bytes.ReplaceAll(b, []byte(frontierDir), []byte("FRONTIER"))
}

var pdfDate = regexp.MustCompile(`/(CreationDate|ModDate) \(D:[0-9]{14}\)`)

// fixedPDFDates sets a PDF's creation and modification times to one fixed
// value of the same length; other files pass unchanged.
func fixedPDFDates(b []byte) []byte {
	if !bytes.HasPrefix(b, []byte("%PDF")) {
		return b
	}
	return pdfDate.ReplaceAll(b, []byte("/$1 (D:20000101000000)"))
}

// checkGolden compares got with testdata/golden/name (name.gz when got is
// over 64 KiB), or rewrites the file under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(goldenDir, name)
	gz := len(got) > goldenGzipMin
	if gz {
		path += ".gz"
	}
	if golden.Updating() {
		writeGolden(t, path, got, gz)
		return
	}
	want, err := readGolden(path, gz)
	if err != nil {
		t.Fatalf("%v (go test -run TestOutputsGolden -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file: %s", path, firstDifference(got, want))
	}
}

func writeGolden(t *testing.T, path string, b []byte, gz bool) {
	t.Helper()
	if gz {
		var buf bytes.Buffer
		w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b = buf.Bytes()
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readGolden(path string, gz bool) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil || !gz {
		return b, err
	}
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return io.ReadAll(r)
}

// firstDifference names the first line where got and want differ.
func firstDifference(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("line %d (of %d, want %d lines):\n got: %.300q\nwant: %.300q", i+1, len(g), len(w), gl, wl)
		}
	}
	return "no line differs (bytes do)"
}

// The README's two commands: `run` prints and writes what `analyze` of
// the archive it has written prints and writes (its summary, its
// --output-file), byte for byte, and its results.json holds in values
// what `analyze --all --format json` prints (results.json nests it one
// level deeper: re-indented, the bytes are the same). The run itself is
// timing-dependent, so it has no golden file.
func TestRunResultsEqualAnalyze(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "run")
	runFile, anFile := filepath.Join(tmp, "run-results.json"), filepath.Join(tmp, "analyze-results.json")
	runOut, runErr, runCode := runCLI(t, "run", "benchmark-1.5", "--out", dir, "--no-progress", "--output-file", runFile,
		"--set", "baseline=500ms", "--set", "release_hold=500ms", "--set", "release_max_wait=5s",
		"--set", "sample_interval=100ms", "--set", "request_count=8", "--set", "warmup_requests=1",
		"--set", "accept_unsteady=true")
	// On a loaded machine release may not close within its 5 s (exit 3,
	// the run excluded): analyze must then say the same.
	if runCode != exitOK && runCode != exitChecks {
		t.Fatalf("run: exit %d\n%s", runCode, runErr)
	}
	anOut, anErr, code := runCLI(t, "analyze", dir, "--output-file", anFile)
	if code != runCode {
		t.Fatalf("analyze: exit %d, run's %d\n%s", code, runCode, anErr)
	}
	// run prints the summary as analyze does, then where the archive is.
	if want := strings.ReplaceAll(anOut, anFile, runFile) + "archive: " + dir + "\n"; runOut != want {
		t.Errorf("run's output differs from analyze's: %s", firstDifference([]byte(runOut), []byte(want)))
	}
	a, errA := os.ReadFile(runFile)
	b, errB := os.ReadFile(anFile)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("run --output-file differs from analyze --output-file: %s", firstDifference(a, b))
	}

	allOut, anErr, code := runCLI(t, "analyze", dir, "--format", "json", "--all")
	if code != runCode {
		t.Fatalf("analyze --all: exit %d, run's %d\n%s", code, runCode, anErr)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Values json.RawMessage `json:"values"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	var values bytes.Buffer
	if err := json.Indent(&values, doc.Values, "", "  "); err != nil {
		t.Fatal(err)
	}
	values.WriteByte('\n')
	if !bytes.Equal(values.Bytes(), []byte(allOut)) {
		t.Errorf("results.json values differ from analyze --all: %s", firstDifference(values.Bytes(), []byte(allOut)))
	}
}
