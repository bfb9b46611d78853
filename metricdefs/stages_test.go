package metricdefs

import (
	"context"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// A formula over a stage the run does not have fails with an error naming
// the stage (not a reflect panic message); the other values are kept.
func TestMissingStageError(t *testing.T) {
	d := builtinRun(t)
	delete(d.Stages, "formal")
	prog, errs := Compile(Spec{Defs: []Def{
		{Name: "formal_s", Kind: KindMetric, Expr: `stages.formal.end - stages.formal.start`},
		{Name: "base_s", Kind: KindMetric, Expr: `stages["baseline"].end - stages["baseline"].start`},
	}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	res, err := prog.Evaluate(context.Background(), d, nil)
	want := `metric formal_s: this run has no stage formal (it has: baseline, release); a formula can test for it with "formal" in stages`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	// baseline [0, 2]: 2 s.
	if v := res.Values["base_s"].Value; v != 2.0 {
		t.Errorf("base_s = %v, want 2", v)
	}
}

// Values that read an open stage, directly or through a derived value,
// say they are partial; the others do not.
func TestOpenStagePartial(t *testing.T) {
	run := &record.Run{
		Meta: record.Meta{Stages: []record.Stage{
			{Name: "baseline", Start: 0, End: 2},
			{Name: "formal", Start: 2, Open: true},
		}},
	}
	for i := range 11 {
		run.Power = append(run.Power, record.PowerSample{T: float64(i), Device: "g", PowerW: 100})
	}
	// The formal stage is clamped to the last sample, t = 10.
	if got := run.ClampOpenStages(); len(got) != 1 || got[0] != "formal" || run.Meta.Stages[1].End != 10 {
		t.Fatalf("clamped %v, stages %+v", got, run.Meta.Stages)
	}
	d, err := NewData(run)
	if err != nil {
		t.Fatal(err)
	}
	prog, errs := Compile(Spec{Defs: []Def{
		{Name: "fe", Kind: KindDerived, Expr: `stages.formal.end`},
		{Name: "e_formal", Kind: KindMetric, Expr: `energy(stages.formal.start, fe, "trapz")`},
		{Name: "e_base", Kind: KindMetric, Expr: `energy(stages.baseline.start, stages.baseline.end, "trapz")`},
	}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	res, err := prog.Evaluate(context.Background(), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 100 W over [2, 10]: 800 J, partial; 100 W over [0, 2]: 200 J.
	ef, eb := res.Values["e_formal"], res.Values["e_base"]
	if ef.Value != 800.0 || !strings.Contains(ef.Note, "partial: stage formal had not ended") {
		t.Errorf("e_formal = %+v, want 800 J noted partial", ef)
	}
	if eb.Value != 200.0 || eb.Note != "" {
		t.Errorf("e_base = %+v, want 200 J without a note", eb)
	}
}
