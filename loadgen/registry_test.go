package loadgen

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// TestShapesRegistry: the registry lists the shapes in registration
// order, finds each by its mode ("" is the all-at-once one), refuses an
// unknown mode listing the valid ones, and answers each role.
func TestShapesRegistry(t *testing.T) {
	r := Shapes()
	want := []string{"unlimited", "concurrency", "constant", "poisson", "gamma", "ramp"}
	if got := r.Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	r.Names()[0] = "changed" // a fresh slice each time
	if r.Names()[0] != "unlimited" {
		t.Fatal("Names hands out the registry's own slice")
	}
	for _, name := range append(want, "") {
		k, err := r.Kind(name)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if name == "" {
			name = "unlimited"
		}
		if string(k.Mode) != name {
			t.Errorf("%q: kind %q", name, k.Mode)
		}
	}
	if _, err := r.Kind("pulse"); err == nil || !strings.Contains(err.Error(), `unknown load mode "pulse" (want unlimited, concurrency, constant, poisson, gamma, ramp)`) {
		t.Errorf("unknown mode: %v", err)
	}
	for role, mode := range map[Role]Mode{RoleAllAtOnce: "unlimited", RoleInFlight: "concurrency", RoleRate: "poisson", RoleBurstyRate: "gamma", NoRole: ""} {
		if got := r.Role(role); got != mode {
			t.Errorf("role %d: %q, want %q", role, got, mode)
		}
	}
	if got := r.takers(ParamRate); got != "modes constant, poisson and gamma" {
		t.Errorf("takers of rate: %q", got)
	}
	if got := r.takers(ParamBurstiness); got != "mode gamma" {
		t.Errorf("takers of burstiness: %q", got)
	}
	if got := r.takers("nothing"); got != "no mode" {
		t.Errorf("takers of nothing: %q", got)
	}
}

// TestNewRegistryRefuses: a kind registered twice, a role given twice, or
// a kind without a mode or decoder is a programming error: it panics when
// the registry is built.
func TestNewRegistryRefuses(t *testing.T) {
	decode := func(Config) (Shape, error) { return unlimitedShape{}, nil }
	for name, kinds := range map[string][]ShapeKind{
		"registered twice": {{Mode: "a", Decode: decode}, {Mode: "a", Decode: decode}},
		"same role":        {{Mode: "a", Role: RoleRate, Decode: decode}, {Mode: "b", Role: RoleRate, Decode: decode}},
		"needs a mode":     {{Decode: decode}},
		"needs a mode and": {{Mode: "a"}},
	} {
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(p.(string), strings.TrimSuffix(name, " and")) {
					t.Errorf("%s: panic %v", name, p)
				}
			}()
			newRegistry(kinds)
		}()
	}
	r := newRegistry([]ShapeKind{{Mode: "a", Decode: decode}, {Mode: "b", Role: RoleRate, Decode: decode}})
	if got := r.Names(); !reflect.DeepEqual(got, []string{"a", "b"}) || r.Role(RoleRate) != "b" {
		t.Errorf("names %v, rate role %q", got, r.Role(RoleRate))
	}
}

// TestShapeAbilities: what each canonical shape says of itself, which Run
// and the steps read instead of its name.
func TestShapeAbilities(t *testing.T) {
	for _, tc := range []struct {
		cfg       Config
		open      bool
		inFlight  int
		allAtOnce bool
		burst     int // of 10 requests
	}{
		{Config{}, false, 0, true, 10},
		{Config{Mode: Unlimited, MaxConcurrency: 3}, false, 3, false, 3},
		{Config{Mode: Concurrency, Concurrency: 4}, false, 4, false, 4},
		{Config{Mode: Concurrency, Concurrency: 40}, false, 40, false, 10},
		{Config{Mode: Constant, Rate: 2}, true, 0, false, 0},
		{Config{Mode: Poisson, Rate: 2, Concurrency: 5}, true, 5, false, 0},
		{Config{Mode: Gamma, Rate: 2, Burstiness: 0.5, MaxConcurrency: 6}, true, 6, false, 0},
		{Config{Mode: Ramp, RampEndRate: 3}, true, 0, false, 0},
	} {
		s, err := tc.cfg.Shape()
		if err != nil {
			t.Fatalf("%+v: %v", tc.cfg, err)
		}
		if s.Open() != tc.open || s.InFlight() != tc.inFlight || tc.cfg.AllAtOnce() != tc.allAtOnce || len(tc.cfg.Burst(requests(10))) != tc.burst {
			t.Errorf("%+v: open %v, in flight %d, all at once %v, burst %d; want %v, %d, %v, %d", tc.cfg,
				s.Open(), s.InFlight(), tc.cfg.AllAtOnce(), len(tc.cfg.Burst(requests(10))), tc.open, tc.inFlight, tc.allAtOnce, tc.burst)
		}
		if (s.Schedule(3) != nil) != tc.open {
			t.Errorf("%+v: schedule %v", tc.cfg, s.Schedule(3))
		}
	}
	bad := Config{Mode: "pulse"}
	if bad.AllAtOnce() || bad.Burst(requests(3)) != nil || bad.Schedule(3) != nil || bad.Load() != nil || !reflect.DeepEqual(bad.Normalized(), bad) {
		t.Error("an invalid configuration has a shape")
	}
}

// TestNormalizedIsCanonical: a shape's canonical form decodes to itself,
// and the configuration made from its record runs the same schedule, for
// every registered shape.
func TestNormalizedIsCanonical(t *testing.T) {
	for _, cfg := range []Config{
		{}, {Mode: Unlimited, MaxConcurrency: 2}, {Mode: Concurrency, Concurrency: 3},
		{Mode: Constant, Rate: 4, Concurrency: 2}, {Mode: Poisson, Rate: 3, Seed: 9},
		{Mode: Gamma, Rate: 3, Burstiness: 1, Seed: 9}, {Mode: Gamma, Rate: 3, Burstiness: 0.25, MaxConcurrency: 4, Seed: 9},
		{Mode: Ramp, RampStartRate: 1, RampEndRate: 2, MaxConcurrency: 8},
	} {
		n := cfg.Normalized()
		if err := n.Validate(); err != nil {
			t.Fatalf("%+v normalized to %+v: %v", cfg, n, err)
		}
		if !reflect.DeepEqual(n.Normalized(), n) {
			t.Errorf("%+v: normalized twice %+v, once %+v", cfg, n.Normalized(), n)
		}
		a, _ := json.Marshal(cfg.Load())
		b, _ := json.Marshal(n.Load())
		if string(a) != string(b) {
			t.Errorf("%+v: record %s, of its canonical form %s", cfg, a, b)
		}
		if !reflect.DeepEqual(cfg.Schedule(20), n.Schedule(20)) {
			t.Errorf("%+v: its canonical form runs another schedule", cfg)
		}
		var rec record.LoadShape
		if err := json.Unmarshal(a, &rec); err != nil || Mode(rec.Mode) != n.Mode {
			t.Errorf("%+v: record %s, mode %q", cfg, a, n.Mode)
		}
	}
}

// TestKindIsACopy: what Kind hands out cannot change the registry.
func TestKindIsACopy(t *testing.T) {
	k, err := Shapes().Kind("gamma")
	if err != nil {
		t.Fatal(err)
	}
	k.Params[0] = "changed"
	if k2, _ := Shapes().Kind("gamma"); k2.Params[0] == "changed" {
		t.Fatal("Kind hands out the registry's own parameter list")
	}
}
