package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/workflow"
)

// MonitorConfig is the `with:` of a monitor step: start sampling GPU power
// (spec step 2, lifecycle monitoring). Sampling goes on until the archive
// step.
type MonitorConfig struct {
	Interval workflow.Duration `yaml:"interval"`
}

// Validate checks the interval.
func (c *MonitorConfig) Validate() error {
	if c.Interval.D() < 10*time.Millisecond {
		return fmt.Errorf("interval must be at least 10ms, got %s", c.Interval)
	}
	return nil
}

var monitorKind = workflow.NewStepKind("monitor",
	"start the power sampler (one goroutine per source) at the given interval; it runs until the archive step",
	func() *MonitorConfig { return &MonitorConfig{Interval: workflow.Duration(time.Second)} },
	runMonitor)

func runMonitor(ctx context.Context, rc *workflow.RunContext, d *Deps, c *MonitorConfig) error {
	if d.Source == nil {
		return nil
	}
	devs, err := d.Source.Devices(ctx)
	if err != nil {
		return fmt.Errorf("telemetry %s: %w", d.Source.Name(), err)
	}
	if d.LabelDevices != nil {
		d.LabelDevices(devs)
	}
	if err := rc.Out.UpdateMeta(func(m *record.Meta) {
		m.Hardware.Devices = devs
		if m.Hardware.Chip == "" {
			// asiai's hw_chip: the first GPU (a RAPL package or a node
			// read beside it is not the chip measured).
			for _, dev := range devs {
				if dev.DomainOrGPU() == record.DomainGPU {
					m.Hardware.Chip = dev.Name
					break
				}
			}
		}
		m.Telemetry.IntervalS = c.Interval.Seconds()
	}); err != nil {
		return err
	}
	if err := devicesHeld(rc); err != nil {
		return err
	}
	var lastFlush time.Time
	sink := func(s []record.PowerSample) error {
		d.run.mu.Lock()
		d.run.samples = append(d.run.samples, s...)
		d.run.mu.Unlock()
		if err := rc.Out.AppendPower(s...); err != nil {
			return archiveErr(rc, err)
		}
		// Raw data reaches the disk at least once a second, so a crash
		// loses no more than that.
		if time.Since(lastFlush) >= time.Second {
			lastFlush = time.Now()
			return archiveErr(rc, rc.Out.Flush())
		}
		return nil
	}
	smp := telemetry.NewSampler(d.Source, c.Interval.D(), telemetry.Clock(rc.Clock.Now), sink,
		func(msg string) { rc.Log.Warn().Str("component", "telemetry").Msg(msg) })
	smp.SetDevices(devs) // power limits bound plausible readings
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// The sampler is published under the lock: StopSampling (the archive
	// step, or the run's cleanup from another goroutine) reads it there.
	if err := d.setSampler(smp, cancel); err != nil {
		cancel()
		return err
	}
	d.watchTelemetry(sctx, smp)
	smp.Start(sctx) // a no-op when StopSampling came in between
	return smp.SampleNow(ctx)
}
