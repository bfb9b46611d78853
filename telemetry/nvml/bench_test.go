//go:build cgo && (linux || darwin)

package nvml

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// One sample (Read of 8 simulated H100s + rows to the sink) per op.
// %core@10Hz = CPU time per sample × 10 samples/s over one core; the
// target is under 1 %.
func BenchmarkSample8Devices(b *testing.B) {
	srv := newDGXH100()
	wire(srv, &manualClock{t: 1}, plain)
	src, err := New(srv, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	rows := 0
	smp := telemetry.NewSampler(src, time.Hour, nil, func(s []record.PowerSample) error {
		rows += len(s)
		return nil
	}, nil)
	ctx := context.Background()
	cpu0 := cpuTime(b)
	for b.Loop() {
		if err := smp.SampleNow(ctx); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cpuTime(b) - cpu0
	perSample := float64(cpu.Nanoseconds()) / float64(b.N)
	b.ReportMetric(perSample, "cpu-ns/sample")
	b.ReportMetric(perSample*10/1e9*100, "%core@10Hz")
	if rows != 8*b.N {
		b.Fatalf("%d rows for %d samples", rows, b.N)
	}
}

// The sampler's own ticker at 10 Hz over 8 simulated H100s; each op is one
// second of sampling. %core is the process CPU time over the wall time.
func BenchmarkTicker10Hz8Devices(b *testing.B) {
	srv := newDGXH100()
	wire(srv, &manualClock{t: 1}, plain)
	src, err := New(srv, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	rows := 0
	smp := telemetry.NewSampler(src, 100*time.Millisecond, nil, func(s []record.PowerSample) error {
		rows += len(s)
		return nil
	}, nil)
	cpu0, wall0 := cpuTime(b), time.Now()
	smp.Start(context.Background())
	for b.Loop() {
		time.Sleep(time.Second)
	}
	if err := smp.Stop(); err != nil {
		b.Fatal(err)
	}
	cpu, wall := cpuTime(b)-cpu0, time.Since(wall0)
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "%core")
	b.ReportMetric(float64(rows)/8/wall.Seconds(), "samples/s")
}
