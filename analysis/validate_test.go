package analysis

import (
	"path/filepath"
	"testing"

	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// PreparedDeps loads benchmark-1.5's built-in chat set, so that the formal
// requests it sends are known (its request_count, 1000, by default); a
// request set that cannot be read gives none.
func TestPreparedDeps(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sets   []string
		loaded bool
	}{
		{"built-in set", nil, true},
		{"missing file", []string{"dataset=" + filepath.Join(t.TempDir(), "none.jsonl")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _, err := noUserDirs().ReadLoad("benchmark-1.5", tc.sets)
			if err != nil {
				t.Fatal(err)
			}
			d := PreparedDeps(l)
			if (d != nil) != tc.loaded {
				t.Fatalf("deps %v, want loaded %v", d, tc.loaded)
			}
			if n, known := steps.FormalRequests(l, d); tc.loaded && (!known || n != 1000) {
				t.Errorf("formal requests %d (known %v), want 1000", n, known)
			}
		})
	}
}

func TestValidLine(t *testing.T) {
	l := &workflow.Loaded{
		Profile: &workflow.Profile{Name: "p", Metrics: []workflow.MetricDecl{{Name: "a"}, {Name: "b"}}, Checks: []workflow.CheckDecl{{Name: "c"}}},
		Steps:   []workflow.Step{{}, {}, {}},
	}
	if got, want := ValidLine("p.yaml", l), "p.yaml: profile p is valid: 0 parameters, 3 steps, 0 derived values, 2 metrics, 1 checks"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
