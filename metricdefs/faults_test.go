package metricdefs

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// glitchRun: one device "g" at a flat 100 W sampled every second on
// [0, 10]; its counter reads 100·t J except a reading of 0 at t=5. Formal
// stage [2, 8]: true energy 100 W × 6 s = 600 J.
func glitchRun(t *testing.T) *Data {
	t.Helper()
	var power []record.PowerSample
	for i := range 11 {
		e := 100 * float64(i)
		if i == 5 {
			e = 0
		}
		power = append(power, record.PowerSample{T: float64(i), Device: "g", PowerW: 100, EnergyJ: e, HasEnergy: true, MemUsedBytes: -1})
	}
	d, err := NewData(&record.Run{
		Meta:  record.Meta{RunID: "glitch", Stages: []record.Stage{{Name: "formal", Start: 2, End: 8}}},
		Power: power,
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func evalDefs(t *testing.T, d *Data, defs ...Def) (*record.Results, error) {
	t.Helper()
	prog, errs := Compile(Spec{Defs: defs})
	if len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	return prog.Evaluate(context.Background(), d, nil)
}

func TestCounterGlitchInFormulas(t *testing.T) {
	res, err := evalDefs(t, glitchRun(t),
		// The 0 at t=5 is a backward step (600 at t=6 ≥ 400): segments
		// [4, 5] and [5, 6] take their trapezoid 100 J each, so the counter
		// gives 600 J on [2, 8], not 600 + 400 = 1000 J as a reset would.
		Def{Name: "e_formal", Kind: KindMetric, Expr: `energy(stages.formal.start, stages.formal.end, "counter")`},
		Def{Name: "xc", Kind: KindDerived, Expr: `counter_vs_trapz(stages.formal.start, stages.formal.end)`},
		Def{Name: "glitches", Kind: KindDerived, Expr: `counter_glitches()`},
		Def{Name: "counter_agrees", Kind: KindCheck, Expr: `xc.rel_diff <= 0.05`, Severity: SeverityWarn},
		Def{Name: "counter_clean", Kind: KindCheck, Expr: `xc.glitches == 0`, Detail: `xc.note`, Severity: SeverityWarn},
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Values["e_formal"].Value; got != 600.0 {
		t.Errorf("e_formal = %v, want 600", got)
	}
	gs, _ := res.Values["glitches"].Value.([]any)
	if len(gs) != 1 || !strings.Contains(gs[0].(string), "device g: counter stepped backward on [4, 6]") {
		t.Errorf("glitches = %v, want one backward step of g on [4, 6]", res.Values["glitches"].Value)
	}
	if p := res.Values["counter_agrees"].Passed; p == nil || !*p {
		t.Errorf("counter_agrees = %+v, want pass (600 J both ways)", res.Values["counter_agrees"])
	}
	r := res.Values["counter_clean"]
	if r.Passed == nil || *r.Passed || !strings.Contains(r.Message, "trapezoid used") {
		t.Errorf("counter_clean = %+v, want a failure that notes the fallback", r)
	}
}

func TestIntegerOverflowIsAnError(t *testing.T) {
	cases := []struct {
		expr string
		want float64 // when no overflow
		err  string
	}{
		{expr: `9223372036854775807 + len(requests) + 1`, err: "integer overflow: 9223372036854775807 + 1"},
		{expr: `-9223372036854775807 - 2 * (len(requests) + 1)`, err: "integer overflow"},
		{expr: `4294967296 * 4294967296 * (len(requests) + 1)`, err: "integer overflow: 4294967296 * 4294967296"},
		// (2^62 + 0) · (0 + 1) · 2 - 1 would wrap; as float it does not.
		{expr: `4611686018427387904.0 * (len(requests) + 2)`, want: math.Ldexp(1, 63)},
		// 3 · 4 - 5 = 7: ordinary int arithmetic is unchanged.
		{expr: `3 * (len(requests) + 4) - 5`, want: 7},
		// Operands of unknown type (elements of a mixed list are any).
		{expr: `[9223372036854775807, "x"][0] + 1`, err: "integer overflow: 9223372036854775807 + 1"},
		{expr: `[4294967296, "x"][0] * 4294967296`, err: "integer overflow: 4294967296 * 4294967296"},
		// 2 + 5 = 7 and 2.5 · 2 = 5 through the same path.
		{expr: `[2, "x"][0] + 5`, want: 7},
		{expr: `[2.5, "x"][0] * 2`, want: 5},
		// sum() of ints: 2^62 + 2^62 = 2^63 wraps; of floats it does not.
		{expr: `sum([4611686018427387904, 4611686018427387904])`, err: "sum: integer overflow"},
		{expr: `sum([4611686018427387904.0, 4611686018427387904.0])`, want: math.Ldexp(1, 63)},
		// sum with a predicate: 1·2 + 2·2 + 3·2 = 12; mixed int and float: 1 + 0.5 = 1.5.
		{expr: `sum([1, 2, 3], # * 2)`, want: 12},
		{expr: `sum([1, 0.5])`, want: 1.5},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			res, err := evalDefs(t, &Data{Stages: map[string]*Stage{}}, Def{Name: "m", Kind: KindMetric, Expr: c.expr})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q (value %v)", err, c.err, res.Values["m"].Value)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := toFloat(res.Values["m"].Value)
			if got != c.want {
				t.Errorf("m = %v, want %v", res.Values["m"].Value, c.want)
			}
		})
	}
}

func TestNilMetricIsAnError(t *testing.T) {
	res, err := evalDefs(t, &Data{Stages: map[string]*Stage{}},
		Def{Name: "startup_s", Kind: KindMetric, Expr: `stages.startup?.duration`},
		Def{Name: "d", Kind: KindDerived, Expr: `stages.startup?.duration`}, // a derived value may be nil
	)
	if err == nil || !strings.Contains(err.Error(), "metric startup_s: result is nil") {
		t.Fatalf("err = %v, want metric startup_s: result is nil", err)
	}
	if strings.Contains(err.Error(), "derived d") {
		t.Errorf("a nil derived value is an error: %v", err)
	}
	if n := res.Values["startup_s"].Note; !strings.HasPrefix(n, "error: result is nil") {
		t.Errorf("note = %q", n)
	}
}

func TestFormatCheckedAgainstType(t *testing.T) {
	cases := []struct {
		expr, format, err string
	}{
		{`1.5`, "%.2f", ""},
		{`1.5`, "%.3g J", ""},
		{`len(requests)`, "%.0f", ""},
		{`len(requests)`, "%v", ""},
		{`1.5`, "100%% %.1f", ""},
		{`len(requests)`, "%d", "verb %d does not print a number stored as float64"},
		{`1.5`, "%s", "verb %s"},
		{`"x"`, "%.1f", "applies to numbers; this metric is string"},
		{`true`, "%t", "applies to numbers; this metric is bool"},
		{`1.5`, "%.1f %.1f", "exactly one verb"},
		{`1.5`, "kJ", "exactly one verb"},
		{`1.5`, "%.", "ends inside a verb"},
		{`1.5`, "%*f", "not supported"},
	}
	for _, c := range cases {
		t.Run(c.format, func(t *testing.T) {
			_, errs := Compile(Spec{Defs: []Def{{Name: "m", Kind: KindMetric, Expr: c.expr, Format: c.format}}})
			if c.err == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != FieldFormat || !strings.Contains(errs[0].Msg, c.err) {
				t.Fatalf("errors = %v, want one format error containing %q", errs, c.err)
			}
		})
	}
}
