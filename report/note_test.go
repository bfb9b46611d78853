package report

import (
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
)

// A replayed run is labelled replayed: its power is real, recorded
// elsewhere, not joulebench's simulator (run.json's simulated is true for
// a replay, which used to print the simulator's note).
func TestNoteOf(t *testing.T) {
	for _, c := range []struct {
		meta archive.Meta
		want string
	}{
		{archive.Meta{Simulated: true, Telemetry: archive.TelemetryInfo{Source: "replay", Simulated: true}, Engine: archive.EngineInfo{Kind: "vllm"}}, ReplayedNote},
		{archive.Meta{Simulated: true, Telemetry: archive.TelemetryInfo{Source: "replay", Simulated: true}, Engine: archive.EngineInfo{Kind: "sim"}}, ReplayedNote + " The engine is joulebench's simulator."},
		{archive.Meta{Simulated: true, Telemetry: archive.TelemetryInfo{Source: "sim", Simulated: true}}, SimulatedNote},
		{archive.Meta{Telemetry: archive.TelemetryInfo{Source: "nvml"}}, ""},
	} {
		if got := NoteOf(c.meta); got != c.want {
			t.Errorf("%s/%s: %q, want %q", c.meta.Telemetry.Source, c.meta.Engine.Kind, got, c.want)
		}
	}
	var b strings.Builder
	header(&b, Run{Meta: archive.Meta{RunID: "r", Simulated: true, Telemetry: archive.TelemetryInfo{Source: "replay"}}}, "table")
	if !strings.Contains(b.String(), "REPLAYED POWER") || strings.Contains(b.String(), "SIMULATED") {
		t.Errorf("header:\n%s", b.String())
	}
}
