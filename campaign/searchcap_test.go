package campaign

import (
	"context"
	"strings"
	"testing"
)

// capServer meets the SLO at its load from minW watts up.
type capServer struct {
	minW   float64
	probed []LoadPoint
}

func (f *capServer) probe(_ context.Context, l LoadPoint) (Measure, error) {
	f.probed = append(f.probed, l)
	m := Measure{OK: true, Attainment: 0.5}
	if l.PowerLimitW >= f.minW {
		m.Attainment = 1
	}
	return m, nil
}

// A search over the power limit at concurrency 16, between 100 and 450 W
// with a 10 W tolerance, on a server that meets the SLO from 237 W:
//
//	450 ok → 100 not → 275 ok → 188 not → 232 not → 254 ok → 243 ok
//	→ 238 ok: bracket 232..238 (6 W ≤ 10 W): stop at 238 W.
//
// Every point holds the load and carries its limit (c16-p238, --set
// gpu_power_limit_w=238).
func TestRunSLOCap(t *testing.T) {
	s := Search{Over: "gpu_power_limit_w", Low: 100, High: 450, Tolerance: 10, MaxRuns: 20, Attainment: 0.99,
		Load: &CapLoad{Mode: "concurrency", Concurrency: 16}}
	f := &capServer{minW: 237}
	var ds []Decision
	res, err := s.RunSLO(context.Background(), f.probe, func(d Decision) error { ds = append(ds, d); return nil })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range f.probed {
		got = append(got, l.Name())
	}
	want := "c16-p450 c16-p100 c16-p275 c16-p188 c16-p232 c16-p254 c16-p243 c16-p238"
	if strings.Join(got, " ") != want {
		t.Errorf("points %s, want %s", strings.Join(got, " "), want)
	}
	if !res.Found || res.Load.PowerLimitW != 238 || res.Load.Concurrency != 16 || !strings.Contains(ds[len(ds)-1].Next, "lowest power limit meeting the SLO c16-p238") {
		t.Errorf("result %+v, last %+v", res, ds[len(ds)-1])
	}
	if sets := res.Load.sets(); sets["gpu_power_limit_w"] != "238" || sets["concurrency"] != "16" || sets["mode"] != "concurrency" {
		t.Errorf("sets %v", sets)
	}
	// Not met even at the highest limit: one run, nothing found.
	f = &capServer{minW: 500}
	if res, err := s.RunSLO(context.Background(), f.probe, func(Decision) error { return nil }); err != nil || res.Found || len(f.probed) != 1 {
		t.Errorf("never met: %+v, %v, %d runs", res, err, len(f.probed))
	}
}

func TestCapSearchValidation(t *testing.T) {
	base := "name: t\nprofile: benchmark-1.5\nout: o\nmatrix: {engine: [{kind: sim}]}\n"
	for _, tc := range []struct{ name, src, want string }{
		{"no load", base + "search: {kind: slo, over: gpu_power_limit_w, low: 100, high: 400, slo: {tpot_ms: 50}}\n", "search.load: a search over gpu_power_limit_w holds the load fixed"},
		{"no bounds", base + "search: {kind: slo, over: gpu_power_limit_w, load: {mode: unlimited}, slo: {tpot_ms: 50}}\n", "needs low and high, in W"},
		{"bad concurrency", base + "search: {kind: slo, over: gpu_power_limit_w, low: 100, high: 400, load: {mode: concurrency}, slo: {tpot_ms: 50}}\n", "search.load.concurrency: must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Load([]byte(tc.src), "c.yaml"); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	c := load(t, base+"search: {kind: slo, over: gpu_power_limit_w, low: 100, high: 400, load: {mode: concurrency, concurrency: 8}, slo: {tpot_ms: 50}}\n")
	if c.Search.Tolerance != 10 || c.Search.Load.Concurrency != 8 {
		t.Errorf("search %+v", c.Search)
	}
}
