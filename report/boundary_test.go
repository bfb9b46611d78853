package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

func TestBoundaryLabel(t *testing.T) {
	for in, want := range map[string]string{"": "", "gpu": "GPU", "cpu+dram": "CPU/DRAM", "node": "node", "gpu+cpu+dram": "GPU/CPU/DRAM"} {
		if got := BoundaryLabel(in); got != want {
			t.Errorf("BoundaryLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// The tables name each energy figure's boundary; results without any keep
// their four columns.
func TestTablesNameTheBoundary(t *testing.T) {
	res := func(vals map[string]record.Result, order ...string) *record.Results {
		return &record.Results{Order: order, Values: vals}
	}
	domains := res(map[string]record.Result{
		"steady_state_j_per_token": {Kind: "metric", Value: 0.5, Unit: "J/token", Boundary: "gpu"},
		"cpu_dram_j_per_token":     {Kind: "metric", Value: 0.125, Unit: "J/token", Boundary: "cpu+dram"},
		"node_j_per_token":         {Kind: "metric", Note: "not applicable: no node power in this run", Unit: "J/token", Boundary: "node"},
		"ttft_p50_ms":              {Kind: "metric", Value: 12.0, Unit: "ms"},
	}, "steady_state_j_per_token", "cpu_dram_j_per_token", "node_j_per_token", "ttft_p50_ms")
	plain := res(map[string]record.Result{"ttft_p50_ms": {Kind: "metric", Value: 12.0, Unit: "ms"}}, "ttft_p50_ms")
	run := func(id string, r *record.Results) Run {
		return Run{Meta: record.Meta{RunID: id, Profile: record.ProfileRef{Name: "benchmark-1.5"}}, Results: r}
	}
	tests := []struct {
		name   string
		render func(*bytes.Buffer) error
		want   []string
		absent []string
	}{
		{"results", func(b *bytes.Buffer) error { return Results(b, run("r1", domains), FormatMarkdown, false) },
			[]string{"| metric | boundary | value | unit | note |", "| cpu_dram_j_per_token | CPU/DRAM | 0.125 |", "| steady_state_j_per_token | GPU | 0.5 |", "| node_j_per_token | node | n/a |"}, nil},
		{"results without boundaries", func(b *bytes.Buffer) error { return Results(b, run("r1", plain), FormatMarkdown, false) },
			[]string{"| metric | value | unit | note |"}, []string{"boundary"}},
		{"runs side by side", func(b *bytes.Buffer) error {
			return Runs(b, []Run{run("r1", domains), run("r2", domains)}, FormatMarkdown)
		}, []string{"| metric | boundary | unit | r1 | r2 |", "| cpu_dram_j_per_token | CPU/DRAM | J/token | 0.125 | 0.125 (0.0 %) |"}, nil},
		{"csv", func(b *bytes.Buffer) error { return Results(b, run("r1", domains), FormatCSV, false) },
			[]string{"name,kind,value,unit,note,simulated,boundary", "cpu_dram_j_per_token,metric,0.125,J/token,,false,cpu+dram"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.render(&b); err != nil {
				t.Fatal(err)
			}
			out := strings.Join(strings.Fields(b.String()), " ")
			for _, w := range tc.want {
				if !strings.Contains(out, strings.Join(strings.Fields(w), " ")) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tc.absent {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, b.String())
				}
			}
		})
	}
}
