package workflow_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

func loadExt(t *testing.T, name string) (*workflow.Loaded, error) {
	t.Helper()
	return load(t, filepath.Join("testdata", "extends", name), nil)
}

// The five-line profile of issue 16: it adds a metric and a check to
// benchmark-1.5 and inherits everything else.
func TestExtendsAddsToBuiltin(t *testing.T) {
	l, err := loadExt(t, "mine.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if l.Profile.Name != "mine" || len(l.Steps) == 0 {
		t.Fatalf("name %q, %d steps: the steps are inherited", l.Profile.Name, len(l.Steps))
	}
	last := l.Profile.Metrics[len(l.Profile.Metrics)-1]
	if last.Name != "tokens_per_kj" {
		t.Errorf("last metric = %s, want the added tokens_per_kj", last.Name)
	}
	if c := l.Profile.Checks[len(l.Profile.Checks)-1]; c.Name != "efficient" || c.Severity != "warn" {
		t.Errorf("last check = %+v", c)
	}
	if got := strings.Join(l.Extends(), " <- "); got != "testdata/extends/mine.yaml <- benchmark-1.5.yaml (built-in)" {
		t.Errorf("chain = %s", got)
	}
	origins := map[string]workflow.Origin{}
	for _, o := range l.Origins() {
		origins[o.Section+"."+o.Name] = o
	}
	// tokens_per_kj is on line 3 of mine.yaml; window on line 21 of the built-in.
	if o := origins["metrics.tokens_per_kj"]; o.From != "testdata/extends/mine.yaml:3" {
		t.Errorf("origin of tokens_per_kj = %+v", o)
	}
	if o := origins["parameters.window"]; o.From != "benchmark-1.5.yaml (built-in):21" || len(o.Overrides) != 0 {
		t.Errorf("origin of window = %+v", o)
	}
	// The archive keeps the flattened profile: it loads on its own (no
	// extends) into the same formulas.
	if strings.Contains(string(l.Source), "extends:") {
		t.Errorf("flattened source still extends:\n%s", l.Source)
	}
	flat, err := workflow.Load(l.Source, "profile.yaml", workflow.Options{Registry: steps.Registry()})
	if err != nil {
		t.Fatalf("flattened profile does not load: %v\n%s", err, l.Source)
	}
	if a, b := len(flat.Program.Order()), len(l.Program.Order()); a != b || flat.Profile.Name != "mine" {
		t.Errorf("flattened: %d formulas, name %s; want %d, mine", a, flat.Profile.Name, b)
	}
}

func TestExtendsOverride(t *testing.T) {
	l, err := loadExt(t, "override.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if l.Params["window"] != 50 || l.Params["cv_max"] != 1.0 {
		t.Errorf("window %v (want 50), cv_max %v (want float 1)", l.Params["window"], l.Params["cv_max"])
	}
	for _, m := range l.Profile.Metrics {
		if m.Name == "tokens_per_kj" && (m.Format != "%.2f" || m.Expr != "1000 / full_lifecycle_j_per_token") {
			t.Errorf("overridden metric = %+v: format changed, expr kept", m)
		}
	}
	for _, c := range l.Profile.Checks {
		if c.Name == "efficient" && (c.Severity != "fail" || c.Expr != "tokens_per_kj > 1") {
			t.Errorf("overridden check = %+v", c)
		}
	}
	var win workflow.Origin
	for _, o := range l.Origins() {
		if o.Section == "parameters" && o.Name == "window" {
			win = o
		}
	}
	// window: defined on line 21 of the built-in, overridden on line 6.
	if win.From != "benchmark-1.5.yaml (built-in):21" || strings.Join(win.Overrides, ",") != "testdata/extends/override.yaml:6" {
		t.Errorf("window origin = %+v", win)
	}
	res, err := l.Resolved()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), "window: {type: int, default: 50, min: 1, description: requests per steady-state window} # from benchmark-1.5.yaml (built-in):"+builtinLine(t, "  window: {")+", overridden at testdata/extends/override.yaml:6") {
		t.Errorf("resolved view lacks window's provenance:\n%s", res)
	}
}

// Errors name the file where the entry was written, at its line:col.
func TestExtendsErrors(t *testing.T) {
	cases := []struct {
		file string
		want []string
	}{
		// "widnow" at line 5 col 5; steady_state_j_per_token is defined by
		// the built-in on the line that builtinLine finds.
		{"typo.yaml", []string{
			`testdata/extends/typo.yaml:5:5: override.parameters: the parent profile has no parameter "widnow" to override (it has: window,`,
			`testdata/extends/typo.yaml:7:5: metrics[0]: metric "steady_state_j_per_token" is already defined at benchmark-1.5.yaml (built-in):` +
				builtinLine(t, "- name: steady_state_j_per_token") + `; to change it, put it under override: metrics:`,
		}},
		// "full_lifecycle_j_per_tokn" starts at column 18 of line 6: expr: at col 11 + 7.
		{"bad-expr.yaml", []string{`testdata/extends/bad-expr.yaml:6:18: tokens_per_kj.expr: unknown name full_lifecycle_j_per_tokn`}},
		{"cycle-a.yaml", []string{`testdata/extends/cycle-b.yaml:2:10: extends: cycle: testdata/extends/cycle-a.yaml -> testdata/extends/cycle-b.yaml -> testdata/extends/cycle-a.yaml`}},
		{"orphan-override.yaml", []string{`testdata/extends/orphan-override.yaml:2:1: override: override: changes entries of the profile this one extends`}},
	}
	for _, c := range cases {
		_, err := loadExt(t, c.file)
		if err == nil {
			t.Errorf("%s: loaded, want errors", c.file)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error lacks\n  %s\ngot:\n  %v", c.file, w, err)
			}
		}
	}
}

// A step inherited from the parent that the child's parameter override
// breaks is reported in the parent file, where the step is written.
func TestExtendsErrorInParentFile(t *testing.T) {
	dir := t.TempDir()
	parent := "name: p\nparameters: {n: 3}\nsteps:\n  - {kind: warmup, with: {requests: \"${n}\", bogus: 1}}\nmetrics: [{name: m, expr: \"1\"}]\n"
	child := "name: c\nextends: p.yaml\n"
	if err := os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(parent), 0o644); err != nil {
		t.Fatal(err)
	}
	cf := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cf, []byte(child), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := load(t, cf, nil)
	// bogus: line 4, column 45 of p.yaml (44 characters before it).
	want := filepath.Join(dir, "p.yaml") + `:4:45: steps[0] (warmup).with: unknown key "bogus"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v, want %s", err, want)
	}
}

// builtinLine is the 1-based number of the line of benchmark-1.5 that
// starts with prefix (after its indentation, when prefix has none), so
// that positions in errors follow the built-in as it is edited.
func builtinLine(t *testing.T, prefix string) string {
	t.Helper()
	src, err := profiles.Read("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, prefix) || strings.HasPrefix(strings.TrimLeft(line, " "), prefix) {
			return strconv.Itoa(i + 1)
		}
	}
	t.Fatalf("benchmark-1.5 has no line starting with %q", prefix)
	return ""
}
