package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workflow"
)

// nodeOnly is the results of a node recording (an import of PTDaemon's
// log): its GPU figures are not applicable, its node figures have values.
func nodeOnly() Run {
	return Run{
		Meta: record.Meta{RunID: "imp", Status: record.StatusComplete, Profile: record.ProfileRef{Name: "benchmark-1.0"},
			Engine:   record.EngineInfo{Kind: "imported"},
			Stages:   []record.Stage{{Name: "formal", Start: 100, End: 110}},
			Hardware: record.Hardware{Devices: []record.Device{{ID: "node0", Domain: record.DomainNode}}}},
		Results: &record.Results{
			Order: []string{"steady_state_j_per_token", "avg_gpu_power_w", "ttft_p50_ms", "node_j_per_token", "avg_node_power_w"},
			Values: map[string]record.Result{
				"steady_state_j_per_token": {Kind: "metric", Unit: "J/token", Boundary: "gpu", Note: "not applicable: no power source for the GPUs"},
				"avg_gpu_power_w":          {Kind: "metric", Unit: "W", Boundary: "gpu", Note: "not applicable: no power source for the GPUs"},
				"ttft_p50_ms":              {Kind: "metric", Unit: "ms", Note: "not applicable: no request with its own times"},
				"node_j_per_token":         {Kind: "metric", Unit: "J/token", Boundary: "node", Value: 0.0787, Format: "%.4f"},
				"avg_node_power_w":         {Kind: "metric", Unit: "W", Boundary: "node", Value: 6200.0, Format: "%.1f"},
			},
		},
	}
}

// The default views show the figures of the boundary the run measured: a
// node-only run's summary and tables have its node figures and no GPU
// rows; --all keeps every row, and a run that measured no power at all
// keeps its n/a rows (each says why).
func TestDefaultViewsShowTheMeasuredBoundary(t *testing.T) {
	spec := SummarySpec{Metrics: []string{"steady_state_j_per_token", "avg_gpu_power_w", "ttft_p50_ms", "node_j_per_token", "avg_node_power_w"}}
	noPower := nodeOnly()
	noPower.Meta.Hardware.Devices = nil
	tests := []struct {
		name         string
		render       func(*bytes.Buffer) error
		want, absent []string
	}{
		{"summary", func(b *bytes.Buffer) error { return Summary(b, nodeOnly(), spec) },
			[]string{"node_j_per_token 0.0787 J/token [node]", "avg_node_power_w 6200.0 W [node]", "ttft_p50_ms n/a ms"},
			[]string{"steady_state_j_per_token", "avg_gpu_power_w"}},
		{"results table", func(b *bytes.Buffer) error { return Results(b, nodeOnly(), FormatTable, false) },
			[]string{"node_j_per_token", "avg_node_power_w", "ttft_p50_ms"}, []string{"steady_state_j_per_token", "avg_gpu_power_w"}},
		{"results --all", func(b *bytes.Buffer) error { return Results(b, nodeOnly(), FormatTable, true) },
			[]string{"steady_state_j_per_token", "avg_gpu_power_w", "node_j_per_token"}, nil},
		{"report side by side", func(b *bytes.Buffer) error { return Runs(b, []Run{nodeOnly()}, FormatMarkdown) },
			[]string{"| node_j_per_token | node | J/token | 0.0787 |"}, []string{"steady_state_j_per_token", "avg_gpu_power_w"}},
		{"json keeps every row", func(b *bytes.Buffer) error { return Runs(b, []Run{nodeOnly()}, FormatJSON) },
			[]string{"steady_state_j_per_token", "avg_gpu_power_w"}, nil},
		{"no power measured", func(b *bytes.Buffer) error { return Summary(b, noPower, spec) },
			[]string{"steady_state_j_per_token n/a", "avg_gpu_power_w n/a"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.render(&b); err != nil {
				t.Fatal(err)
			}
			out := strings.Join(strings.Fields(b.String()), " ")
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(out, a) {
					t.Errorf("output has %q:\n%s", a, b.String())
				}
			}
		})
	}
}

// report's GPU energy by stage of a run without GPU power says so, with
// no empty table and no advice to re-evaluate with another profile.
func TestStagesOfANodeRecording(t *testing.T) {
	r := nodeOnly()
	formal := []workflow.StageEnergy{{Stage: "formal", Start: "formal_start", End: "formal_end", Energy: "e_formal"}}
	for _, rows := range [][]workflow.StageEnergy{nil, formal} {
		bd := Stages(&record.Run{Meta: r.Meta}, r.Results, rows)
		if len(bd.Stages) != 0 || !strings.Contains(bd.Note, "measured no GPU power") {
			t.Errorf("rows %d: %+v, want no stage and a note that the run measured no GPU power", len(rows), bd)
		}
		var b bytes.Buffer
		if err := RenderStages(&b, []StageBreakdown{bd}, FormatTable); err != nil {
			t.Fatal(err)
		}
		if out := b.String(); strings.Contains(out, "┌") || strings.Contains(out, "--profile") {
			t.Errorf("rows %d: rendered %q, want the note only", len(rows), out)
		}
	}
}
