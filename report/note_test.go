package report

import (
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/doc"
)

// A replayed run is labelled replayed: its power is real, recorded
// elsewhere, not joulebench's simulator (run.json's simulated is true for
// a replay, which used to print the simulator's note).
func TestNoteOf(t *testing.T) {
	for _, c := range []struct {
		meta record.Meta
		want string
	}{
		{record.Meta{Simulated: true, Telemetry: record.TelemetryInfo{Source: "replay", Simulated: true}, Engine: record.EngineInfo{Kind: "vllm"}}, ReplayedNote},
		{record.Meta{Simulated: true, Telemetry: record.TelemetryInfo{Source: "replay", Simulated: true}, Engine: record.EngineInfo{Kind: "sim"}}, ReplayedNote + " The engine is joulebench's simulator."},
		{record.Meta{Simulated: true, Telemetry: record.TelemetryInfo{Source: "sim", Simulated: true}}, SimulatedNote},
		{record.Meta{Telemetry: record.TelemetryInfo{Source: "nvml"}}, ""},
		// The simulator's hardware model is named where the archive says it.
		{record.Meta{Simulated: true, Telemetry: record.TelemetryInfo{Source: "sim", Simulated: true},
			Engine: record.EngineInfo{Kind: "sim", Extra: map[string]any{"sim_hardware": "h100-sxm/llama-3.1-8b"}}},
			SimulatedNote + " Hardware model: h100-sxm/llama-3.1-8b (joulebench devices --sim lists its constants and sources)."},
		{record.Meta{Simulated: true, Telemetry: record.TelemetryInfo{Source: "sim", Simulated: true},
			Engine: record.EngineInfo{Kind: "sim", Extra: map[string]any{"sim_hardware": "toy"}}},
			SimulatedNote + " Hardware model: toy (fixed step times, no hardware's figures)."},
		// A real engine's extra never names a simulated model.
		{record.Meta{Engine: record.EngineInfo{Kind: "vllm", Extra: map[string]any{"sim_hardware": "toy"}}}, ""},
	} {
		if got := NoteOf(c.meta); got != c.want {
			t.Errorf("%s/%s: %q, want %q", c.meta.Telemetry.Source, c.meta.Engine.Kind, got, c.want)
		}
	}
	var b strings.Builder
	d := &doc.Document{}
	d.Add(header(Run{Meta: record.Meta{RunID: "r", Simulated: true, Telemetry: record.TelemetryInfo{Source: "replay"}}})...)
	if err := doc.Render(&b, d, FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "REPLAYED POWER") || strings.Contains(b.String(), "SIMULATED") {
		t.Errorf("header:\n%s", b.String())
	}
}

// A real-engine run on a built-in sample set says in every rendering that
// it is a smoke set, not the method's datasets (--dataset sharegpt); a
// simulated run, or one on another request set, does not.
func TestWorkloadNote(t *testing.T) {
	real := record.Meta{RunID: "r", Status: "complete", Engine: record.EngineInfo{Kind: "vllm", Model: "m"},
		RequestSet: record.RequestSet{Source: "builtin:chat", Count: 5}}
	res := &record.Results{Order: []string{"j_per_token"}, Values: map[string]record.Result{"j_per_token": {Kind: "metric", Value: 0.5, Unit: "J/token"}}}
	for _, c := range []struct {
		name string
		edit func(*record.Meta)
		want bool
	}{
		{"real engine, built-in set", func(*record.Meta) {}, true},
		{"real engine, sharegpt", func(m *record.Meta) { m.RequestSet.Source = "hf:anon8231489123/ShareGPT_Vicuna_unfiltered/x.json" }, false},
		{"real engine, a file", func(m *record.Meta) { m.RequestSet.Source = "prompts.jsonl" }, false},
		{"simulated", func(m *record.Meta) { m.Simulated = true }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := real
			c.edit(&m)
			run := Run{Meta: m, Results: res}
			outs := map[string]string{}
			for _, f := range []string{FormatTable, FormatMarkdown, FormatJSON, FormatCSV} {
				var b strings.Builder
				if err := Results(&b, run, f, false); err != nil {
					t.Fatal(err)
				}
				outs[f] = b.String()
			}
			var b strings.Builder
			if err := Summary(&b, run, SummarySpec{Metrics: []string{"j_per_token"}}); err != nil {
				t.Fatal(err)
			}
			outs["summary"] = b.String()
			for f, out := range outs {
				// JSON escapes the quotes, CSV doubles them.
				out = strings.ReplaceAll(strings.ReplaceAll(out, `\"`, `"`), `""`, `"`)
				has := strings.Contains(out, "SMOKE WORKLOAD") && strings.Contains(out, `sample set "chat"`) &&
					strings.Contains(strings.Join(strings.Fields(out), " "), "--dataset sharegpt is the method's")
				if has != c.want {
					t.Errorf("%s: says smoke set = %v, want %v:\n%s", f, has, c.want, out)
				}
			}
		})
	}
}
