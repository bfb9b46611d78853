package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
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
