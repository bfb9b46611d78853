package steps

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
)

// A tensor parallel a started engine reports (2) over fewer GPUs
// measured (gpu0 alone) fails the step that learns it, whichever comes
// first: verify_engine after the monitor listed the devices, or the
// monitor after verify_engine recorded the parallelism (asiai's order).
// The reason names the parallelism and the device; the value is kept in
// engine.extra, and engine.tensor_parallel left as the devices hold it,
// so that the failed run's archive is still read.
func TestDevicesHeldOnceTheEngineSays(t *testing.T) {
	const want = "engine.tensor_parallel is 2 but hardware.devices has 1 GPU device(s) (gpu0)"
	eng := newTestEngine("http://x")
	eng.id = engines.Identity{Model: "m", TensorParallel: 2}
	for _, order := range []string{"monitor first", "verify_engine first"} {
		t.Run(order, func(t *testing.T) {
			rc, src := newRC(t), &testSource{}
			d := &Deps{Engine: eng, Model: "m", Source: src}
			t.Cleanup(func() { _ = d.StopSampling() })
			runMon := func() error {
				return runMonitor(context.Background(), rc, d, &MonitorConfig{Interval: dur(time.Hour)})
			}
			verify := func() error {
				return runVerifyEngine(context.Background(), rc, d, &VerifyEngineConfig{Check: []string{"model", "parallel"}})
			}
			first, second := runMon, verify
			if order != "monitor first" {
				first, second = verify, runMon
			}
			if err := first(); err != nil {
				t.Fatalf("first step: %v", err)
			}
			err := second()
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("second step: %v, want %q", err, want)
			}
			m := rc.Out.Meta()
			if m.Engine.TensorParallel != 0 || m.Engine.Extra[reportedTensorParallel] != 2 {
				t.Errorf("engine %+v: want tensor_parallel moved to extra.%s", m.Engine, reportedTensorParallel)
			}
			if len(m.Hardware.Devices) != 1 {
				t.Errorf("devices %+v", m.Hardware.Devices)
			}
		})
	}
	// The same engine over two GPUs passes, its parallelism recorded.
	rc := newRC(t)
	if err := rc.Out.UpdateMeta(func(m *record.Meta) {
		m.Hardware.Devices = []record.Device{{ID: "gpu0"}, {ID: "gpu1"}}
	}); err != nil {
		t.Fatal(err)
	}
	if err := runVerifyEngine(context.Background(), rc, &Deps{Engine: eng, Model: "m"}, &VerifyEngineConfig{Check: []string{"parallel"}}); err != nil {
		t.Fatalf("two GPUs: %v", err)
	}
	if tp := rc.Out.Meta().Engine.TensorParallel; tp != 2 {
		t.Errorf("tensor_parallel %d, want 2", tp)
	}
}
