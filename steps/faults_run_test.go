package steps

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/workflow"
)

// blockingSource's reads after the first block until their context is
// done, then return a reading all the same (a driver that answers late).
type blockingSource struct {
	mu      sync.Mutex
	reads   int
	blocked chan struct{} // closed when a read is blocked
	once    sync.Once
}

func (s *blockingSource) Name() string { return "blocking" }
func (s *blockingSource) Devices(context.Context) ([]record.Device, error) {
	return []record.Device{{ID: "gpu0"}}, nil
}
func (s *blockingSource) Read(ctx context.Context) ([]telemetry.Reading, error) {
	s.mu.Lock()
	s.reads++
	n := s.reads
	s.mu.Unlock()
	if n > 1 {
		s.once.Do(func() { close(s.blocked) })
		<-ctx.Done()
	}
	return []telemetry.Reading{{Device: "gpu0", PowerW: 50, MemUsedBytes: -1}}, nil
}
func (s *blockingSource) Close() error { return nil }

// Stopping the sampler while a tick's Read is blocked must not deadlock:
// the tick's sink takes Deps' mutex, so StopSampling must not hold it
// while it waits for the tick.
func TestStopSamplingWhileReadBlocks(t *testing.T) {
	src := &blockingSource{blocked: make(chan struct{})}
	d := &Deps{Source: src}
	rc := newRC(t)
	if err := runMonitor(context.Background(), rc, d, &MonitorConfig{Interval: dur(10 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	<-src.blocked // the ticker's read is in progress
	stopped := make(chan error, 1)
	go func() { stopped <- d.StopSampling() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("StopSampling: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("StopSampling deadlocked with a blocked Read")
	}
	// The late reading reached the run data and the archive.
	if run := reload(t, rc); len(run.Power) != 2 {
		t.Errorf("power rows %d, want 2 (the first sample and the late one)", len(run.Power))
	}
}

// A power source that dies ends the step that is waiting at once, with
// the reason, instead of waiting on frozen samples.
func TestDeadSourceEndsWaits(t *testing.T) {
	deadline := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	check := func(t *testing.T, err error) {
		t.Helper()
		if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "power source failed") || !errors.Is(err, errBoom) {
			t.Errorf("err = %v, want the power source's failure", err)
		}
	}
	t.Run("release", func(t *testing.T) {
		src := &testSource{}
		eng := newTestEngine("http://x")
		d := &Deps{Source: src, Engine: eng}
		rc := monitored(t, d)
		now := rc.Clock.Now()
		rc.StageStart("formal", now)
		if err := rc.StageEnd("formal", now); err != nil {
			t.Fatal(err)
		}
		src.mu.Lock()
		src.fail = errBoom
		src.mu.Unlock()
		err := runRelease(deadline(t), rc, d, &ReleaseConfig{Tolerance: 0.05, Hold: dur(time.Hour), MaxWait: dur(2 * time.Hour), WaitBaseline: true})
		check(t, err)
	})
	t.Run("baseline", func(t *testing.T) {
		src := &testSource{}
		d := &Deps{Source: src}
		rc := newRC(t)
		if err := runMonitor(context.Background(), rc, d, &MonitorConfig{Interval: dur(10 * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.StopSampling() })
		src.mu.Lock()
		src.fail = errBoom
		src.mu.Unlock()
		err := runBaseline(deadline(t), rc, d, &BaselineConfig{Duration: dur(time.Hour)})
		if err != nil && strings.Contains(err.Error(), "read: boom") && !strings.Contains(err.Error(), "power source failed") {
			// The boundary sample saw the failure first: the same reason.
			return
		}
		check(t, err)
	})
	t.Run("requests", func(t *testing.T) {
		src := &testSource{}
		d := &Deps{Source: src, Engine: newTestEngine("http://x")}
		rc := newRC(t)
		if err := runMonitor(context.Background(), rc, d, &MonitorConfig{Interval: dur(10 * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.StopSampling() })
		// The source dies during the first request, which ends once the
		// death is seen.
		d.Client = &testClient{clock: rc.Clock.Now, tokens: 3, onDo: func(openai.Request) bool {
			src.mu.Lock()
			src.fail = errBoom
			src.mu.Unlock()
			<-d.telemetryDead()
			return true
		}}
		cfg := formalConfig()
		cfg.Count = 50
		err := runRequests(deadline(t), rc, d, cfg)
		check(t, err)
		// The formal stage was recorded when it began (a kill -9 now
		// would keep it), and stays open.
		m := rc.Out.Meta()
		if fo, ok := m.StageByName("formal"); !ok || !fo.Open {
			t.Errorf("formal stage %+v, want it recorded and open", m.Stages)
		}
	})
	if err := (&Deps{}).TelemetryErr(); err != nil {
		t.Errorf("no source: %v", err)
	}
}

// A run whose formal requests all failed ran every step but is not
// complete: the built-in profiles' check formal_requests_succeeded
// (severity fail) marks it failed, with the reason.
func TestFinishAllFormalFailed(t *testing.T) {
	src, err := profiles.Read("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	l, err := workflow.Load(src, "benchmark-1.5", workflow.Options{Registry: Registry()})
	if err != nil {
		t.Fatal(err)
	}
	rc := newRC(t)
	rc.Loaded = l
	now := rc.Clock.Now()
	for _, id := range []string{"a", "b", "c"} {
		if err := rc.Out.AppendRequest(record.Request{ID: id, Phase: "formal", SentAt: now, Error: "connection refused"}); err != nil {
			t.Fatal(err)
		}
	}
	rc.StageStart("formal", now)
	if err := Finish(context.Background(), rc, record.StatusComplete, ""); err != nil {
		t.Fatal(err)
	}
	run := reload(t, rc)
	if run.Meta.Status != record.StatusFailed || !strings.Contains(run.Meta.Reason, "check formal_requests_succeeded failed") ||
		!strings.Contains(run.Meta.Reason, "3 of 3 formal requests failed") {
		t.Errorf("status %q reason %q, want failed by formal_requests_succeeded", run.Meta.Status, run.Meta.Reason)
	}
	// The reason says what the requests failed with, not only how many.
	if !strings.Contains(run.Meta.Reason, `3× "connection refused"`) {
		t.Errorf("reason %q does not name the error with its count", run.Meta.Reason)
	}
}

// After an interruption the open stages end at the newest sample, so that
// the power data covers each stage to its end.
func TestEndStagesAtLastSample(t *testing.T) {
	src := &testSource{}
	d := &Deps{Source: src}
	rc := newRC(t)
	// No tick within the test: the samples are the monitor's first and
	// the one EndStages takes.
	if err := runMonitor(context.Background(), rc, d, &MonitorConfig{Interval: dur(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.StopSampling() })
	rc.StageStart("formal", rc.Clock.Now())
	d.EndStages(context.Background(), rc)
	if n := src.readCount(); n != 2 {
		t.Errorf("%d reads, want 2: EndStages takes a last sample", n)
	}
	m := rc.Out.Meta()
	fo, ok := m.StageByName("formal")
	last := d.lastSampleT(0)
	if !ok || fo.Open || fo.End != last {
		t.Errorf("formal %+v, want it ended at the last sample %v", fo, last)
	}
	// Without sampling, open stages end now.
	rc2 := newRC(t)
	rc2.StageStart("formal", rc2.Clock.Now())
	(&Deps{}).EndStages(context.Background(), rc2)
	m2 := rc2.Out.Meta()
	if fo, ok := m2.StageByName("formal"); !ok || fo.Open || fo.End < fo.Start {
		t.Errorf("formal %+v without sampling", fo)
	}
}
