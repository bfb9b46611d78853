package metricdefs

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// builtinRun: one device "g" sampled every second on [0, 10] at a flat
// 100 W with 1e9 B of memory; baseline stage [0, 2], formal [2, 8], release
// [8, 10], engine exited at 9. Its energy counter reads 100·t J (no glitch). Two requests of 40 tokens each: r1 generating
// on [2, 6], r2 on [4, 8] (10 tokens/s each). vLLM ran with --max-num-seqs 8;
// its running batch was scraped at 3 (2), 5 (4) and 9 s (10).
func builtinRun(t *testing.T) *Data {
	t.Helper()
	var power []record.PowerSample
	for i := range 11 {
		power = append(power, record.PowerSample{T: float64(i), Device: "g", PowerW: 100, MemUsedBytes: 1e9, EnergyJ: 100 * float64(i), HasEnergy: true})
	}
	run := &record.Run{
		Meta: record.Meta{
			RunID:  "builtins",
			Stages: []record.Stage{{Name: "baseline", Start: 0, End: 2}, {Name: "formal", Start: 2, End: 8}, {Name: "release", Start: 8, End: 10}},
			Events: []record.Event{{Name: "engine_exited", T: 9}},
			Engine: record.EngineInfo{Kind: "vllm", Command: []string{"vllm", "serve", "m", "--max-num-seqs", "8"}},
		},
		EngineMetrics: []record.EngineMetric{{T: 3, Name: "vllm:num_requests_running", Value: 2},
			{T: 5, Name: "vllm:num_requests_running", Value: 4}, {T: 9, Name: "vllm:num_requests_running", Value: 10}},
		Power: power,
		Requests: []record.Request{
			{ID: "r1", Phase: "formal", OK: true, SentAt: 1.5, FirstTokenAt: 2, DoneAt: 6, OutputTokens: 40},
			{ID: "r2", Phase: "formal", OK: true, SentAt: 3.5, FirstTokenAt: 4, DoneAt: 8, OutputTokens: 40},
		},
	}
	d, err := NewData(run)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestBuiltinsCallMeasure checks that each built-in passes its arguments
// to package measure and returns its result, on values worked out by hand.
func TestBuiltinsCallMeasure(t *testing.T) {
	metrics := []struct {
		name, expr string
		want       float64
	}{
		// 100 W × 6 s.
		{"energy", `energy(stages.formal.start, stages.formal.end, "trapz")`, 600},
		// 100 W × 2 s.
		{"device_energy", `device_energy("g", 8, 10, "auto")`, 200},
		{"mean_power", `mean_power(0, 10)`, 100},
		{"baseline_power", `baseline_power()`, 100},
		// Pieces [2,4] r1 alone: 200 J; [4,6] r1 and r2 at 10 tokens/s each:
		// 100 J each; [6,8] r2 alone: 200 J. r1: 300 J / 40 = 7.5 J/token.
		{"attribute", `attribute(requests, "trapz")[0].energy_j`, 300},
		{"attribute_jpt", `attribute(requests, "trapz")[1].j_per_token`, 7.5},
		// Residency, from sent_at: [1.5,3.5] r1 alone: 200 J; [3.5,6] r1 and
		// r2: 250 J, 125 J each; [6,8] r2 alone: 200 J. r1: 325 J, r2 325 J
		// / 40 tokens = 8.125 J/token.
		{"attribute_resident", `attribute_resident(requests, "trapz")[0].energy_j`, 325},
		{"attribute_resident_jpt", `attribute_resident(requests, "trapz")[1].j_per_token`, 8.125},
		// One window of 2 with J/token [7.5, 7.5]: CV 0, reached at request
		// 1 (r1, done at 6); span from r1's completion: [6, 8]: 200 J over
		// r2's 20 tokens of [6, 8] (40 spread over [4, 8]) = 10 J/token.
		{"steady", `steady_state(requests, 2, 0.03, 1, stages.formal.end, "trapz").j_per_token`, 10},
		{"steady_start", `steady_state(requests, 2, 0.03, 1, stages.formal.end, "trapz").start`, 6},
		{"steady_start_first_completion", `steady_state(requests, 2, 0.03, 1, stages.formal.end, "trapz", "first_completion").start`, 6},
		// The earlier reading: from the earliest first token (r1's, 2):
		// [2, 8]: 600 J over 80 tokens.
		{"steady_earliest", `steady_state(requests, 2, 0.03, 1, stages.formal.end, "trapz", "earliest_first_token").j_per_token`, 7.5},
		{"steady_earliest_start", `steady_state(requests, 2, 0.03, 1, stages.formal.end, "trapz", "earliest_first_token").start`, 2},
		// The parameters searched with come back with the result.
		{"steady_window", `float(steady_state(requests, 2, 0.03, 1, stages.formal.end, "trapz").window)`, 2},
		{"steady_cv_max", `steady_state(requests, 2, 0.03, 1, stages.formal.end, "trapz").cv_max`, 0.03},
		// Power in band (flat at its baseline) from 8, held 1 s up to 9 ≤ 10;
		// memory at its baseline level (1e9) at 8; exit at 9 → max = 9.
		{"release", `release(8, 10, 0.05, 1, 0).complete_at`, 9},
		{"release_power", `release(8, 10, 0.05, 1, 0).power_settled_at`, 8},
		// Sorted [1,2,3,4]: rank 0.25·3 = 0.75 → 1 + 0.75 = 1.75.
		{"percentile", `percentile([4, 1, 3, 2], 25)`, 1.75},
		{"median", `median([4, 1, 3, 2])`, 2.5},
		{"mean", `mean([1, 2, 3, 4])`, 2.5},
		// Deviations ±1.5, ±0.5: Σd² = 5; population 5/4, sample 5/3.
		{"std", `std([1, 2, 3, 4])`, math.Sqrt(1.25)},
		{"sample_std", `sample_std([1, 2, 3, 4])`, math.Sqrt(5.0 / 3)},
		{"cv", `cv([1, 2, 3, 4])`, math.Sqrt(1.25) / 2.5},
		// Group a [1, 3]: variance 1; b [10, 14]: variance 4; √((1+4)/2).
		{"pooled_std", `pooled_std([1, 10, 3, 14], ["a", "b", "a", "b"])`, math.Sqrt(2.5)},
		{"spearman", `spearman([1, 2, 3], [30, 20, 10])`, -1},
		// [3, 7]: r1 (uniform on [2, 6]) has 3 of its 4 s inside: ¾; r2 (on
		// [4, 8]) 3 of 4 s: ¾; together 1.5.
		{"requests_in", `requests_in(requests, 3, 7)`, 1.5},
		// The same ¾ of each one's 40 tokens: 30 + 30.
		{"tokens_in", `tokens_in(requests, 3, 7)`, 60},
		// Scrapes inside [2, 8] at 3 and 5 s: (2 + 4) / 2.
		{"engine_state", `engine_state(2, 8).running_mean`, 3},
		{"engine_batch_limit", `engine_batch_limit().limit`, 8},
		// [1, 3] (n = 3): s = 1, t(0.975, 2) = 4.303; 4.303 · 1 / √3.
		{"mean_ci95", `mean_ci95([1, 2, 3])`, 4.303 / math.Sqrt(3)},
		// samples at t = 2, 3, 4, all 100 W: three readings.
		{"power_readings", `float(power_readings(2, 4))`, 3},
		// one device at 1e9 B.
		{"max_mem", `max_mem(2, 8)`, 1e9},
		// Counter 800 - 200 = 600 J = trapezoid 100 W × 6 s: no difference.
		{"counter_vs_trapz", `counter_vs_trapz(2, 8).counter_j`, 600},
		{"counter_vs_trapz_diff", `counter_vs_trapz(2, 8).rel_diff`, 0},
		{"counter_glitches", `float(len(counter_glitches()))`, 0},
		// Samples every 1 s over formal [2, 8] (the absent stage is
		// skipped): largest gap 1 s; 100 W is above a 50 W sanity bound
		// (no power limit known): one finding, the run's only reason.
		{"power_audit", `power_audit(["formal", "nosuch"], 3, 1.2, 50).max_gap_s`, 1},
		{"power_audit_bounds", `float(len(power_audit(["formal"], 3, 1.2, 50).bounds))`, 1},
		{"power_audit_reasons", `float(len(power_audit(["formal"], 3, 1.2, 500).reasons))`, 0},
		// The device has no domain in run.json: a GPU. domain_energy of
		// the GPUs is energy(); the CPU absent counts 0 (100 W × 6 s).
		{"domain_energy", `domain_energy(["gpu", "cpu"], 2, 8, "trapz")`, 600},
		{"domain_mean_power", `domain_mean_power(["gpu"], 0, 10)`, 100},
		{"domain_power_audit", `float(len(domain_power_audit(["gpu"], ["formal"], 3, 1.2, 50).bounds))`, 1},
		// Neither request recorded token_times: no gap to measure (the
		// maths are tested in measure.TestITL).
		{"itl", `len(itl(requests)) * 1.0`, 0},
		// Baseline [0, 2]: samples at 0, 1, 2 all 100 W: CV 0.
		{"baseline_cv", `baseline_cv()["g"]`, 0},
		// 1e9 B / 2^20 B/MiB = 953.67431640625 MiB.
		{"baseline_mem", `baseline_mem()["g"]`, 1e9 / 1048576},
		// No clock_sync in this run: nothing to audit (the rule is tested
		// in TestClockAudit).
		{"clock_audit", `float(clock_audit(0.05).sources)`, 0},
	}
	var defs []Def
	for _, m := range metrics {
		defs = append(defs, Def{Name: "m_" + m.name, Kind: KindMetric, Expr: m.expr})
	}
	defs = append(defs,
		Def{Name: "steady_reached", Kind: KindCheck, Expr: `steady_state(requests, 2, 0.03, 1, stages.formal.end, "trapz").reached`, Severity: SeverityWarn},
		Def{Name: "release_closed", Kind: KindCheck, Expr: `release(8, 10, 0.05, 1, 0).closed`, Severity: SeverityWarn},
	)
	prog, errs := Compile(Spec{Defs: defs})
	if len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	res, err := prog.Evaluate(context.Background(), builtinRun(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range metrics {
		r := res.Values["m_"+m.name]
		got, ok := r.Value.(float64)
		if !ok || math.Abs(got-m.want) > 1e-9*max(1, math.Abs(m.want)) {
			t.Errorf("%s = %v (%s), want %v", m.name, r.Value, r.Note, m.want)
		}
	}
	// Every built-in is called above.
	for _, b := range Builtins() {
		called := false
		for _, d := range defs {
			called = called || strings.Contains(d.Expr, b.Name+"(")
		}
		if !called {
			t.Errorf("built-in %s is not tested here", b.Name)
		}
	}
	for _, c := range []string{"steady_reached", "release_closed"} {
		if p := res.Values[c].Passed; p == nil || !*p {
			t.Errorf("check %s did not pass: %+v", c, res.Values[c])
		}
	}
}

// TestSteadyStateSpanStartArgument: the span's start is read from the
// seventh argument; the result says which reading it used, and a name
// other than the two readings is an error that lists them.
func TestSteadyStateSpanStartArgument(t *testing.T) {
	res, err := evalDefs(t, builtinRun(t),
		Def{Name: "default", Kind: KindDerived, Expr: `steady_state(requests, 2, 0.03, 1, stages.formal.end, "trapz").span_start`},
		Def{Name: "earliest", Kind: KindDerived, Expr: `steady_state(requests, 2, 0.03, 1, stages.formal.end, "trapz", "earliest_first_token").span_start`},
		Def{Name: "bad", Kind: KindDerived, Expr: `steady_state(requests, 2, 0.03, 1, stages.formal.end, "trapz", "first_token")`},
	)
	if err == nil || !strings.Contains(err.Error(), `steady_state: span start "first_token" is not first_completion or earliest_first_token`) {
		t.Errorf("error %v, want one naming the span start and the two readings", err)
	}
	if got := res.Values["default"].Value; got != "first_completion" {
		t.Errorf("default span_start = %v, want first_completion", got)
	}
	if got := res.Values["earliest"].Value; got != "earliest_first_token" {
		t.Errorf("span_start = %v, want earliest_first_token", got)
	}
}
