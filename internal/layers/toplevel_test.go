package layers

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// folders is the graph of the module's top-level folders (cmd, engines,
// internal, report, ...): for each folder, the other folders its packages
// import (tests excluded), each with one package-level import that makes
// the edge, as "from → to". tags is the build's tags ("" for the default
// build).
func folders(t *testing.T, tags string) map[string]map[string]string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "list", "-tags", tags, "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list -tags %q: %v", tags, err)
	}
	top := func(pkg string) string { f, _, _ := strings.Cut(pkg, "/"); return f }
	g := map[string]map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		from := strings.TrimPrefix(f[0], module)
		a := top(from)
		if g[a] == nil {
			g[a] = map[string]string{}
		}
		for _, d := range f[1:] {
			if !strings.HasPrefix(d, module) {
				continue
			}
			to := strings.TrimPrefix(d, module)
			if b := top(to); b != a {
				if old, ok := g[a][b]; !ok || from+" → "+to < old {
					g[a][b] = from + " → " + to
				}
			}
		}
	}
	return g
}

// path is a shortest chain of folders from a to b in g, nil if none.
func path(g map[string]map[string]string, a, b string) []string {
	prev := map[string]string{a: ""}
	queue := []string{a}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		next := make([]string, 0, len(g[x]))
		for y := range g[x] {
			next = append(next, y)
		}
		sort.Strings(next)
		for _, y := range next {
			if _, seen := prev[y]; seen {
				continue
			}
			prev[y] = x
			if y == b {
				var p []string
				for z := b; z != ""; z = prev[z] {
					p = append(p, z)
				}
				slices.Reverse(p)
				return p
			}
			queue = append(queue, y)
		}
	}
	return nil
}

// rows reads the layers of docs/development.md (section "Layers", its
// text block): each line a row of top-level folders, the top row first. It
// maps each folder to its row's index.
func rows(t *testing.T) map[string]int {
	t.Helper()
	name := filepath.Join("..", "..", "docs", "development.md")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Layers\n")
	_, block, ok2 := strings.Cut(sec, "```text\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("%s: no text block in a section \"Layers\"", name)
	}
	row := map[string]int{}
	for i, line := range strings.Split(strings.TrimSpace(block), "\n") {
		for _, f := range strings.Fields(line) {
			if _, dup := row[f]; dup {
				t.Errorf("%s, Layers: %s is on two rows", name, f)
			}
			row[f] = i
		}
	}
	return row
}

// No two top-level folders use each other, directly or through others:
// the folders form layers, each importing only folders below it
// (docs/development.md, "Layers"). A failure names the chain of imports
// that closes the circle, one package import per step.
func TestTopLevelFoldersLayered(t *testing.T) {
	for _, tags := range []string{"", "kubernetes"} {
		g := folders(t, tags)
		if len(g) < 10 {
			t.Fatalf("go list -tags %q found %d top-level folders", tags, len(g))
		}
		names := make([]string, 0, len(g))
		for a := range g {
			names = append(names, a)
		}
		sort.Strings(names)
		for _, a := range names {
			var to []string
			for b := range g[a] {
				to = append(to, b)
			}
			sort.Strings(to)
			t.Logf("tags %q: %s → %s", tags, a, strings.Join(to, " "))
		}
		// Every import points down the rows of docs/development.md.
		row := rows(t)
		for _, a := range names {
			ra, ok := row[a]
			if !ok {
				t.Errorf("tags %q: top-level folder %s is on no row of docs/development.md's layers", tags, a)
				continue
			}
			for b, edge := range g[a] {
				if rb, ok := row[b]; ok && rb <= ra {
					t.Errorf("tags %q: %s imports %s (%s): docs/development.md's layers put %s on a row no lower than %s", tags, a, b, edge, b, a)
				}
			}
		}
		// internal is the bottom layer: shared helpers that every folder
		// may use, using none of them.
		for b, edge := range g["internal"] {
			t.Errorf("tags %q: internal imports %s (%s): internal is the bottom layer", tags, b, edge)
		}
		for i, a := range names {
			for _, b := range names[i+1:] {
				ab, ba := path(g, a, b), path(g, b, a)
				if ab == nil || ba == nil {
					continue
				}
				var steps []string
				circle := append(ab, ba[1:]...)
				for k := 0; k+1 < len(circle); k++ {
					steps = append(steps, g[circle[k]][circle[k+1]])
				}
				t.Errorf("tags %q: %s and %s use each other (%s): %s", tags, a, b, strings.Join(circle, " → "), strings.Join(steps, "; "))
			}
		}
	}
}
