package metricdefs

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// itlRun has n formal requests of 2–40 chunks each (some with token
// counts); bad gives the last one a token time before the one before it.
func itlRun(t *testing.T, n int, bad bool) *Data {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	run := &record.Run{Meta: record.Meta{RunID: "itl"}}
	for i := range n {
		r := record.Request{ID: fmt.Sprint(i), Phase: "formal", OK: i%7 != 3}
		tm := float64(i)
		withCounts := i%3 == 0
		for range 2 + rng.IntN(39) {
			r.TokenTimes = append(r.TokenTimes, tm)
			if withCounts {
				r.TokenCounts = append(r.TokenCounts, rng.IntN(3))
			}
			tm += 0.01 + 0.02*rng.Float64()
		}
		run.Requests = append(run.Requests, r)
	}
	if bad {
		last := &run.Requests[n-1]
		last.OK = true
		last.TokenTimes[1] = last.TokenTimes[0] - 1
	}
	d, err := NewData(run)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// itlDefs uses itl_s only as percentile, median, mean and len do, which
// makes it lazy; extra defines more.
func itlDefs(extra ...Def) []Def {
	return append([]Def{
		{Name: "formal", Kind: KindDerived, Expr: `filter(requests, .phase == "formal")`},
		{Name: "itl_s", Kind: KindDerived, Expr: `itl(formal)`},
		{Name: "p50_ms", Kind: KindMetric, Expr: `percentile(itl_s, 50) * 1000`, When: `len(itl_s) > 0`},
		{Name: "p99", Kind: KindMetric, Expr: `itl_s | percentile(99)`},
		{Name: "p_bad", Kind: KindMetric, Expr: `percentile(itl_s, 150)`},
		{Name: "med", Kind: KindMetric, Expr: `median(itl_s)`},
		{Name: "avg", Kind: KindMetric, Expr: `mean(itl_s)`},
		{Name: "n", Kind: KindMetric, Expr: `len(itl_s)`},
		{Name: "has_itl", Kind: KindCheck, Expr: `len(itl_s) > 0`, Severity: SeverityWarn, Detail: `string(len(itl_s))`},
	}, extra...)
}

func compileITL(t *testing.T, defs []Def) (*Program, reflect.Type) {
	t.Helper()
	prog, errs := Compile(Spec{Defs: defs})
	if len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	return prog, prog.envType.Field(prog.fields["itl_s"]).Type
}

// A lazy ITL gives every result, note and error that the list gives.
func TestLazyITLSameResults(t *testing.T) {
	listType := reflect.TypeOf([]float64(nil))
	for _, tc := range []struct {
		name string
		n    int
		bad  bool
	}{
		{"no request", 0, false},
		{"short list", 2, false},
		{"long list", 400, false},
		{"bad token times", 50, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lazy, lt := compileITL(t, itlDefs())
			// An index makes itl_s the list in the other program.
			list, lst := compileITL(t, itlDefs(Def{Name: "first", Kind: KindDerived, Expr: `itl_s[0]`, When: `len(itl_s) > 0`}))
			if lt != itlValuesType || lst != listType {
				t.Fatalf("itl_s is %v and %v, want %v and %v", lt, lst, itlValuesType, listType)
			}
			d := itlRun(t, tc.n, tc.bad)
			lr, lerr := lazy.Evaluate(context.Background(), d, nil)
			rr, rerr := list.Evaluate(context.Background(), d, nil)
			if (lerr == nil) != (rerr == nil) {
				t.Fatalf("errors: lazy %v, list %v", lerr, rerr)
			}
			for _, name := range lazy.Order() {
				got, _ := json.Marshal(lr.Values[name.Name])
				want, _ := json.Marshal(rr.Values[name.Name])
				if string(got) != string(want) {
					t.Errorf("%s: lazy %s, list %s", name.Name, got, want)
				}
			}
			// Longer than results.json stores, kept whole in memory (a list
			// of numbers: topValue).
			if l, ok := lr.Values["itl_s"].Value.([]any); tc.n == 400 && (!ok || len(l) <= maxListInResults) {
				t.Errorf("itl_s of the long run: %T, want a list of more than %d numbers", lr.Values["itl_s"].Value, maxListInResults)
			}
		})
	}
}

// Any use other than the list argument of percentile, median, mean or
// len keeps the list.
func TestLazyITLOnlyForItsUses(t *testing.T) {
	for _, extra := range []string{
		`map(itl_s, # * 1000)`,
		`itl_s[0]`,
		`sum(itl_s)`,
		`percentile(map(itl_s, #), 50)`,
		`$env.itl_s`,
		`let y = itl_s; len(y)`,
		`count(itl_s, # > 0)`,
		`std(itl_s)`,
	} {
		_, typ := compileITL(t, itlDefs(Def{Name: "other", Kind: KindDerived, Expr: extra}))
		if typ == itlValuesType {
			t.Errorf("with %s, itl_s is lazy", extra)
		}
	}
	// A definition that is more than itl(x) is not lazy either.
	defs := itlDefs()
	defs[1].Expr = `itl(formal) ?? []`
	if _, typ := compileITL(t, defs); typ == itlValuesType {
		t.Errorf("itl(formal) ?? [] is lazy")
	}
}

// A profile with an error reports it as it would without the lazy ITL.
func TestLazyITLCompileErrors(t *testing.T) {
	for _, bad := range []string{`percentile(itl_s, "x")`, `mean(itl_s, 1)`, `len(itl_s, 2)`} {
		defs := itlDefs(Def{Name: "bad", Kind: KindMetric, Expr: bad})
		_, errs := Compile(Spec{Defs: defs})
		_, want, _ := compile(Spec{Defs: defs}, false)
		if len(errs) == 0 || fmt.Sprint(errs) != fmt.Sprint(want) {
			t.Errorf("%s: errors %v, want %v", bad, errs, want)
		}
	}
}

// The percentiles a profile asks of a lazy ITL by number are its hint
// (found together): those of percentile (also through a pipe) and
// median's 50, sorted and without repeats; not those of another list,
// nor a percentile that is not a number written in the formula.
func TestLazyITLCandidatesPercentiles(t *testing.T) {
	defs := itlDefs(
		Def{Name: "again", Kind: KindMetric, Expr: `percentile(itl_s, 99) + percentile(itl_s, 0.5)`},
		Def{Name: "param", Kind: KindMetric, Expr: `percentile(itl_s, formal[0].output_tokens)`},
		Def{Name: "other", Kind: KindMetric, Expr: `percentile(map(formal, .sent_at), 42)`},
	)
	var list []*compiled
	for _, d := range defs {
		list = append(list, &compiled{Def: d})
	}
	got := lazyITLCandidates(list)
	want := map[string][]float64{"itl_s": {0.5, 50, 99, 150}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lazyITLCandidates = %v; want %v", got, want)
	}
}
