package workflow_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// benchRun builds a run of 8 devices × 3,600 s at 10 Hz (288,000 samples,
// with counters) and 100,000 formal requests, ~256 in flight.
func benchRun(chunks int) *record.Run {
	rng := rand.New(rand.NewPCG(1, 2))
	const devs, hz, dur = 8, 10, 3600.0
	t0 := 1.7e9
	run := &record.Run{Meta: record.Meta{RunID: "bench", Stages: []record.Stage{
		{Name: "baseline", Start: t0, End: t0 + 20},
		{Name: "startup", Start: t0 + 20, End: t0 + 100},
		{Name: "formal", Start: t0 + 100, End: t0 + dur - 200},
		{Name: "release", Start: t0 + dur - 200, End: t0 + dur},
	}, Events: []record.Event{{Name: "engine_exited", T: t0 + dur - 190}}}}
	energy := make([]float64, devs)
	for i := 0; i <= int(dur*hz); i++ {
		t := t0 + float64(i)/hz
		for d := 0; d < devs; d++ {
			p := 60.0
			if t > t0+20 && t < t0+dur-190 {
				p = 400 + 5*rng.Float64()
			}
			energy[d] += p / hz
			run.Power = append(run.Power, record.PowerSample{T: t, Device: fmt.Sprintf("gpu%d", d), PowerW: p, EnergyJ: energy[d], HasEnergy: true, MemUsedBytes: 1 << 30})
		}
	}
	span := dur - 300
	for i := 0; i < 100000; i++ {
		s := t0 + 100 + span*float64(i)/100000
		r := record.Request{ID: fmt.Sprint(i), Phase: "formal", SentAt: s, FirstTokenAt: s + 0.2,
			DoneAt: s + 0.2 + 8 + rng.Float64(), OutputTokens: 256, OK: true}
		for k := 0; k < chunks; k++ { // chunk arrival times, evenly over the generation
			r.TokenTimes = append(r.TokenTimes, r.FirstTokenAt+(r.DoneAt-r.FirstTokenAt)*float64(k)/float64(chunks-1))
		}
		run.Requests = append(run.Requests, r)
	}
	return run
}

// BenchmarkEvaluateBenchmark15 evaluates every benchmark-1.5 derived value,
// metric and check over the run above, without and with 64 recorded chunk
// times per request.
func BenchmarkEvaluateBenchmark15(b *testing.B) {
	src, _ := profiles.Read("benchmark-1.5")
	l, err := workflow.Load(src, "benchmark-1.5", workflow.Options{Registry: steps.Registry()})
	if err != nil {
		b.Fatal(err)
	}
	for _, chunks := range []int{0, 64} {
		b.Run(fmt.Sprintf("chunks=%d", chunks), func(b *testing.B) {
			run := benchRun(chunks)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := workflow.Evaluate(context.Background(), l, run)
				if err != nil || res == nil {
					b.Fatal(err)
				}
			}
		})
	}
}
