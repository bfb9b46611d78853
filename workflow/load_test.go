package workflow_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

func load(t *testing.T, file string, overrides map[string]string) (*workflow.Loaded, error) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return workflow.Load(src, file, workflow.Options{Registry: steps.Registry(), Overrides: overrides})
}

func TestGoodProfiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.good.yaml")
	if len(files) == 0 {
		t.Fatal("no good fixtures")
	}
	for _, f := range files {
		if _, err := load(t, f, nil); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestBuiltinProfilesLoad(t *testing.T) {
	for _, n := range profiles.Names() {
		src, err := profiles.Read(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := workflow.Load(src, n, workflow.Options{Registry: steps.Registry()}); err != nil {
			t.Errorf("built-in %s: %v", n, err)
		}
	}
	if got := strings.Join(profiles.Names(), ","); got != "asiai,benchmark-1.0,benchmark-1.5" {
		t.Errorf("built-in profiles = %s", got)
	}
}

// Every expected error: file:line:col, where, and a fragment of what.
func TestBadProfiles(t *testing.T) {
	cases := []struct {
		file string
		want []string // "line:col|where|fragment"
	}{
		{"unknown-key.bad.yaml", []string{
			`7:5|metrics[0]|unknown key "units"`,
		}},
		{"unknown-step.bad.yaml", []string{
			// "  - {kind: warmpu": the value starts at column 12.
			`4:12|steps[1] (warmpu)|unknown step kind "warmpu" (known kinds: archive, baseline, monitor, observe, preflight, release, requests, start_engine, verify_engine, warmup)`,
		}},
		{"unknown-name.bad.yaml", []string{
			// 'sum(formal, .output_tokens) + extra_tokens' opens with a quote
			// at column 26 of line 7; extra_tokens is 30 characters into the
			// expression: 26 + 1 + 30 = 57.
			`7:57|tokens.expr|unknown name extra_tokens`,
			// literal block: expression line 2 is file line 9 + 2 = 11,
			// indented 17 spaces, so pct50 is at column 18.
			`11:18|ttft.expr|unknown name pct50`,
		}},
		{"type-error.bad.yaml", []string{
			// '"J" + 1' opens with a quote at column 21; the operator is 4
			// characters into the expression: 21 + 1 + 4 = 26.
			`5:26|m.expr|invalid operation: + (mismatched types string and int)`,
			// energy("start", ...): the string argument is 7 in: 21 + 1 + 7.
			`6:29|e.expr|cannot use string as argument (type float64) to call energy`,
			`8:21|c.expr|a check must be a boolean expression, this one is int`,
		}},
		{"cycle.bad.yaml", []string{
			`5:6|a.expr|dependency cycle: a -> b -> c -> a`,
		}},
		{"quick.bad.yaml", []string{
			`5:9|quick.hold|invalid duration "soon"`,
			`6:3|quick|unknown parameter "baseline" (this profile has: hold)`,
		}},
		{"with-params.bad.yaml", []string{
			`5:37|steps[0] (warmup).with|unknown parameter "m" in "${m}"`,
			// Validate errors point at the with: mapping, column 28.
			`6:28|steps[1] (requests).with|unknown mode "sometimes"`,
			`7:39|steps[2] (baseline).with.duration|invalid duration "forever"`,
			// the value "fatal" in `  - {name: c, expr: "true", severity: fatal}` is at column 39.
			`11:39|c.severity|severity must be warn, exclude or fail, not "fatal"`,
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", c.file)
			_, err := load(t, path, nil)
			list, ok := err.(workflow.ErrorList)
			if !ok {
				t.Fatalf("want an ErrorList, got %T %v", err, err)
			}
			for _, w := range c.want {
				parts := strings.SplitN(w, "|", 3)
				found := false
				for _, e := range list {
					pos := strings.TrimPrefix(e.Error(), path+":")
					if strings.HasPrefix(pos, parts[0]+":") && e.Where == parts[1] && strings.Contains(e.Msg, parts[2]) {
						found = true
					}
				}
				if !found {
					t.Errorf("missing error %s:%s: %s: …%s…\ngot:\n%v", path, parts[0], parts[1], parts[2], err)
				}
			}
			if len(list) != len(c.want) {
				t.Errorf("got %d errors, want %d:\n%v", len(list), len(c.want), err)
			}
		})
	}
}

func TestOverrides(t *testing.T) {
	l, err := load(t, "testdata/minimal.good.yaml", map[string]string{"window": "16", "hold": "2s"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Params["window"] != 16 {
		t.Errorf("window = %v, want 16", l.Params["window"])
	}
	if l.Params["hold"] != 2.0 { // durations are seconds in expressions
		t.Errorf("hold = %v, want 2.0", l.Params["hold"])
	}
	rel := l.Steps[2].Config.(*steps.ReleaseConfig)
	if rel.Hold.D() != 2*time.Second {
		t.Errorf("release hold = %v, want 2s (interpolated from the override)", rel.Hold)
	}
	req := l.Steps[1].Config.(*steps.RequestsConfig)
	if req.Concurrency != 16 {
		t.Errorf("concurrency = %d, want 16", req.Concurrency)
	}
	ok, err := l.Steps[2].When.Eval(l.Params, "external")
	if err != nil || ok {
		t.Errorf("when for external engine = %v, %v; want false", ok, err)
	}

	for _, bad := range []map[string]string{{"nope": "1"}, {"window": "1.5"}, {"hold": "soon"}} {
		_, err := load(t, "testdata/minimal.good.yaml", bad)
		if err == nil || !strings.Contains(err.Error(), "--set") {
			t.Errorf("override %v: want a --set error, got %v", bad, err)
		}
	}
}

func TestProfileHashChangesWithContent(t *testing.T) {
	a, err := load(t, "testdata/minimal.good.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := os.ReadFile("testdata/minimal.good.yaml")
	b, err := workflow.Load(append(src, []byte("\n# comment\n")...), "x.yaml", workflow.Options{Registry: steps.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	if a.Ref.SHA256 == b.Ref.SHA256 || len(a.Ref.SHA256) != 64 {
		t.Errorf("hashes %q and %q should differ", a.Ref.SHA256, b.Ref.SHA256)
	}
}

func TestMalformedYAML(t *testing.T) {
	_, err := workflow.Load([]byte("name: x\nsteps: [\n"), "broken.yaml", workflow.Options{Registry: steps.Registry()})
	if err == nil || !strings.HasPrefix(err.Error(), "broken.yaml:") {
		t.Fatalf("want positioned error, got %v", err)
	}
}
