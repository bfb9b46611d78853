package steps

import (
	"context"
	"testing"

	"github.com/joulebench/joulebench/telemetry"
)

// reportingSource says the clocks were throttled once it has been asked
// once (the formal stage's start opens a new window), and has one anomaly.
type reportingSource struct {
	testSource
	asked int
}

var (
	_ telemetry.ThrottleReporter = (*reportingSource)(nil)
	_ telemetry.AnomalyReporter  = (*reportingSource)(nil)
)

func (s *reportingSource) Throttled() (bool, string) {
	s.asked++
	return s.asked > 1, "gpu0: thermal (3 readings)"
}

func (s *reportingSource) Anomalies() []telemetry.Anomaly {
	return []telemetry.Anomaly{{T: 12.5, Device: "gpu0", Kind: "counter_reset", Detail: "energy counter went back"}}
}

func TestThrottleAndAnomaliesAreRecorded(t *testing.T) {
	rc := newRC(t)
	src := &reportingSource{}
	d := &Deps{Engine: newTestEngine("http://x"), Source: src, Client: &testClient{clock: rc.Clock.Now, tokens: 1}}
	if err := runRequests(context.Background(), rc, d, formalConfig()); err != nil {
		t.Fatal(err)
	}
	d.RecordAnomalies(rc)
	m := rc.Out.Meta()
	if m.Labels["throttled"] != "gpu0: thermal (3 readings)" || !eventNames(m)["throttled"] {
		t.Errorf("labels %v, events %v", m.Labels, m.Events)
	}
	found := false
	for _, e := range m.Events {
		found = found || e.Name == "counter_reset:gpu0" && e.T == 12.5
	}
	if !found {
		t.Errorf("anomaly not recorded as event counter_reset:gpu0 at 12.5: %v", m.Events)
	}
}

func TestProgressReportsStageAndPower(t *testing.T) {
	src := &testSource{power: func(int) float64 { return 150 }}
	d := &Deps{Source: src}
	monitored(t, d)
	var got []Progress
	d.Progress = func(p Progress) { got = append(got, p) }
	rc := newRC(t)
	if err := runBaseline(context.Background(), rc, d, &BaselineConfig{Duration: dur(1)}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Stage != "baseline" || !got[0].HasPower || got[0].PowerW != 150 {
		t.Errorf("progress %+v, want one baseline snapshot at 150 W", got)
	}
}
