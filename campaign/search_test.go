package campaign

import (
	"context"
	"math"
	"strings"
	"testing"
)

// fakeServer is a load→latency function: a server that completes at most
// capacity requests/s; at concurrency c a request takes 1/syncRPS·(1 +
// c/knee) s, and TPOT stays within the SLO up to concurrency knee.
type fakeServer struct {
	syncRPS, capacity float64
	knee              int
	probes            []LoadPoint
}

func (f *fakeServer) probe(_ context.Context, l LoadPoint) (Measure, error) {
	f.probes = append(f.probes, l)
	m := Measure{OK: true, Attainment: -1}
	switch {
	case l.Mode == "unlimited":
		m.AchievedRPS, m.TTFTGrowth = f.capacity, 20
	case l.Concurrency > 0:
		m.AchievedRPS = math.Min(f.capacity, f.syncRPS*float64(l.Concurrency))
		m.Attainment = 1
		if l.Concurrency > f.knee {
			m.Attainment = 0.5
		}
	default:
		m.OfferedRPS, m.AchievedRPS, m.TTFTGrowth = l.Rate, math.Min(l.Rate, f.capacity), 1.1
		if l.Rate > f.capacity {
			m.TTFTGrowth = 5
		}
		m.Attainment = 1
		if l.Rate > float64(f.knee) {
			m.Attainment = 0.9
		}
	}
	return m, nil
}

func TestRunSweepStopsAtSaturation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity float64
		// want are the loads probed, by hand: sync 1 req/s, throughput
		// = capacity; 4 rates at 1 + (cap-1)·i/5.
		want []string
		last string
	}{
		// capacity 11: rates 3, 5, 7, 9 all below capacity: all probed.
		{"keeps up", 11, []string{"c1", "unlimited", "r3", "r5", "r7", "r9"}, "done"},
		// capacity 6: rates 1 + 5·i/5 = 2, 3, 4, 5, all below capacity.
		{"small server", 6, []string{"c1", "unlimited", "r2", "r3", "r4", "r5"}, "done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeServer{syncRPS: 1, capacity: tc.capacity, knee: 100}
			s := &Search{Kind: SearchSweep, Points: 4, RateMode: "poisson", MinAchieved: 0.95, TTFTGrowth: 2}
			var ds []Decision
			if err := s.RunSweep(context.Background(), f.probe, func(d Decision) error { ds = append(ds, d); return nil }); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range ds {
				got = append(got, d.Load.Name())
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("points %v, want %v", got, tc.want)
			}
			if ds[len(ds)-1].Next != tc.last {
				t.Errorf("last next %q, want %q", ds[len(ds)-1].Next, tc.last)
			}
		})
	}
}

// saturatingServer reports the unlimited throughput 11 req/s but falls
// behind any offered rate above 6 req/s.
type saturatingServer struct{ fakeServer }

func (f *saturatingServer) probe(ctx context.Context, l LoadPoint) (Measure, error) {
	m, _ := f.fakeServer.probe(ctx, l)
	if l.Rate > 6 {
		m.AchievedRPS = 6 // 6 < 0.95 × 7
	}
	return m, nil
}

func TestRunSweepOverSaturatedPointStopsClimbing(t *testing.T) {
	f := &saturatingServer{fakeServer{syncRPS: 1, capacity: 11, knee: 100}}
	s := &Search{Kind: SearchSweep, Points: 4, RateMode: "poisson", MinAchieved: 0.95, TTFTGrowth: 2}
	var ds []Decision
	if err := s.RunSweep(context.Background(), f.probe, func(d Decision) error { ds = append(ds, d); return nil }); err != nil {
		t.Fatal(err)
	}
	// c1, unlimited, r3, r5, r7 (6 of 7 offered = 86 % < 95 %): stop.
	if len(ds) != 5 || ds[4].Load.Rate != 7 || ds[4].Next != "stop climbing" || !strings.Contains(ds[4].Reason, "over-saturated") {
		t.Fatalf("decisions %+v", ds)
	}
}

func TestSaturatedRule(t *testing.T) {
	s := &Search{MinAchieved: 0.95, TTFTGrowth: 2}
	for _, tc := range []struct {
		name string
		m    Measure
		want bool
	}{
		{"keeps up", Measure{OK: true, OfferedRPS: 10, AchievedRPS: 9.6, TTFTGrowth: 1.5}, false},
		// 9.4 < 0.95 × 10 = 9.5
		{"falls behind", Measure{OK: true, OfferedRPS: 10, AchievedRPS: 9.4, TTFTGrowth: 1}, true},
		{"ttft grows", Measure{OK: true, OfferedRPS: 10, AchievedRPS: 10, TTFTGrowth: 2.01}, true},
		{"failed", Measure{OK: false, Reason: "x"}, true},
	} {
		if got, why := s.saturated(tc.m); got != tc.want {
			t.Errorf("%s: saturated %v (%s), want %v", tc.name, got, why, tc.want)
		}
	}
}

func TestRunSLOFindsKnee(t *testing.T) {
	for _, tc := range []struct {
		name      string
		s         Search
		knee      int
		wantFound bool
		want      float64
		tol       float64
	}{
		{"concurrency", Search{Over: "concurrency", Low: 1, High: 256, Tolerance: 1, MaxRuns: 20, Attainment: 0.99}, 37, true, 37, 0},
		{"concurrency at high", Search{Over: "concurrency", Low: 1, High: 16, Tolerance: 1, MaxRuns: 20, Attainment: 0.99}, 37, true, 16, 0},
		{"never met", Search{Over: "concurrency", Low: 40, High: 64, Tolerance: 1, MaxRuns: 20, Attainment: 0.99}, 37, false, 0, 0},
		// rate: met up to 13 req/s; tolerance 0.5 → within 0.5 below 13.
		{"rate", Search{Over: "rate", RateMode: "poisson", Low: 1, High: 40, Tolerance: 0.5, MaxRuns: 20, Attainment: 0.99}, 13, true, 13, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeServer{syncRPS: 1, capacity: 1000, knee: tc.knee}
			s := tc.s
			var ds []Decision
			res, err := s.RunSLO(context.Background(), f.probe, func(d Decision) error { ds = append(ds, d); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if res.Found != tc.wantFound {
				t.Fatalf("found %v, want %v (%+v)", res.Found, tc.wantFound, ds)
			}
			if !res.Found {
				return
			}
			got := float64(res.Load.Concurrency)
			if s.Over == "rate" {
				got = res.Load.Rate
			}
			if got > tc.want || tc.want-got > tc.tol {
				t.Errorf("found %v, want %v within %v below", got, tc.want, tc.tol)
			}
			if len(ds) > s.MaxRuns {
				t.Errorf("%d runs, more than max_runs %d", len(ds), s.MaxRuns)
			}
		})
	}
}

func TestRunSLOMaxRuns(t *testing.T) {
	f := &fakeServer{syncRPS: 1, capacity: 1000, knee: 37}
	s := Search{Over: "concurrency", Low: 1, High: 256, Tolerance: 1, MaxRuns: 4, Attainment: 0.99}
	n := 0
	res, err := s.RunSLO(context.Background(), f.probe, func(Decision) error { n++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	// 1 ok, 256 not, 128 not, 64 not: 4 runs, highest met so far 1.
	if n != 4 || res.Load.Concurrency != 1 {
		t.Fatalf("%d runs, found %+v", n, res)
	}
}

func TestSearchValidation(t *testing.T) {
	base := "name: t\nprofile: benchmark-1.5\nout: o\nmatrix: {engine: [{kind: sim}]}\n"
	for _, tc := range []struct{ name, src, want string }{
		{"kind", base + "search: {kind: grid}\n", "c.yaml:5:16: search.kind: expected sweep or slo"},
		{"slo without bound", base + "search: {kind: slo}\n", "search.slo: an slo search needs at least one bound"},
		{"high below low", base + "search: {kind: slo, low: 8, high: 4, slo: {tpot_ms: 50}}\n", "search.high: must be above low"},
		{"rate without bounds", base + "search: {kind: slo, over: rate, slo: {tpot_ms: 50}}\n", "search.high: a rate search needs low and high"},
		{"load axis", "name: t\nprofile: p\nout: o\nmatrix:\n  load: [{name: a}]\nsearch: {kind: sweep}\n", "c.yaml:5:9: matrix.load: a campaign with a search section has no load axis"},
		{"bad key", base + "search: {kind: sweep, step: 2}\n", "unknown key \"step\""},
		{"negative bound", base + "search: {kind: slo, slo: {tpot_ms: -5}}\n", "c.yaml:5:36: search.slo.tpot_ms: must not be negative"},
		{"attainment", base + "search: {kind: slo, attainment: 2, slo: {tpot_ms: 5}}\n", "search.attainment: must be in (0, 1]"},
		// Column of the value: "search: {kind: slo, low: " is 25 characters.
		{"low nan", base + "search: {kind: slo, low: .nan, slo: {tpot_ms: 5}}\n", "c.yaml:5:26: search.low: must be a finite number, got NaN"},
		{"high inf", base + "search: {kind: slo, over: rate, low: 1, high: .inf, slo: {tpot_ms: 5}}\n", "c.yaml:5:47: search.high: must be a finite number, got +Inf"},
		{"sweep high inf", base + "search: {kind: sweep, high: .inf}\n", "c.yaml:5:29: search.high: must be a finite number"},
		{"slo bound nan", base + "search: {kind: slo, slo: {tpot_ms: .nan}}\n", "c.yaml:5:36: search.slo.tpot_ms: must be a finite number"},
		{"attainment nan", base + "search: {kind: slo, attainment: .NaN, slo: {tpot_ms: 5}}\n", "search.attainment: must be a finite number"},
		{"concurrency too high", base + "search: {kind: slo, high: 1e300, slo: {tpot_ms: 5}}\n", "c.yaml:5:27: search.high: concurrency must be at most 1000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(tc.src), "c.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	c, err := Load([]byte(base+"search: {kind: slo, slo: {tpot_ms: 50}}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Search; s.Over != "concurrency" || s.Low != 1 || s.High != 256 || s.Tolerance != 1 || s.MaxRuns != 10 || s.Attainment != 0.99 {
		t.Errorf("defaults %+v", s)
	}
}

// A search point carries the search's SLO as the profile's parameters
// (each bound set, and the attainment target), after the load's --set
// values; the point's id is the same as without an SLO.
func TestPointRunRecordsSLO(t *testing.T) {
	base := "name: t\nprofile: benchmark-1.5\nout: o\nmatrix: {engine: [{kind: sim}]}\n"
	withSLO, err := Load([]byte(base+"search: {kind: slo, attainment: 0.95, slo: {ttft_ms: 200, e2e_ms: 1500}}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sweep, err := Load([]byte(base+"search: {kind: sweep}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l := LoadPoint{Mode: "concurrency", Concurrency: 8}
	r := withSLO.PointRun(withSLO.Expand().Runs[0], l)
	got := strings.Join(SetsOf(r.Config.Args), " ")
	// tpot_ms is unset (0): not recorded; the target is search.attainment.
	want := "concurrency=8 mode=concurrency slo_ttft_ms=200 slo_e2e_ms=1500 slo_attainment_target=0.95"
	if got != want {
		t.Errorf("point --set %q, want %q", got, want)
	}
	// The point's process runs its settings: the SLO is in them too.
	if got := strings.Join(r.Spec.Sets, " "); got != want || r.SpecErr != nil {
		t.Errorf("point settings' sets %q (%v), want %q", got, r.SpecErr, want)
	}
	plain := sweep.PointRun(sweep.Expand().Runs[0], l)
	if sets := strings.Join(SetsOf(plain.Config.Args), " "); sets != "concurrency=8 mode=concurrency" {
		t.Errorf("a search without an SLO sets %q", sets)
	}
	if r.ID != plain.ID {
		t.Errorf("the SLO changed the point's id: %s vs %s", r.ID, plain.ID)
	}
}
