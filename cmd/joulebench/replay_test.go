package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/internal/progress"
	"github.com/joulebench/joulebench/steps"
)

// --replay-offset starts the replay 10 s into run-small's recording (gpu0,
// 100 W, counter 100 J per second: the first reading is the t=10 row,
// counter 1000 J); at the end the log says how much of the 30 s recording
// the run used, and the telemetry note says replayed.
func TestReplayOffsetAndUsageWarning(t *testing.T) {
	var logBuf bytes.Buffer
	a := telemetryApp(t, &logBuf, "--telemetry", "replay", "--replay", filepath.Join(smallRun, archive.PowerFile), "--replay-offset", "10")
	src, info, err := a.setupTelemetry(realSetup(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := src.Read(context.Background())
	if err != nil || len(rs) != 1 || rs[0].EnergyJ != 1000 {
		t.Fatalf("first read = %+v, %v; want the t=10 row (1000 J)", rs, err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logBuf.String(), "of the 30.0 s recording (10.0 s to 10.0 s") || !strings.Contains(logBuf.String(), "the rest was not replayed") {
		t.Errorf("log does not say how much was used:\n%s", logBuf.String())
	}
	if !strings.Contains(info.Note, "from 10 s into it") {
		t.Errorf("note %q", info.Note)
	}
	// An offset past the recording is refused, naming its length.
	a = telemetryApp(t, &logBuf, "--telemetry", "replay", "--replay", smallRun, "--replay-offset", "99")
	if _, _, err := a.setupTelemetry(realSetup(), nil); err == nil || !strings.Contains(err.Error(), "outside the recording (0 to 30 s)") {
		t.Errorf("offset 99: %v", err)
	}
	a = telemetryApp(t, &logBuf, "--telemetry", "sim", "--replay-offset", "5")
	if _, err := a.telemetryOptions(); err == nil || !strings.Contains(err.Error(), "--replay-offset is for --replay") {
		t.Errorf("offset without --replay: %v", err)
	}
}

// Replayed power is real power from another time, not simulated: the
// progress says "(replayed)".
func TestProgressLabelsReplayedPower(t *testing.T) {
	p := steps.Progress{Stage: "formal", PowerW: 300, HasPower: true}
	for _, c := range []struct {
		tel     archive.TelemetryInfo
		simEng  bool
		want    string
		notWant string
	}{
		{archive.TelemetryInfo{Source: "replay", Simulated: true}, false, "300 W (replayed)", "simulated"},
		{archive.TelemetryInfo{Source: "replay", Simulated: true}, true, "300 W (replayed)", "simulated"},
		{archive.TelemetryInfo{Source: "sim", Simulated: true}, true, "300 W (simulated)", "replayed"},
		{archive.TelemetryInfo{Source: "nvml"}, false, "300 W", "("},
	} {
		got := progress.Text(p, 0, powerLabel(c.tel, c.simEng))
		if !strings.Contains(got, c.want) || strings.Contains(got, c.notWant) {
			t.Errorf("%s: %q, want %q", c.tel.Source, got, c.want)
		}
	}
}
