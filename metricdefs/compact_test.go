package metricdefs

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// compactN is a run long enough for its derived lists to be held
// compactly: compactMin + 1000 requests.
const compactN = compactMin + 1000

// compactRun is compactN successful formal requests, request i sent at 0
// with its first token at i s and 2 output tokens: ttft (below) is
// 0, 1, …, compactN-1.
func compactRun(t *testing.T, n int) *Data {
	t.Helper()
	run := &record.Run{Meta: record.Meta{RunID: "compact"}}
	for i := range n {
		run.Requests = append(run.Requests, record.Request{ID: "r", Phase: "formal", OK: true, FirstTokenAt: float64(i), DoneAt: float64(i) + 1, OutputTokens: 2})
	}
	d, err := NewData(run)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCompactList(t *testing.T) {
	long := func(f func(i int) any) []any {
		xs := make([]any, compactN)
		for i := range xs {
			xs[i] = f(i)
		}
		return xs
	}
	req := &record.Request{}
	for _, tc := range []struct {
		name string
		in   any
		want reflect.Type
	}{
		{"floats", long(func(i int) any { return float64(i) }), reflect.TypeOf([]float64{})},
		{"requests", long(func(int) any { return req }), reflect.TypeOf([]*record.Request{})},
		{"short floats", []any{1.0, 2.0}, anyListType},
		{"ints stay", long(func(i int) any { return i }), anyListType},
		{"a string among floats", long(func(i int) any {
			if i == compactN-1 {
				return "x"
			}
			return 1.0
		}), anyListType},
		{"an Inf among floats", long(func(i int) any {
			if i == 7 {
				return math.Inf(1)
			}
			return 1.0
		}), anyListType},
		{"a nil request", long(func(i int) any {
			if i == 3 {
				return (*record.Request)(nil)
			}
			return req
		}), anyListType},
	} {
		got := compactList(tc.in)
		if reflect.TypeOf(got) != tc.want {
			t.Errorf("%s: %T, want %s", tc.name, got, tc.want)
			continue
		}
		back, _ := anyList(got)
		if !reflect.DeepEqual(back, tc.in) {
			t.Errorf("%s: anyList(compactList(x)) is not x", tc.name)
		}
	}
}

// compactSpec is derived lists typed []interface{} and formulas reading
// them with every built-in that takes a list; ref_* are the same lists
// made again inside a formula (never held, so a []any).
var compactSpec = []Def{
	{Name: "formal", Kind: KindDerived, Expr: `filter(requests, .phase == "formal" && .ok)`},
	{Name: "ttft", Kind: KindDerived, Expr: `map(formal, .first_token_at - .sent_at)`},
	{Name: "x_n", Kind: KindMetric, Expr: `len(ttft)`},
	{Name: "x_n_formal", Kind: KindMetric, Expr: `len(formal)`},
	{Name: "x_sum", Kind: KindMetric, Expr: `sum(ttft)`},
	{Name: "x_sum_pred", Kind: KindMetric, Expr: `sum(ttft, # * 2)`},
	{Name: "x_tokens", Kind: KindMetric, Expr: `sum(formal, .output_tokens)`},
	{Name: "x_mean", Kind: KindMetric, Expr: `mean(ttft)`},
	{Name: "x_median", Kind: KindMetric, Expr: `median(ttft)`},
	{Name: "x_p50", Kind: KindMetric, Expr: `percentile(ttft, 50)`},
	{Name: "x_max", Kind: KindMetric, Expr: `max(ttft)`},
	{Name: "x_min", Kind: KindMetric, Expr: `min(ttft)`},
	{Name: "x_first", Kind: KindMetric, Expr: `first(ttft)`},
	{Name: "x_last", Kind: KindMetric, Expr: `last(ttft)`},
	{Name: "x_index", Kind: KindMetric, Expr: `ttft[10]`},
	{Name: "x_index_neg", Kind: KindMetric, Expr: `ttft[-1]`},
	{Name: "x_slice", Kind: KindMetric, Expr: `len(ttft[10:20])`},
	{Name: "x_count", Kind: KindMetric, Expr: `count(ttft, # >= 5000)`},
	{Name: "x_sorted_desc", Kind: KindMetric, Expr: `sort(ttft, "desc")[0]`},
	{Name: "x_sort_by", Kind: KindMetric, Expr: `sortBy(formal, -.first_token_at)[0].first_token_at`},
	{Name: "x_reverse", Kind: KindMetric, Expr: `reverse(ttft)[0]`},
	{Name: "x_concat", Kind: KindMetric, Expr: `len(concat(ttft, formal))`},
	{Name: "x_uniq", Kind: KindMetric, Expr: `len(uniq(take(ttft, 20)))`},
	{Name: "x_reduce", Kind: KindMetric, Expr: `reduce(take(ttft, 4), #acc + #, 0.0)`},
	{Name: "x_group", Kind: KindMetric, Expr: `len(groupBy(formal, .output_tokens))`},
	{Name: "x_found", Kind: KindMetric, Expr: `find(formal, .first_token_at == 7).first_token_at`},
	{Name: "x_std", Kind: KindMetric, Expr: `std(take(ttft, 3))`},
	{Name: "x_itl_n", Kind: KindMetric, Expr: `len(itl(formal))`},
	{Name: "x_all", Kind: KindCheck, Severity: SeverityWarn, Expr: `all(ttft, # >= 0) && any(ttft, # == 5) && none(ttft, # < 0) && one(ttft, # == 0)`},
	{Name: "x_in", Kind: KindCheck, Severity: SeverityWarn, Expr: `5 in ttft && 5.0 in ttft && !(-1 in ttft)`},
	{Name: "x_not_nil", Kind: KindCheck, Severity: SeverityWarn, Expr: `ttft != nil && formal != nil && !(ttft == nil) && !(formal == nil)`},
	{Name: "x_eq_lists", Kind: KindCheck, Severity: SeverityWarn, Expr: `ttft == map(formal, .first_token_at - .sent_at) && formal == filter(requests, .phase == "formal" && .ok) && map(formal, .first_token_at - .sent_at) == ttft && !(ttft != ttft) && formal == formal`},
	{Name: "x_take_eq", Kind: KindCheck, Severity: SeverityWarn, Expr: `take(ttft, 3) == [0.0, 1.0, 2.0] && take(formal, 2) == [formal[0], formal[1]]`},
	{Name: "x_eq_any", Kind: KindCheck, Severity: SeverityWarn, Expr: `[formal, 0][0] == filter(requests, .phase == "formal" && .ok) && filter(requests, .ok) == [formal, 0][0] && [0, formal][0] != formal`},
	{Name: "x_pooled", Kind: KindMetric, Expr: `pooled_std(take(ttft, 4), map(take(ttft, 4), # < 2 ? "a" : "b"))`},
	{Name: "x_spearman", Kind: KindMetric, Expr: `spearman(ttft, ttft)`},
}

// Derived lists of a long run are held compactly, and every formula that
// reads them gives what it gives on the []any: figures worked out from
// ttft = 0, 1, …, n-1 (n = compactN = 5096).
func TestCompactDerivedLists(t *testing.T) {
	prog, errs := Compile(Spec{Defs: compactSpec})
	if len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	for _, name := range []string{"formal", "ttft"} {
		if k := prog.runType.Field(prog.fields[name]).Type.Kind(); k != reflect.Interface {
			t.Errorf("%s is held in a field of kind %s, want interface (compactly held)", name, k)
		}
		if tt := prog.envType.Field(prog.fields[name]).Type; tt != anyListType {
			t.Errorf("%s is compiled as %s, want []interface {}", name, tt)
		}
	}
	res, err := prog.Evaluate(context.Background(), compactRun(t, compactN), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := float64(compactN)
	want := map[string]float64{
		"x_n": n, "x_n_formal": n,
		"x_sum":      n * (n - 1) / 2, // 0 + 1 + … + n-1
		"x_sum_pred": n * (n - 1),
		"x_tokens":   2 * n,
		"x_mean":     (n - 1) / 2, "x_median": (n - 1) / 2, "x_p50": (n - 1) / 2,
		"x_max": n - 1, "x_min": 0, "x_first": 0, "x_last": n - 1, "x_index": 10, "x_index_neg": n - 1,
		"x_slice": 10, "x_count": n - 5000, "x_sorted_desc": n - 1, "x_sort_by": n - 1, "x_reverse": n - 1,
		"x_concat": 2 * n, "x_uniq": 20, "x_reduce": 0 + 1 + 2 + 3, "x_group": 1, "x_found": 7,
		"x_std":      math.Sqrt(2.0 / 3), // of 0, 1, 2: mean 1, variance (1+0+1)/3
		"x_itl_n":    0,                  // no token times
		"x_pooled":   0.5,                // groups {0, 1} and {2, 3}: each variance 1/4
		"x_spearman": 1,
	}
	for name, w := range want {
		r := res.Values[name]
		got, ok := toFloat(r.Value)
		if !ok || math.Abs(got-w) > 1e-12*math.Max(1, math.Abs(w)) {
			t.Errorf("%s = %v (%s), want %v", name, r.Value, r.Note, w)
		}
	}
	for _, name := range []string{"x_all", "x_in", "x_not_nil", "x_eq_lists", "x_take_eq", "x_eq_any"} {
		if r := res.Values[name]; r.Passed == nil || !*r.Passed {
			t.Errorf("check %s: %+v, want passed", name, r)
		}
	}
}

// A formula that fails on a []any list fails the same way on the list
// held compactly: expr's sort and join of requests, a list of numbers
// given as pooled_std's groups, the power audit's stages.
func TestCompactListErrorsAsBefore(t *testing.T) {
	defs := []Def{
		{Name: "formal", Kind: KindDerived, Expr: `filter(requests, .ok)`},
		{Name: "ttft", Kind: KindDerived, Expr: `map(formal, .first_token_at - .sent_at)`},
		{Name: "sorted", Kind: KindMetric, Expr: `len(sort(formal))`},
		{Name: "joined", Kind: KindMetric, Expr: `join(ttft)`},
		{Name: "grouped", Kind: KindMetric, Expr: `pooled_std(ttft, ttft)`},
		// The list through a value of unknown type.
		{Name: "sorted_any", Kind: KindMetric, Expr: `len(sort([formal, 0][0]))`},
		{Name: "grouped_any", Kind: KindMetric, Expr: `pooled_std(ttft, [ttft, 0][0])`},
	}
	prog, errs := Compile(Spec{Defs: defs})
	if len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	short, errShort := prog.Evaluate(context.Background(), compactRun(t, 10), nil)
	long, errLong := prog.Evaluate(context.Background(), compactRun(t, compactN), nil)
	if errShort == nil || errLong == nil {
		t.Fatalf("errors: %v / %v, want both to fail", errShort, errLong)
	}
	for _, name := range []string{"sorted", "joined", "grouped", "sorted_any", "grouped_any"} {
		s, l := short.Values[name], long.Values[name]
		if !strings.HasPrefix(s.Note, "error") || s.Note != l.Note {
			t.Errorf("%s: %q on 10 requests, %q on %d; want the same error", name, s.Note, l.Note, compactN)
		}
	}
}

// A profile with a type error on a derived list is refused at compile
// time, naming the definition, as before (the list is compiled as
// []interface{}).
func TestCompactListTypeErrorsAtCompile(t *testing.T) {
	for _, expr := range []string{`ttft + 1`, `ttft.foo`, `len(ttft) + "a"`, `ttft > 3`} {
		_, errs := Compile(Spec{Defs: []Def{
			{Name: "ttft", Kind: KindDerived, Expr: `map(requests, .sent_at)`},
			{Name: "bad", Kind: KindMetric, Expr: expr},
		}})
		if len(errs) == 0 || errs[0].Def != "bad" {
			t.Errorf("%s: errors %v, want one naming bad", expr, errs)
		}
	}
}
