package steps

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/telemetry/rapl"
	"github.com/joulebench/joulebench/workflow"
)

func dur(d time.Duration) workflow.Duration { return workflow.Duration(d) }

func TestMonitor(t *testing.T) {
	rc := newRC(t)
	src := &testSource{mem: 1 << 30}
	d := &Deps{Source: src}
	if err := runMonitor(context.Background(), rc, d, &MonitorConfig{Interval: dur(10 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	defer d.StopSampling()
	m := rc.Out.Meta()
	if len(m.Hardware.Devices) != 1 || m.Hardware.Chip != "Test GPU" || m.Telemetry.IntervalS != 0.01 {
		t.Errorf("hardware %+v, interval %v", m.Hardware, m.Telemetry.IntervalS)
	}
	// The first sample is taken before the step returns.
	if src.readCount() < 1 || d.sampler() == nil || d.sampler().Interval() != 10*time.Millisecond {
		t.Errorf("reads %d, sampler %v", src.readCount(), d.sampler())
	}
	if err := d.StopSampling(); err != nil {
		t.Fatal(err)
	}
	if err := d.StopSampling(); err != nil {
		t.Errorf("StopSampling twice: %v", err)
	}
	if run := reload(t, rc); len(run.Power) < 1 || run.Power[0].Device != "gpu0" {
		t.Errorf("power.csv %+v", run.Power)
	}

	// No power source: nothing to monitor, not an error.
	if err := runMonitor(context.Background(), newRC(t), &Deps{}, &MonitorConfig{Interval: dur(time.Second)}); err != nil {
		t.Errorf("no source: %v", err)
	}
}

// monitored starts sampling src every 10ms and records a baseline stage
// of 50ms.
func monitored(t *testing.T, d *Deps) *workflow.RunContext {
	t.Helper()
	rc := newRC(t)
	if err := runMonitor(context.Background(), rc, d, &MonitorConfig{Interval: dur(10 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.StopSampling() })
	if err := runBaseline(context.Background(), rc, d, &BaselineConfig{Duration: dur(50 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	return rc
}

func TestBaseline(t *testing.T) {
	src := &testSource{}
	d := &Deps{Source: src}
	rc := monitored(t, d)
	m := rc.Out.Meta()
	bs, ok := m.StageByName("baseline")
	if !ok || bs.End-bs.Start < 0.05 {
		t.Fatalf("baseline stage %+v, want at least the 50ms duration", m.Stages)
	}
	// A sample at each end: the monitor's first, then two more.
	if n := src.readCount(); n < 3 {
		t.Errorf("%d reads, want at least 3", n)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := runBaseline(ctx, rc, d, &BaselineConfig{Duration: dur(time.Hour)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled baseline: %v", err)
	}
}

// A baseline that would measure nothing is skipped at once, and says why:
// with no power source (a run against --engine-url with --telemetry none
// spent 20 of its 22.6 s there), with a source that has no device, or
// with no sampling started before it.
func TestBaselineSkippedWhenNothingMeasured(t *testing.T) {
	noDevice := &Deps{Source: telemetry.NewNone()}
	noMonitor := &Deps{Source: &testSource{}}
	cases := []struct {
		name    string
		d       *Deps
		monitor bool
		why     string
	}{
		{"no power source", &Deps{External: true}, false, "baseline skipped: no power source"},
		{"no device", noDevice, true, "baseline skipped: power source none has no device"},
		{"no monitor", noMonitor, false, "baseline skipped: power is not sampled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := newRC(t)
			var log bytes.Buffer
			rc.Log = zerolog.New(&log)
			if tc.monitor {
				if err := runMonitor(context.Background(), rc, tc.d, &MonitorConfig{Interval: dur(10 * time.Millisecond)}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = tc.d.StopSampling() })
			}
			// An hour's baseline: the deadline fails a run that waits.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := runBaseline(ctx, rc, tc.d, &BaselineConfig{Duration: dur(time.Hour)}); err != nil {
				t.Fatalf("baseline: %v", err)
			}
			if m := rc.Out.Meta(); len(m.Stages) != 0 {
				t.Errorf("stages %+v recorded, want none", m.Stages)
			}
			if !strings.Contains(log.String(), tc.why) {
				t.Errorf("log %q, want %q", log.String(), tc.why)
			}
		})
	}
}

func TestRelease(t *testing.T) {
	release := func(hold, maxWait time.Duration) *ReleaseConfig {
		return &ReleaseConfig{Tolerance: 0.05, Hold: dur(hold), MaxWait: dur(maxWait), Grace: dur(7 * time.Second), MemToleranceMB: 64, WaitBaseline: true}
	}
	cases := []struct {
		name string
		// hot is the power after the formal stage: 100 W is the baseline.
		hot     float64
		minS    float64 // the release stage lasts at least
		maxS    float64 // and less than
		warning bool
	}{
		// Power stays at baseline: release closes once the engine exited
		// and the hold (60ms) passed, before max_wait (2s).
		{"power back at baseline", 100, 0.06, 2, false},
		// 200 W never comes within 5% of 100 W: the stage runs to max_wait.
		{"power stays high", 200, 0.3, 2, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var hot atomic.Bool
			src := &testSource{mem: 1 << 30, power: func(int) float64 {
				if hot.Load() {
					return c.hot
				}
				return 100
			}}
			eng := newTestEngine("http://x")
			stops := 0
			d := &Deps{Source: src, Engine: eng, StopMetrics: func() error { stops++; return nil }}
			rc := monitored(t, d)
			hot.Store(true)
			now := rc.Clock.Now()
			rc.StageStart("formal", now)
			if err := rc.StageEnd("formal", now); err != nil {
				t.Fatal(err)
			}
			maxWait := 2 * time.Second
			if c.warning {
				maxWait = 300 * time.Millisecond
			}
			if err := runRelease(context.Background(), rc, d, release(60*time.Millisecond, maxWait)); err != nil {
				t.Fatal(err)
			}
			m := rc.Out.Meta()
			rs, ok := m.StageByName("release")
			if !ok || rs.Start != now {
				t.Fatalf("release stage %+v, want it to start at the formal end %v", m.Stages, now)
			}
			if got := rs.End - rs.Start; got < c.minS || got >= c.maxS {
				t.Errorf("release lasted %.3fs, want [%v, %v)", got, c.minS, c.maxS)
			}
			if eng.stops != 1 || eng.stopGrace != 7*time.Second || stops != 1 || !eventNames(m)["engine_exited"] {
				t.Errorf("stops %d grace %v metrics stops %d events %v", eng.stops, eng.stopGrace, stops, m.Events)
			}
		})
	}
}

func TestReleaseWithoutWaiting(t *testing.T) {
	t.Run("wait_baseline false", func(t *testing.T) {
		rc := newRC(t)
		eng := newTestEngine("http://x")
		d := &Deps{Engine: eng}
		cfg := &ReleaseConfig{Tolerance: 0.05, Hold: dur(time.Hour), MaxWait: dur(time.Hour), Grace: dur(time.Second)}
		if err := runRelease(context.Background(), rc, d, cfg); err != nil {
			t.Fatal(err)
		}
		m := rc.Out.Meta()
		rs, ok := m.StageByName("release")
		var exitAt float64
		for _, e := range m.Events {
			if e.Name == "engine_exited" {
				exitAt = e.T
			}
		}
		if !ok || exitAt == 0 || rs.End < exitAt || eng.stops != 1 {
			t.Errorf("stage %+v, exited at %v, stops %d", rs, exitAt, eng.stops)
		}
		// A second stop (the run's cleanup) returns the same instant and
		// does not stop the engine again.
		again, err := d.StopEngine(context.Background(), rc, time.Second)
		if err != nil || again != exitAt || eng.stops != 1 {
			t.Errorf("second stop: %v at %v, stops %d", err, again, eng.stops)
		}
	})
	t.Run("external engine: no release stage", func(t *testing.T) {
		rc := newRC(t)
		eng := newTestEngine("http://x")
		if err := runRelease(context.Background(), rc, &Deps{Engine: eng, External: true}, &ReleaseConfig{}); err != nil {
			t.Fatal(err)
		}
		if len(rc.Out.Meta().Stages) != 0 || eng.stops != 0 {
			t.Errorf("stages %v, stops %d", rc.Out.Meta().Stages, eng.stops)
		}
	})
	t.Run("waiting needs a baseline", func(t *testing.T) {
		d := &Deps{Engine: newTestEngine("http://x"), Source: &testSource{}}
		rc := newRC(t)
		if err := runMonitor(context.Background(), rc, d, &MonitorConfig{Interval: dur(10 * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
		defer d.StopSampling()
		err := runRelease(context.Background(), rc, d, &ReleaseConfig{Tolerance: 0.05, Hold: dur(time.Second), MaxWait: dur(time.Second), WaitBaseline: true})
		if err == nil || !strings.Contains(err.Error(), "needs a baseline stage") {
			t.Errorf("err = %v", err)
		}
	})
}

// With RAPL read beside the GPU and listed first, hw_chip is still the
// GPU's name, and both sources' rows reach power.csv.
func TestMonitorSeveralSources(t *testing.T) {
	rc := newRC(t)
	root := t.TempDir()
	dir := filepath.Join(root, "intel-rapl:0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, v := range map[string]string{"name": "package-0", "energy_uj": "10", "max_energy_range_uj": "262143328850"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cpu, err := rapl.Open(rapl.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	d := &Deps{Source: telemetry.NewMulti(nil, cpu, &testSource{mem: 1 << 30})}
	if err := runMonitor(context.Background(), rc, d, &MonitorConfig{Interval: dur(10 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	if err := d.StopSampling(); err != nil {
		t.Fatal(err)
	}
	m := rc.Out.Meta()
	if m.Hardware.Chip != "Test GPU" || len(m.Hardware.Devices) != 2 || m.Hardware.Devices[0].Domain != "cpu" {
		t.Errorf("hardware %+v", m.Hardware)
	}
	seen := map[string]bool{}
	for _, p := range reload(t, rc).Power {
		seen[p.Device] = true
	}
	if !seen["cpu0"] || !seen["gpu0"] {
		t.Errorf("power.csv devices %v, want cpu0 and gpu0", seen)
	}
}

// TestStopSamplingDuringMonitor: the run's cleanup (a signal, a failed
// step) may stop sampling from another goroutine while the monitor step
// starts it. The sampler is published and read under one lock (go test
// -race reported the unguarded write in runMonitor against the read in
// StopSampling), and whichever comes first, nothing samples once both
// returned: a stop before the monitor step makes it start nothing.
func TestStopSamplingDuringMonitor(t *testing.T) {
	for i := range 20 {
		rc := newRC(t)
		src := &testSource{mem: 1 << 30}
		d := &Deps{Source: src}
		stopped := make(chan error, 1)
		go func() { stopped <- d.StopSampling() }()
		err := runMonitor(context.Background(), rc, d, &MonitorConfig{Interval: dur(10 * time.Millisecond)})
		if err != nil && !errors.Is(err, errSamplingStopped) {
			t.Fatalf("try %d: monitor: %v", i, err)
		}
		if err := <-stopped; err != nil {
			t.Fatalf("try %d: StopSampling: %v", i, err)
		}
		if d.sampling() {
			t.Fatalf("try %d: sampling after StopSampling", i)
		}
		// Four intervals with no read: no sampler runs on.
		reads := src.readCount()
		time.Sleep(40 * time.Millisecond)
		if n := src.readCount(); n != reads {
			t.Fatalf("try %d: %d reads after StopSampling", i, n-reads)
		}
	}
}
