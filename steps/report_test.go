package steps

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/joulebench/joulebench/internal/runprogress"
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
	var got []runprogress.Snapshot
	d.Progress = func(p runprogress.Snapshot) { got = append(got, p) }
	rc := newRC(t)
	if err := runBaseline(context.Background(), rc, d, &BaselineConfig{Duration: dur(1)}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Stage != "baseline" || !got[0].HasPower || got[0].PowerW != 150 {
		t.Errorf("progress %+v, want one baseline snapshot at 150 W", got)
	}
}

// noteSource reports the Prometheus scrape-interval notes: four events
// with one detail.
type noteSource struct{ testSource }

func (s *noteSource) Anomalies() []telemetry.Anomaly {
	d := "prometheus scrape interval seen: median 1.000 s, largest gap 1.000 s"
	return []telemetry.Anomaly{
		{T: 1, Device: "prometheus", Kind: "scrape_interval_from", Detail: d, Note: true},
		{T: 2, Device: "prometheus", Kind: "scrape_interval_to", Detail: d, Note: true},
		{T: 3, Device: "prometheus", Kind: "scrape_gap_max_from", Detail: d, Note: true},
		{T: 4, Device: "prometheus", Kind: "scrape_gap_max_to", Detail: d, Note: true},
	}
}

// A healthy scrape interval is four events and one info line, not four
// warnings.
func TestAnomalyNotesLoggedOnce(t *testing.T) {
	rc := newRC(t)
	var buf bytes.Buffer
	rc.Log = zerolog.New(&buf)
	d := &Deps{Source: &noteSource{}}
	d.RecordAnomalies(rc)
	if got := strings.Count(buf.String(), `"level":"warn"`); got != 0 {
		t.Errorf("%d warnings for a healthy scrape interval: %s", got, buf.String())
	}
	if got := strings.Count(buf.String(), `"level":"info"`); got != 1 {
		t.Errorf("%d info lines, want 1: %s", got, buf.String())
	}
	if ev := eventNames(rc.Out.Meta()); !ev["scrape_interval_from:prometheus"] || !ev["scrape_gap_max_to:prometheus"] {
		t.Errorf("events %v, want the four scrape events", rc.Out.Meta().Events)
	}
}

// A reading of −50 W is refused by the sampler (never written) and
// recorded as event power_invalid:gpu0 with a warning.
func TestInvalidReadingRecorded(t *testing.T) {
	src := &testSource{power: func(n int) float64 {
		if n == 2 {
			return -50
		}
		return 100
	}}
	d := &Deps{Source: src}
	rc := monitored(t, d)
	if err := d.StopSampling(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rc.Log = zerolog.New(&buf)
	d.RecordAnomalies(rc)
	if !eventNames(rc.Out.Meta())["power_invalid:gpu0"] || !strings.Contains(buf.String(), "power -50 W is negative") {
		t.Errorf("events %v, log %s; want power_invalid:gpu0 and the reason", rc.Out.Meta().Events, buf.String())
	}
	for _, s := range d.run.samples {
		if s.PowerW < 0 {
			t.Fatalf("a negative reading reached the archive: %+v", s)
		}
	}
}
