package workflow_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

const invalidatesProfile = `name: inv
version: 1
steps:
  - {kind: monitor, with: {interval: 500ms}}
derive:
  formal: filter(requests, .phase == "formal" && .ok)
metrics:
  - {name: e_j_per_token, unit: J/token, boundary: gpu, expr: "1.0"}
  - {name: ttft_p50_ms, unit: ms, expr: "2.0"}
  - {name: ttft_p99_ms, unit: ms, expr: "3.0"}
  - {name: tokens, unit: tokens, expr: len(formal)}
checks:
  - {name: c, expr: "false", severity: %s, invalidates: %s}
`

// A check's invalidates is expanded at load into metric names in profile
// order (a pattern, gpu_energy, names), or [all]; what it cannot be is an
// error at the list's place.
func TestCheckInvalidates(t *testing.T) {
	cases := []struct {
		severity, list string
		want           []string
		err            string
	}{
		{"warn", "[ttft_*]", []string{"ttft_p50_ms", "ttft_p99_ms"}, ""},
		{"warn", "[gpu_energy]", []string{"e_j_per_token"}, ""},
		{"warn", "[tokens, ttft_p50_ms]", []string{"ttft_p50_ms", "tokens"}, ""},
		{"warn", "[all]", []string{"all"}, ""},
		{"exclude", "[all]", []string{"all"}, ""},
		{"warn", "[tpot_ms]", nil, `"tpot_ms" is not a metric of the profile`},
		{"warn", "[formal]", nil, `"formal" is not a metric of the profile`}, // derived, not a metric
		{"warn", "[tpot_*]", nil, `"tpot_*" matches no metric`},
		{"warn", "[all, tokens]", nil, "all goes alone"},
		{"exclude", "[tokens]", nil, "an exclude check removes the whole run"},
	}
	for _, c := range cases {
		t.Run(c.severity+" "+c.list, func(t *testing.T) {
			src := strings.Replace(strings.Replace(invalidatesProfile, "%s", c.severity, 1), "%s", c.list, 1)
			l, err := workflow.Load([]byte(src), "inv.yaml", workflow.Options{Registry: steps.Registry()})
			if c.err != "" {
				// the list is on line 13, after "invalidates: " at column 59
				if err == nil || !strings.Contains(err.Error(), "inv.yaml:13:") || !strings.Contains(err.Error(), "checks.c.invalidates") || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want inv.yaml:13: checks.c.invalidates: …%s…", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Profile.Checks[0].Invalidated; !slices.Equal(got, c.want) {
				t.Errorf("invalidated %v, want %v", got, c.want)
			}
		})
	}
}

// The built-in method profiles say what their warn checks invalidate
// (docs/methodology.md, "What a check invalidates"): a latency check never
// names an energy figure and the reverse.
func TestBuiltinInvalidates(t *testing.T) {
	for _, name := range []string{"benchmark-1.0", "benchmark-1.5"} {
		src, err := profiles.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		l, err := workflow.Load(src, name, workflow.Options{Registry: steps.Registry()})
		if err != nil {
			t.Fatal(err)
		}
		inv := map[string][]string{}
		for _, c := range l.Profile.Checks {
			inv[c.Name] = c.Invalidated
		}
		ft := inv["first_token_times_exact"]
		if !slices.Contains(ft, "ttft_p50_ms") || !slices.Contains(ft, "tpot_ms") || slices.Contains(ft, "steady_state_j_per_token") || slices.Contains(ft, "formal_j_per_token") {
			t.Errorf("%s: first_token_times_exact invalidates %v", name, ft)
		}
		for _, c := range l.Profile.Checks {
			if c.Name == "first_token_times_exact" {
				continue
			}
			for _, m := range c.Invalidated {
				if strings.HasPrefix(m, "ttft_") {
					t.Errorf("%s: %s invalidates the latency figure %s", name, c.Name, m)
				}
			}
		}
		if !slices.Equal(inv["steady_state_reached"], []string{"steady_state_j_per_token", "j_per_good_token_steady"}) {
			t.Errorf("%s: steady_state_reached invalidates %v", name, inv["steady_state_reached"])
		}
		if name == "benchmark-1.5" {
			bi := inv["baseline_idle"]
			if !slices.Contains(bi, "full_lifecycle_j_per_token") || !slices.Contains(bi, "release_energy_j") || slices.Contains(bi, "steady_state_j_per_token") || slices.Contains(bi, "startup_energy_j") {
				t.Errorf("baseline_idle invalidates %v", bi)
			}
		}
	}
}
