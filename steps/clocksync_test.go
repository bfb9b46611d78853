package steps

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// otherClockSource is a testSource on another node's clock: start offset
// 2.5 s, end offset 2.51 s (or an error measuring it).
type otherClockSource struct {
	testSource
	endErr error
	ends   int
}

var _ telemetry.ClockSyncReporter = (*otherClockSource)(nil)

func (s *otherClockSource) ClockSync(_ context.Context, end bool) ([]record.ClockSync, error) {
	cs := record.ClockSync{Source: "agent http://node1:7070", Host: "node1", StartOffsetS: 2.5, StartRTTS: 0.001, Probes: 8}
	if !end {
		return []record.ClockSync{cs}, nil
	}
	s.ends++
	if s.endErr != nil {
		return []record.ClockSync{cs}, s.endErr
	}
	off, rtt := 2.51, 0.002
	cs.EndOffsetS, cs.EndRTTS = &off, &rtt
	return []record.ClockSync{cs}, nil
}

// The archive step measures the end offsets once sampling stopped and
// writes them to run.json; an end it cannot measure fails the step (the
// run is then not complete), with the entry kept without its end.
func TestArchiveStepRecordsClockSync(t *testing.T) {
	rc := finishRC(t)
	src := &otherClockSource{}
	d := &Deps{Source: src, StopMetrics: func() error { return nil }}
	if err := runArchive(context.Background(), rc, d, &ArchiveConfig{}); err != nil {
		t.Fatal(err)
	}
	cs := rc.Out.Meta().Telemetry.ClockSync
	if src.ends != 1 || len(cs) != 1 || cs[0].EndOffsetS == nil || *cs[0].EndOffsetS != 2.51 || *cs[0].EndRTTS != 0.002 || cs[0].StartOffsetS != 2.5 {
		t.Errorf("clock_sync %+v after %d end measurements", cs, src.ends)
	}

	rc = finishRC(t)
	src = &otherClockSource{endErr: errors.New("agent http://node1:7070/v1/clock unreachable")}
	d = &Deps{Source: src, StopMetrics: func() error { return nil }}
	err := runArchive(context.Background(), rc, d, &ArchiveConfig{})
	if err == nil || !strings.Contains(err.Error(), "clock offset at the end") || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("archive step with an unreachable agent: %v", err)
	}
	m := rc.Out.Meta()
	if len(m.Telemetry.ClockSync) != 1 || m.Telemetry.ClockSync[0].EndOffsetS != nil || m.Status == record.StatusComplete {
		t.Errorf("clock_sync %+v, status %q", m.Telemetry.ClockSync, m.Status)
	}

	// A source on the run clock records nothing.
	rc = finishRC(t)
	if err := (&Deps{Source: &testSource{}}).RecordClockSync(context.Background(), rc); err != nil || rc.Out.Meta().Telemetry.ClockSync != nil {
		t.Errorf("run-clock source: %v, %+v", err, rc.Out.Meta().Telemetry.ClockSync)
	}
}
