package measure

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// releaseData: gpu0 sampled at t = 0, 1, …, 20; gpu1 at t = 0.5, 1.5, …, 19.5.
//
//	gpu0 power: 300 W up to t=8, 110 W at t=9, 102 W from t=10
//	gpu1 power: 200 W up to t=8.5, 51 W at 9.5 and 10.5, 60 W at 11.5, 50 W from 12.5
//	gpu0 memory: 40e9 B up to t=gpu0MemDrop-1, then 1.05e9 B
//	gpu1 memory: 40e9 B up to t=9.5, then 1e9 B; unknown (-1) before gpu1MemFrom
func releaseData(gpu0MemDrop, gpu1MemFrom float64) []record.PowerSample {
	var s []record.PowerSample
	for i := 0; i <= 20; i++ {
		t := float64(i)
		w := 102.0
		switch {
		case t <= 8:
			w = 300
		case t == 9:
			w = 110
		}
		mem := int64(1.05e9)
		if t < gpu0MemDrop {
			mem = 40e9
		}
		s = append(s, record.PowerSample{T: t, Device: "gpu0", PowerW: w, MemUsedBytes: mem})
		if i == 20 {
			break
		}
		t += 0.5
		switch {
		case t <= 8.5:
			w = 200
		case t == 9.5 || t == 10.5:
			w = 51
		case t == 11.5:
			w = 60
		default:
			w = 50
		}
		mem = 1e9
		if t <= 9.5 {
			mem = 40e9
		}
		if t < gpu1MemFrom {
			mem = -1
		}
		s = append(s, record.PowerSample{T: t, Device: "gpu1", PowerW: w, MemUsedBytes: mem})
	}
	return s
}

func releaseParams() ReleaseParams {
	return ReleaseParams{
		From:              5,
		Baseline:          map[string]float64{"gpu0": 100, "gpu1": 50},
		MemBaseline:       map[string]int64{"gpu0": 1e9, "gpu1": 1e9},
		MemToleranceBytes: 1e8,
		Tolerance:         0.05,
		HoldS:             3,
		ExitedAt:          10,
	}
}

func TestRelease(t *testing.T) {
	// Bands: gpu0 100 W ±5 % = [95, 105]; gpu1 50 W ±5 % = [47.5, 52.5].
	// Out of band from t=5: gpu0 at 5, 6, 7, 8 (300 W) and 9 (110 W); gpu1 at
	// 5.5, 6.5, 7.5, 8.5 (200 W) and 11.5 (60 W); 51 W is in band.
	// Candidates t ≥ 5 need no out-of-band sample in [t, t+3]: every sample
	// time up to 11.5 has 11.5 (or an earlier one) within 3 s; the next
	// sample time, 12 (gpu0), has none in [12, 15], and the data runs to
	// 19.5 (gpu1's last sample) ≥ 15 → power settled at 12.
	// Memory limit 1e9 + 1e8 = 1.1e9. gpu1 is below from 10.5; gpu0 (drop at
	// 14) is above until t=14, where gpu1's latest sample (13.5) is 1e9 →
	// memory released at 14.
	// Exit at 10. Complete = max(10, 14, 12) = 14.
	mod := func(f func(*ReleaseParams)) ReleaseParams { rp := releaseParams(); f(&rp); return rp }
	cases := []struct {
		name        string
		memDrop     float64
		gpu1MemFrom float64
		rp          ReleaseParams
		want        Release
		reasons     []string
	}{
		{
			name: "settles", memDrop: 14, rp: releaseParams(),
			want: Release{Closed: true, CompleteAt: 14, PowerSettledAt: 12, MemoryReleasedAt: 14, ExitedAt: 10},
		},
		{
			// End 14: data reach min(14, 13.5) = 13.5, so only t ≤ 10.5 can
			// hold 3 s, and all of those see gpu1's 60 W at 11.5. Memory is
			// still released at 14 (the gpu0 sample at 14 is within End).
			name: "never settles within End", memDrop: 14, rp: mod(func(r *ReleaseParams) { r.End = 14 }),
			want: Release{MemoryReleasedAt: 14, ExitedAt: 10},
			reasons: []string{"power did not stay within ±5% of baseline for 3 s before t=14",
				"device gpu1 last out of band at t=11.5 (60 W, baseline 50 W)"},
		},
		{
			// gpu1's memory unknown before t=7: no known value at From, so
			// not yet released; from 10.5 it is, as above → still 14.
			name: "settles, gpu1 memory known only from t=7", memDrop: 14, gpu1MemFrom: 7, rp: releaseParams(),
			want: Release{Closed: true, CompleteAt: 14, PowerSettledAt: 12, MemoryReleasedAt: 14, ExitedAt: 10},
		},
		{
			// gpu1 with no memory value before t=12: at 11 gpu0 (drop at 11)
			// is below but gpu1 has no known value yet; at 12.5 gpu1 reports
			// 1e9 → released at 12.5; complete = max(10, 12.5, 12) = 12.5.
			name: "memory known late", memDrop: 11, gpu1MemFrom: 12, rp: releaseParams(),
			want: Release{Closed: true, CompleteAt: 12.5, PowerSettledAt: 12, MemoryReleasedAt: 12.5, ExitedAt: 10},
		},
		{
			name: "memory not released", memDrop: 99, rp: releaseParams(),
			want: Release{PowerSettledAt: 12, ExitedAt: 10},
			reasons: []string{"GPU memory not back to its pre-test level by t=20",
				"device gpu0 uses 40000000000 bytes, pre-test 1000000000 + tolerance 100000000"},
		},
		{
			name: "exit missing", memDrop: 14, rp: mod(func(r *ReleaseParams) { r.ExitedAt = 0 }),
			want:    Release{PowerSettledAt: 12, MemoryReleasedAt: 14},
			reasons: []string{"engine process exit not recorded"},
		},
		{
			name: "exit after End", memDrop: 14, rp: mod(func(r *ReleaseParams) { r.ExitedAt = 30 }),
			want:    Release{PowerSettledAt: 12, MemoryReleasedAt: 14},
			reasons: []string{"engine exited at t=30, after the end t=20"},
		},
		{
			// No memory baseline: memory taken as met at From = 5;
			// complete = max(10, 5, 12) = 12.
			name: "memory unknown", memDrop: 99, rp: mod(func(r *ReleaseParams) { r.MemBaseline = nil }),
			want:    Release{Closed: true, CompleteAt: 12, PowerSettledAt: 12, MemoryReleasedAt: 5, ExitedAt: 10},
			reasons: []string{"memory unknown", "gpu0, gpu1", "taken as met at t=5"},
		},
		{
			// Only gpu1 checked: its latest sample is ≤ 1.1e9 from 10.5 →
			// memory at 10.5; complete = max(10, 10.5, 12) = 12.
			name: "memory of one device unknown", memDrop: 99,
			rp:      mod(func(r *ReleaseParams) { r.MemBaseline = map[string]int64{"gpu0": -1, "gpu1": 1e9} }),
			want:    Release{Closed: true, CompleteAt: 12, PowerSettledAt: 12, MemoryReleasedAt: 10.5, ExitedAt: 10},
			reasons: []string{"memory unknown for gpu0, not checked"},
		},
		{
			// Hold 0: the first sample time ≥ 5 that is itself in band for
			// every device sampled then: 5 (gpu0 300 W) no, 5.5 … 9 no,
			// 9.5 (gpu1 51 W) yes.
			name: "hold 0", memDrop: 14, rp: mod(func(r *ReleaseParams) { r.HoldS = 0 }),
			want: Release{Closed: true, CompleteAt: 14, PowerSettledAt: 9.5, MemoryReleasedAt: 14, ExitedAt: 10},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pd := mustPower(t, releaseData(c.memDrop, c.gpu1MemFrom))
			got, err := pd.Release(c.rp)
			if err != nil {
				t.Fatal(err)
			}
			reason := got.Reason
			got.Reason = ""
			if got != c.want {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
			if len(c.reasons) == 0 && reason != "" {
				t.Errorf("unexpected reason %q", reason)
			}
			for _, s := range c.reasons {
				if !strings.Contains(reason, s) {
					t.Errorf("reason %q does not contain %q", reason, s)
				}
			}
		})
	}
}

func TestReleaseErrors(t *testing.T) {
	pd := mustPower(t, releaseData(14, 0))
	mod := func(f func(*ReleaseParams)) ReleaseParams { rp := releaseParams(); f(&rp); return rp }
	cases := []struct {
		name string
		rp   ReleaseParams
		want string
	}{
		{"missing baseline", mod(func(r *ReleaseParams) { delete(r.Baseline, "gpu1") }), `no baseline power for device "gpu1"`},
		{"NaN baseline", mod(func(r *ReleaseParams) { r.Baseline["gpu0"] = math.NaN() }), `"gpu0"`},
		{"end before from", mod(func(r *ReleaseParams) { r.End = 4 }), "before start"},
		{"NaN from", mod(func(r *ReleaseParams) { r.From = math.NaN() }), "invalid interval"},
		{"negative tolerance", mod(func(r *ReleaseParams) { r.Tolerance = -0.1 }), "tolerance"},
		{"negative hold", mod(func(r *ReleaseParams) { r.HoldS = -1 }), "hold"},
		{"negative memory tolerance", mod(func(r *ReleaseParams) { r.MemToleranceBytes = -1 }), "memory tolerance"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := pd.Release(c.rp)
			wantErr(t, err, c.want)
		})
	}
	if _, err := (*PowerData)(nil).Release(releaseParams()); err == nil {
		t.Error("nil PowerData: no error")
	}
}

func TestReleaseMemoryFromBeforeFrom(t *testing.T) {
	// Memory known only at t=0 (1e9 B); the samples at 1 and 2 have none.
	// From 1.5: the latest known value at or before 2 is the one at 0, within
	// the limit → memory released at 2, the first sample time ≥ From. Power
	// is at its baseline throughout → settled at 2 (hold 0.5 s reaches 2.5).
	pd := mustPower(t, []record.PowerSample{
		{T: 0, Device: "g", PowerW: 100, MemUsedBytes: 1e9},
		{T: 1, Device: "g", PowerW: 100, MemUsedBytes: -1},
		{T: 2, Device: "g", PowerW: 100, MemUsedBytes: -1},
		{T: 3, Device: "g", PowerW: 100, MemUsedBytes: -1},
	})
	got, err := pd.Release(ReleaseParams{From: 1.5, Baseline: map[string]float64{"g": 100},
		MemBaseline: map[string]int64{"g": 1e9}, Tolerance: 0.05, HoldS: 0.5, ExitedAt: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := Release{Closed: true, CompleteAt: 2, PowerSettledAt: 2, MemoryReleasedAt: 2, ExitedAt: 1}
	if got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestReleasePhases(t *testing.T) {
	// Each condition found on its own over releaseData(14, 0), From 5, End
	// 20 (the data's end), with the values of TestRelease's "settles" case.
	pd := mustPower(t, releaseData(14, 0))
	rp := releaseParams()
	end, base, err := pd.checkRelease(rp)
	if err != nil {
		t.Fatal(err)
	}
	if end != 20 || !slices.Equal(base, []float64{100, 50}) {
		t.Fatalf("checkRelease: end %v, base %v; want 20, [100 50]", end, base)
	}
	// Samples in [5, 20]: gpu0 at 5…20 (16), gpu1 at 5.5…19.5 (15).
	evs := pd.samplesIn(rp.From, end)
	if len(evs) != 31 || evs[0].t != 5 || evs[1].t != 5.5 || evs[30].t != 20 {
		t.Fatalf("samplesIn: %d samples from %v to %v; want 31 from 5 to 20", len(evs), evs[0].t, evs[len(evs)-1].t)
	}
	// Power: settled at 12 (worked out in TestRelease). Memory: gpu1 within
	// 1.1e9 from 10.5, gpu0 from 14 → 14. Exit: 10 ≤ 20 → 10.
	cases := []struct {
		name string
		got  releasePhase
		want releasePhase
	}{
		{"power", pd.powerSettled(evs, base, rp, end), releasePhase{met: true, at: 12}},
		{"memory", pd.memoryReleased(evs, rp, end), releasePhase{met: true, at: 14}},
		{"exit", engineExited(rp.ExitedAt, end), releasePhase{met: true, at: 10}},
		{"exit unknown", engineExited(0, end), releasePhase{reason: "engine process exit not recorded"}},
		{"exit late", engineExited(20.5, end), releasePhase{reason: "engine exited at t=20.5, after the end t=20"}},
		// Power over [5, 14] only: reach is min(14, 13.5) = 13.5, so the
		// last candidate is 10.5, and 11.5 (gpu1, 60 W) spoils each.
		{"power, End 14", pd.powerSettled(pd.samplesIn(rp.From, 14), base, rp, 14), releasePhase{
			reason: "power did not stay within ±5% of baseline for 3 s before t=14; device gpu1 last out of band at t=11.5 (60 W, baseline 50 W)"}},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, c.got, c.want)
		}
	}
}

// The recording ends before the hold could be seen, though the stage has
// room for it: the samples stop at t=13 (gpu0) and 12.5 (gpu1), the stage
// runs to 20. Power is last out of band at 11.5 (gpu1, 60 W) and in band
// from 12 on; 12 + 3 = 15 ≤ 20 but > 12.5, the end of the data: the
// recording ended with 0.5 s of the 3 s hold seen (12 → 12.5), which the
// reason says instead of "did not stay within … before t=20".
// With End 14 the stage ends first (12 + 3 = 15 > 14): that is the maximum
// wait, as before.
func TestReleaseRecordingEnded(t *testing.T) {
	var cut []record.PowerSample
	for _, s := range releaseData(14, 0) {
		if s.T <= 13 {
			cut = append(cut, s)
		}
	}
	pd := mustPower(t, cut)
	rp := releaseParams()
	rp.End = 20
	got, err := pd.Release(rp)
	if err != nil {
		t.Fatal(err)
	}
	if got.Closed || !got.RecordingEnded || got.PowerSettledAt != 0 {
		t.Errorf("got %+v, want not closed, recording ended", got)
	}
	for _, want := range []string{"the recording ended at t=12.5 (the last sample of device gpu1)", "from t=12, 0.5 s of the 3 s hold seen", "not a failure to return to baseline"} {
		if !strings.Contains(got.Reason, want) {
			t.Errorf("reason %q lacks %q", got.Reason, want)
		}
	}
	if strings.Contains(got.Reason, "did not stay within") {
		t.Errorf("reason %q blames the power", got.Reason)
	}
	rp.End = 14
	if got, err = pd.Release(rp); err != nil || got.RecordingEnded || !strings.Contains(got.Reason, "did not stay within ±5% of baseline for 3 s before t=14") {
		t.Errorf("End 14: %+v, %v; want the maximum wait", got, err)
	}
}
