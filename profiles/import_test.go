package profiles_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// nodeImport is an archive as `joulebench import ptdaemon` writes it for a
// whole node at the wall: engine "imported", one stage formal [100, 110],
// one device node0 of domain node with no power limit, sampled every
// second from 98 to 112 s at 6200 W (an 8-GPU server under load), and,
// when tokens > 0, one synthetic request over the window carrying them.
// Formal node energy: 6200 W × 10 s = 62,000 J.
func nodeImport(tokens int) *record.Run {
	run := &record.Run{Meta: record.Meta{
		FormatVersion: 1, RunID: "imported", Status: record.StatusComplete,
		Stages:    []record.Stage{{Name: "formal", Start: 100, End: 110}},
		Hardware:  record.Hardware{Devices: []record.Device{{ID: "node0", Method: "power", Domain: record.DomainNode}}},
		Engine:    record.EngineInfo{Kind: "imported"},
		Telemetry: record.TelemetryInfo{Source: "import:ptdaemon", IntervalS: 1},
	}}
	for t := 98; t <= 112; t++ {
		run.Power = append(run.Power, record.PowerSample{T: float64(t), Device: "node0", PowerW: 6200, MemUsedBytes: -1})
	}
	if tokens > 0 {
		run.Requests = []record.Request{{ID: "imported-window", Phase: "formal", SentAt: 100, FirstTokenAt: 100, DoneAt: 110,
			OutputTokens: tokens, TokensSource: "user", OK: true, Synthetic: true}}
	}
	return run
}

// A node trace of 6.2 kW is plausible: the node is bounded by
// power_sanity_max_node_w, not by one GPU's power_sanity_max_w (2000 W),
// so its figures have values. Without output tokens, J/token is not
// applicable with its reason, and nothing fails: no +Inf, no failed
// check (an import without requests has energy and power only).
func TestNodeImportFigures(t *testing.T) {
	for _, prof := range []string{"benchmark-1.0", "benchmark-1.5"} {
		t.Run(prof, func(t *testing.T) {
			// 787,352 tokens: 62,000 J / 787,352 = 0.078745… J/token.
			res := evalProfile(t, prof, nodeImport(787352), nil)
			for name, want := range map[string]float64{
				"avg_node_power_w": 6200, "formal_energy_node_j": 62000, "node_j_per_token": 62000.0 / 787352,
			} {
				got, ok := res.Values[name].Value.(float64)
				if !ok || math.Abs(got-want) > 1e-9*want {
					t.Errorf("%s = %+v, want %g", name, res.Values[name], want)
				}
			}
			if v := res.Values["power_valid_node"]; v.Passed == nil || !*v.Passed {
				t.Errorf("power_valid_node = %+v, want passed (6200 W is below the node bound)", v)
			}
			if v := res.Values["tpot_ms"]; v.Value != nil || !strings.Contains(v.Note, "synthetic") {
				t.Errorf("tpot_ms = %+v, want not applicable naming the synthetic request", v)
			}

			// A node above the node bound is still implausible.
			res = evalProfile(t, prof, nodeImport(787352), map[string]string{"power_sanity_max_node_w": "5000"})
			if v := res.Values["power_valid_node"]; v.Passed == nil || *v.Passed || !strings.Contains(v.Message, "above the plausible 5000 W") {
				t.Errorf("power_valid_node with a 5000 W bound = %+v, want failed", v)
			}

			res, err := evalProfileErr(t, prof, nodeImport(0), nil)
			if err != nil {
				t.Errorf("no tokens: evaluation failed: %v", err)
			}
			for _, name := range []string{"node_j_per_token", "formal_j_per_token"} {
				if v := res.Values[name]; v.Value != nil || v.Note == "" {
					t.Errorf("no tokens: %s = %+v, want not applicable with a reason", name, v)
				}
			}
			if v := res.Values["node_j_per_token"]; !strings.Contains(v.Note, "no output tokens") {
				t.Errorf("no tokens: node_j_per_token note %q, want \"no output tokens\"", v.Note)
			}
			if v := res.Values["output_throughput_tok_s"]; v.Value != nil {
				t.Errorf("no tokens: output_throughput_tok_s = %+v, want not applicable", v)
			}
			for _, n := range res.Order {
				if v := res.Values[n]; v.Kind == "check" && v.Passed != nil && !*v.Passed {
					t.Errorf("no tokens: check %s failed: %s", n, v.Message)
				}
			}
			if got, ok := res.Values["avg_node_power_w"].Value.(float64); !ok || got != 6200 {
				t.Errorf("no tokens: avg_node_power_w = %+v, want 6200", res.Values["avg_node_power_w"])
			}
		})
	}
}

// evalProfileErr is evalProfile that also returns the formulas that
// failed on the run.
func evalProfileErr(t *testing.T, prof string, run *record.Run, sets map[string]string) (*record.Results, error) {
	t.Helper()
	src, err := profiles.Read(prof)
	if err != nil {
		t.Fatal(err)
	}
	l, err := workflow.Load(src, prof+".yaml", workflow.Options{Registry: steps.Registry(), Overrides: sets})
	if err != nil {
		t.Fatal(err)
	}
	res, err := workflow.Evaluate(context.Background(), l, run)
	if res == nil {
		t.Fatal(err)
	}
	return res, err
}
