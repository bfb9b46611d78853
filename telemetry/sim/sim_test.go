package sim

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strconv"
	"sync"
	"testing"

	"github.com/joulebench/joulebench/telemetry"
)

// script is a Load whose activity the test sets.
type script struct {
	mu sync.Mutex
	a  Activity
}

func (s *script) set(a Activity) {
	s.mu.Lock()
	s.a = a
	s.mu.Unlock()
}

func (s *script) Activity() Activity {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.a
}

// manual is a run clock the test moves.
type manual struct{ t float64 }

func (m *manual) clock() float64 { return m.t }

func newTest(cfg Config) (*Source, *script, *manual) {
	l := &script{a: Activity{Phase: PhaseOff}}
	m := &manual{t: 1000}
	return New(cfg, l, m.clock), l, m
}

func read(t *testing.T, s *Source) []telemetry.Reading {
	t.Helper()
	r, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func model(t *testing.T, s *Source, i int) float64 {
	t.Helper()
	p, ok := s.ModelPower(i)
	if !ok {
		t.Fatalf("no model power for device %d", i)
	}
	return p
}

func relClose(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

func TestIdleAtStart(t *testing.T) {
	cfg := DefaultConfig()
	s, _, m := newTest(cfg)
	var first []telemetry.Reading
	for i := 0; i <= 20; i++ {
		r := read(t, s)
		if i == 0 {
			first = r
		}
		if len(r) != cfg.Devices {
			t.Fatalf("%d readings", len(r))
		}
		for _, x := range r {
			if math.Abs(x.PowerW-cfg.IdleW) > cfg.NoiseW {
				t.Errorf("t=%v %s: power %v not idle", m.t, x.Device, x.PowerW)
			}
			if x.MemUsedBytes != cfg.MemBaselineBytes {
				t.Errorf("mem %d, want baseline", x.MemUsedBytes)
			}
			if x.T != m.t || !x.HasEnergy {
				t.Errorf("reading %+v", x)
			}
		}
		m.t += 0.5
	}
	// 10 s at idle: exactly IdleW·10 J on the counter.
	r := read(t, s)
	for i := range r {
		if e := r[i].EnergyJ - first[i].EnergyJ; !relClose(e, cfg.IdleW*10.5, 1e-12) {
			t.Errorf("%s: energy %v, want %v", r[i].Device, e, cfg.IdleW*10.5)
		}
	}
}

func TestRisesWhileLoading(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NoiseW = 0
	s, l, m := newTest(cfg)
	read(t, s)
	l.set(Activity{Phase: PhaseLoading, Slots: 64, MemFrac: 0.5})
	prev := model(t, s, 0)
	r := read(t, s) // the activity takes effect from this read on
	if r[0].PowerW != cfg.IdleW {
		t.Errorf("power at the instant loading is seen = %v, want idle", r[0].PowerW)
	}
	if want := cfg.MemBaselineBytes + int64(0.5*float64(cfg.MemTotalBytes-cfg.MemBaselineBytes)); r[0].MemUsedBytes != want {
		t.Errorf("mem = %d, want %d", r[0].MemUsedBytes, want)
	}
	for i := 0; i < 50; i++ {
		m.t += 0.1
		read(t, s)
		p := model(t, s, 0)
		if p <= prev {
			t.Fatalf("power not rising while loading: %v after %v", p, prev)
		}
		prev = p
	}
	if !relClose(prev, cfg.LoadW, 1e-3) {
		t.Errorf("after 10 tau power = %v, want ≈ %v", prev, cfg.LoadW)
	}
	if d1 := model(t, s, 1); d1 >= prev || d1 <= cfg.IdleW {
		t.Errorf("device 1 = %v, want a little under device 0 (%v)", d1, prev)
	}
}

// settle holds the activity for 60 s (120 rise tau) and returns device 0's power.
func settle(t *testing.T, s *Source, l *script, m *manual, a Activity) float64 {
	l.set(a)
	read(t, s)
	m.t += 60
	read(t, s)
	return model(t, s, 0)
}

func TestProportionalToActivity(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NoiseW = 0
	s, l, m := newTest(cfg)
	read(t, s)
	base := cfg.IdleW + cfg.ReadyExtraW
	p0 := settle(t, s, l, m, Activity{Phase: PhaseReady, Slots: 64})
	if !relClose(p0, base, 1e-9) {
		t.Errorf("ready, no work: %v, want %v", p0, base)
	}
	p16 := settle(t, s, l, m, Activity{Phase: PhaseReady, Slots: 64, Running: 16})
	p32 := settle(t, s, l, m, Activity{Phase: PhaseReady, Slots: 64, Running: 32})
	p64 := settle(t, s, l, m, Activity{Phase: PhaseReady, Slots: 64, Running: 64})
	if !relClose(p32-base, 2*(p16-base), 1e-9) || !relClose(p64-base, 4*(p16-base), 1e-9) {
		t.Errorf("not proportional: %v %v %v over %v", p16, p32, p64, base)
	}
	if !relClose(p64, cfg.MaxW, 1e-9) {
		t.Errorf("full batch = %v, want MaxW %v", p64, cfg.MaxW)
	}
	// Prefill bursts: a prefilling sequence weighs PrefillWeight decoding ones.
	pp := settle(t, s, l, m, Activity{Phase: PhaseReady, Slots: 64, Running: 16, Prefilling: 8})
	if !relClose(pp, p32, 1e-9) {
		t.Errorf("16 running + 8 prefilling = %v, want %v", pp, p32)
	}
	// Over-full activity is capped at MaxW.
	if p := settle(t, s, l, m, Activity{Phase: PhaseReady, Slots: 64, Running: 64, Prefilling: 10}); !relClose(p, cfg.MaxW, 1e-9) {
		t.Errorf("capped = %v", p)
	}
}

func TestDecaysToIdleAfterStop(t *testing.T) {
	cfg := DefaultConfig()
	s, l, m := newTest(cfg)
	read(t, s)
	settle(t, s, l, m, Activity{Phase: PhaseReady, Slots: 64, Running: 64, MemFrac: 0.9})
	l.set(Activity{Phase: PhaseStopping, Slots: 64, MemFrac: 0.9})
	read(t, s)
	m.t += 0.5
	r := read(t, s)
	if r[0].MemUsedBytes <= cfg.MemBaselineBytes {
		t.Error("memory released while stopping")
	}
	l.set(Activity{Phase: PhaseOff})
	prev := model(t, s, 0)
	r = read(t, s)
	if r[0].MemUsedBytes != cfg.MemBaselineBytes {
		t.Errorf("memory after exit = %d, want baseline", r[0].MemUsedBytes)
	}
	inBand := -1.0
	for i := 0; i < 60; i++ {
		m.t += 0.5
		r = read(t, s)
		p := model(t, s, 0)
		if p >= prev {
			t.Fatalf("not decaying: %v after %v", p, prev)
		}
		prev = p
		ok := true
		for _, x := range r {
			ok = ok && math.Abs(x.PowerW-cfg.IdleW) <= 0.05*cfg.IdleW
		}
		if ok && inBand < 0 {
			inBand = float64(i+1) * 0.5
		}
		if !ok && inBand >= 0 {
			t.Fatalf("left the ±5%% band again at %v s", float64(i+1)*0.5)
		}
	}
	if inBand < 0 || inBand > 20 {
		t.Errorf("back within ±5%% of idle after %v s", inBand)
	}
}

func TestReleaseOffsetNeverSettles(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ReleaseOffsetW = 10
	s, l, m := newTest(cfg)
	// Before the engine ever ran, the offset does not apply: idle is idle.
	if p := settle(t, s, l, m, Activity{Phase: PhaseOff}); !relClose(p, cfg.IdleW, 1e-9) {
		t.Fatalf("pre-test idle = %v", p)
	}
	settle(t, s, l, m, Activity{Phase: PhaseReady, Slots: 64, Running: 64})
	l.set(Activity{Phase: PhaseOff})
	read(t, s)
	for i := 0; i < 600; i++ { // 10 minutes
		m.t += 1
		for _, x := range read(t, s) {
			if i > 60 && math.Abs(x.PowerW-cfg.IdleW) <= 0.05*cfg.IdleW {
				t.Fatalf("t=%d s %s: %v inside the release band", i, x.Device, x.PowerW)
			}
		}
	}
	if p := model(t, s, 0); !relClose(p, cfg.IdleW+cfg.ReleaseOffsetW, 1e-9) {
		t.Errorf("settled at %v, want %v", p, cfg.IdleW+cfg.ReleaseOffsetW)
	}
}

// TestCounterIsIntegral checks the counter against an independent
// integration (composite Simpson, 4000 panels per read interval) of the
// modelled power P(t) = T + (P0-T)·exp(-(t-t0)/tau).
func TestCounterIsIntegral(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NoiseW = 0
	steps := []struct {
		dt float64
		a  Activity
	}{
		{0.7, Activity{Phase: PhaseOff}},
		{1.3, Activity{Phase: PhaseLoading, MemFrac: 0.2}},
		{0.05, Activity{Phase: PhaseLoading, MemFrac: 0.6}},
		{2.9, Activity{Phase: PhaseReady, Slots: 64, Running: 3, Prefilling: 2}},
		{0.4, Activity{Phase: PhaseReady, Slots: 64, Running: 64}},
		{3.3, Activity{Phase: PhaseReady, Slots: 64, Running: 10}},
		{0.001, Activity{Phase: PhaseStopping}},
		{7.5, Activity{Phase: PhaseOff}},
		{1.0, Activity{Phase: PhaseOff}},
	}
	s, l, m := newTest(cfg)
	first := read(t, s)
	p := make([]float64, cfg.Devices)   // modelled power per device
	tgt := make([]float64, cfg.Devices) // held target
	for i := range p {
		p[i], tgt[i] = cfg.IdleW, cfg.IdleW
	}
	want := make([]float64, cfg.Devices)
	for _, st := range steps {
		m.t += st.dt
		for i := range p {
			tau := cfg.RiseTauS
			if tgt[i] < p[i] {
				tau = cfg.DecayTauS
			}
			f := func(x float64) float64 { return tgt[i] + (p[i]-tgt[i])*math.Exp(-x/tau) }
			want[i] += simpson(f, st.dt, 4000)
			p[i] = f(st.dt)
		}
		l.set(st.a)
		read(t, s)
		for i := range p {
			tgt[i] = s.devs[i].target // targets are checked by the other tests
		}
	}
	last := read(t, s)
	for i := range last {
		got := last[i].EnergyJ - first[i].EnergyJ
		if !relClose(got, want[i], 1e-9) {
			t.Errorf("%s: counter %.12g J, integral %.12g J (rel %.3g)", last[i].Device, got, want[i], math.Abs(got-want[i])/want[i])
		}
		if !relClose(model(t, s, i), p[i], 1e-12) {
			t.Errorf("%s: power %v, want %v", last[i].Device, model(t, s, i), p[i])
		}
	}
}

func simpson(f func(float64) float64, b float64, n int) float64 {
	h := b / float64(n)
	sum := f(0) + f(b)
	for k := 1; k < n; k++ {
		w := 2.0
		if k%2 == 1 {
			w = 4
		}
		sum += w * f(float64(k)*h)
	}
	return sum * h / 3
}

// Splitting a constant-activity interval into many reads changes nothing.
func TestCounterIndependentOfSampling(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NoiseW = 0
	a := Activity{Phase: PhaseReady, Slots: 64, Running: 40}
	run := func(n int) float64 {
		s, l, m := newTest(cfg)
		read(t, s)
		l.set(a)
		read(t, s)
		for i := 0; i < n; i++ {
			m.t += 5.0 / float64(n)
			read(t, s)
		}
		return read(t, s)[0].EnergyJ
	}
	one, many := run(1), run(1000)
	if !relClose(one, many, 1e-9) {
		t.Errorf("1 read: %v J, 1000 reads: %v J", one, many)
	}
}

func TestDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	trace := func(seed int64) [][]telemetry.Reading {
		c := cfg
		c.Seed = seed
		s, l, m := newTest(c)
		var out [][]telemetry.Reading
		acts := []Activity{{Phase: PhaseOff}, {Phase: PhaseLoading, MemFrac: 0.3}, {Phase: PhaseReady, Slots: 8, Running: 5}, {Phase: PhaseStopping}, {Phase: PhaseOff}}
		for i := 0; i < 50; i++ {
			l.set(acts[i/10])
			out = append(out, read(t, s))
			m.t += 0.25 + 0.01*float64(i%3)
		}
		return out
	}
	a, b := trace(7), trace(7)
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, same reads: different readings")
	}
	c := trace(8)
	if reflect.DeepEqual(a, c) {
		t.Error("different seeds gave identical noise")
	}
	for i := range a {
		for j := range a[i] {
			if a[i][j].EnergyJ != c[i][j].EnergyJ {
				t.Fatal("the counter must not depend on noise")
			}
		}
	}
}

func TestDevicesAndCounterOff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Devices = 3
	s, _, _ := newTest(cfg)
	devs, err := s.Devices(context.Background())
	if err != nil || len(devs) != 3 {
		t.Fatalf("Devices = %v, %v", devs, err)
	}
	for i, d := range devs {
		// The limit is MaxW, 450 W by default.
		if d.ID != "sim"+strconv.Itoa(i) || d.Name != "Simulated GPU" || !d.Simulated || d.Method != "counter" || d.UUID == "" || d.PowerLimitW != 450 {
			t.Errorf("device %d = %+v", i, d)
		}
	}
	if s.Name() != "sim" {
		t.Errorf("Name = %q", s.Name())
	}
	cfg.Counter = false
	s, _, _ = newTest(cfg)
	devs, _ = s.Devices(context.Background())
	if devs[0].Method != "power" {
		t.Errorf("method = %q", devs[0].Method)
	}
	for _, r := range read(t, s) {
		if r.HasEnergy || r.EnergyJ != 0 {
			t.Errorf("reading has energy without a counter: %+v", r)
		}
	}
}

func TestInjectErrorAndClose(t *testing.T) {
	s, _, _ := newTest(DefaultConfig())
	read(t, s)
	s.InjectError(ErrDeviceLost)
	if _, err := s.Read(context.Background()); !errors.Is(err, ErrDeviceLost) {
		t.Errorf("Read = %v", err)
	}
	s.InjectError(nil)
	read(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(context.Background()); !errors.Is(err, telemetry.ErrStopped) {
		t.Errorf("Read after Close = %v", err)
	}
}

func TestNilLoadIsOff(t *testing.T) {
	m := &manual{t: 5}
	s := New(Config{}, nil, m.clock)
	r := read(t, s)
	m.t += 3
	r2 := read(t, s)
	if len(r) != 1 || r2[0].PowerW != 0 || r2[0].MemUsedBytes != 0 {
		t.Errorf("zero config readings %+v %+v", r, r2)
	}
}

func TestStep(t *testing.T) {
	// Closed form at dt = tau: P = T + (P0-T)/e, E = T·tau + (P0-T)·tau·(1-1/e).
	p, e := Step(100, 300, 2, 2)
	if wp := 300 - 200/math.E; !relClose(p, wp, 1e-15) {
		t.Errorf("p = %v, want %v", p, wp)
	}
	if we := 600 - 400*(1-1/math.E); !relClose(e, we, 1e-15) {
		t.Errorf("e = %v, want %v", e, we)
	}
	if p, e := Step(100, 300, 0, 2); p != 300 || e != 600 {
		t.Errorf("instant step = %v, %v", p, e)
	}
	if p, e := Step(100, 300, 1, 0); p != 100 || e != 0 {
		t.Errorf("zero dt = %v, %v", p, e)
	}
}
