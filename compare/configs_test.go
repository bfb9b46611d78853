package compare

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/doc"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/workflow"
)

// withParams sets run.json parameters on a synthetic run.
func withParams(r Run, kv map[string]any) Run {
	r.Meta.Parameters = map[string]any{"window": 100, "dataset": "chat"}
	for k, v := range kv {
		r.Meta.Parameters[k] = v
	}
	return r
}

// A campaign swept max_tokens over 128 and 256, and ran the 128 point
// twice: runs of one model and engine that differ only in a parameter are
// different configurations, never repetitions.
//
//	a1  max_tokens 128  steady 0.20  full 0.40
//	a2  max_tokens 128  steady 0.30  full 0.60
//	b1  max_tokens 256  steady 0.50  full 0.70
//
// max_tokens 128: n=2, steady median (0.20 + 0.30)/2 = 0.25, min–max
// 0.20–0.30, spread (0.30 − 0.20)/0.25 = 40 %; max_tokens 256: n=1, 0.50.
// (As one configuration the three would read n=3, median 0.30.)
// Steady ranks: 128 → 1, 256 → 2.
func TestSweptParameterIsAConfiguration(t *testing.T) {
	p := builtin(t)
	r := func(id string, maxTokens int, st, full float64) Run {
		return withParams(mk(spec{id: id, scenario: "chat", model: "m", engine: "sim", params: "8e9", steady: st, full: full, tokens: 100}),
			map[string]any{"max_tokens": maxTokens})
	}
	rep := p.Compare([]Run{r("a1", 128, 0.2, 0.4), r("a2", 128, 0.3, 0.6), r("b1", 256, 0.5, 0.7)})
	if !slices.Equal(rep.ConfigurationColumns, []string{"parameters.max_tokens"}) || len(rep.LoadColumns) != 0 {
		t.Fatalf("columns %v, load %v; want [parameters.max_tokens], none", rep.ConfigurationColumns, rep.LoadColumns)
	}
	st := groupOf(t, rep, "chat", "<=50B")
	if len(st.Configs) != 2 {
		t.Fatalf("%d configurations, want 2 (max_tokens 128 and 256): %+v", len(st.Configs), st.Configs)
	}
	c128, c256 := st.Configs[0], st.Configs[1]
	if c128.Configuration[0] != (FieldValue{"parameters.max_tokens", "128"}) || c128.Runs != 2 || c128.Steady.N != 2 ||
		!near(c128.Steady.Median, 0.25) || c128.Steady.Min != 0.2 || c128.Steady.Max != 0.3 || !near(*c128.Steady.SpreadPct, 40) || *c128.SteadyRank != 1 {
		t.Errorf("max_tokens 128: %+v steady %+v", c128, c128.Steady)
	}
	if c256.Configuration[0].Value != "256" || c256.Runs != 1 || c256.Steady.Median != 0.5 || *c256.SteadyRank != 2 {
		t.Errorf("max_tokens 256: %+v steady %+v", c256, c256.Steady)
	}
	var buf bytes.Buffer
	if err := Render(&buf, rep, doc.FormatTable); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"│ max_tokens │", "n=2: 0.2500 (0.2000–0.3000, 40.0 %)", "n=1: 0.5000", "differ in max_tokens are different configurations"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// A run of another model with another max_tokens adds no column for
	// the first model: columns are what differs within a model and engine.
	one := p.Compare([]Run{r("a1", 128, 0.2, 0.4), withParams(mk(spec{id: "o", scenario: "chat", model: "other", engine: "sim", steady: 1, full: 1, tokens: 1}),
		map[string]any{"max_tokens": 512})})
	if len(one.ConfigurationColumns) != 0 {
		t.Errorf("columns %v, want none", one.ConfigurationColumns)
	}
}

// Runs that differ only in the load are load points of one configuration:
// shown in a load column, each point its own row, never repetitions.
// Dataset, request set or engine precision differences are configurations.
func TestLoadPointsAndOtherFields(t *testing.T) {
	p := builtin(t)
	r := func(id string, conc int, st float64, change func(*Run)) Run {
		run := withParams(mk(spec{id: id, scenario: "chat", model: "m", engine: "vllm", steady: st, full: 1, tokens: 100}), map[string]any{"concurrency": conc})
		if change != nil {
			change(&run)
		}
		return run
	}
	rep := p.Compare([]Run{r("c1", 1, 0.5, nil), r("c8", 8, 0.2, nil)})
	if len(rep.ConfigurationColumns) != 0 || !slices.Equal(rep.LoadColumns, []string{"parameters.concurrency"}) {
		t.Fatalf("columns %v, load %v", rep.ConfigurationColumns, rep.LoadColumns)
	}
	if cs := groupOf(t, rep, "chat", UnknownGroup).Configs; len(cs) != 2 || cs[0].Load[0].Value != "8" || cs[1].Load[0].Value != "1" {
		t.Errorf("configs %+v, want two load points (8 ranked first: 0.2 < 0.5)", cs)
	}
	for _, c := range []struct {
		name, field string
		change      func(*Run)
	}{
		{"dataset", "parameters.dataset", func(r *Run) { r.Meta.Parameters["dataset"] = "sharegpt" }},
		{"request set", "request_set.sha256", func(r *Run) { r.Meta.RequestSet.SHA256 = strings.Repeat("be", 32) }},
		{"precision", "engine.precision", func(r *Run) { r.Meta.Engine.Precision = "fp8" }},
	} {
		rep := p.Compare([]Run{r("x", 1, 0.5, nil), r("y", 1, 0.5, c.change)})
		if !slices.Equal(rep.ConfigurationColumns, []string{c.field}) || len(groupOf(t, rep, "chat", UnknownGroup).Configs) != 2 {
			t.Errorf("%s: columns %v, %d configurations; want [%s], 2", c.name, rep.ConfigurationColumns, len(groupOf(t, rep, "chat", UnknownGroup).Configs), c.field)
		}
	}
	// A sha256 shows as its first 12 hex digits.
	rep = p.Compare([]Run{r("x", 1, 0.5, nil), r("y", 1, 0.5, func(r *Run) { r.Meta.RequestSet.SHA256 = strings.Repeat("be", 32) })})
	if v := rep.Runs[1].Configuration[0].Value; v != "bebebebebebe" {
		t.Errorf("sha256 shown as %q, want its first 12 digits", v)
	}
	// Fields outside the configuration (run id, times, host) do not split.
	rep = p.Compare([]Run{r("x", 1, 0.5, nil), r("y", 1, 0.7, func(r *Run) { r.Meta.StartedAt, r.Meta.Host.Hostname = 99, "node7" })})
	if cs := groupOf(t, rep, "chat", UnknownGroup).Configs; len(rep.ConfigurationColumns) != 0 || len(cs) != 1 || cs[0].Runs != 2 {
		t.Errorf("repetitions split: columns %v, configs %+v", rep.ConfigurationColumns, cs)
	}
}

// The full / steady ratio is over the configurations with both values.
// In one size group:
//
//	a  steady 1    full 2
//	b  steady n/a  full 10   (not steady)
//	c  steady 3    full 4
//
// Over a and c: median full (2 + 4)/2 = 3, median steady (1 + 3)/2 = 2 →
// 1.5, over 2 configurations. (Medians over different sets would give
// median full {2, 4, 10} = 4 / 2 = 2.)
func TestRatioOverConfigurationsWithBoth(t *testing.T) {
	p := builtin(t)
	b := spec{id: "b", scenario: "chat", model: "b", engine: "vllm", steady: -1, full: 10, tokens: 1, notSteady: true}
	st := groupOf(t, p.Compare([]Run{
		mk(spec{id: "a", scenario: "chat", model: "a", engine: "vllm", steady: 1, full: 2, tokens: 1}), mk(b),
		mk(spec{id: "c", scenario: "chat", model: "c", engine: "vllm", steady: 3, full: 4, tokens: 1}),
	}), "chat", UnknownGroup)
	if st.Ratio == nil || *st.Ratio != 1.5 || st.RatioConfigs != 2 || *st.MedianFull != 4 || *st.MedianSteady != 2 {
		t.Errorf("ratio %v over %d, medians full %v steady %v; want 1.5 over 2, 4, 2", st.Ratio, st.RatioConfigs, *st.MedianFull, *st.MedianSteady)
	}
	if !slices.Contains(st.Notes, "full / steady over the 2 configuration(s) with both") {
		t.Errorf("notes %v", st.Notes)
	}
}

// Each benchmark-1.5 warn check removes from the comparison what the
// profile declares it invalidates, and nothing else: a failed
// first_token_times_exact keeps the run's J/token, baseline_idle removes
// only what is computed against the baseline.
func TestWarnChecksRemoveWhatTheyInvalidate(t *testing.T) {
	p := builtin(t)
	src, err := profiles.Read("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	l, err := workflow.Load(src, "benchmark-1.5", workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	invalidated := map[string][]string{}
	for _, c := range l.Profile.Checks {
		invalidated[c.Name] = c.Invalidated
		// no_failed_requests is the metric rule failed_requests; the
		// audits of the other boundaries make their own figures n/a.
		if c.Severity == "warn" && !slices.Contains([]string{"no_failed_requests", "power_valid_cpu_dram", "power_valid_node"}, c.Name) && !slices.ContainsFunc(p.Flags, func(f FlagRule) bool { return f.Check == c.Name }) {
			t.Errorf("warn check %s: no rule in the comparison profile names its flag", c.Name)
		}
	}
	for _, c := range []struct {
		check, flag string
		removed     []string
		included    bool
	}{
		{"baseline_idle", "baseline_not_idle", []string{"full", "release"}, true},
		{"counter_agrees_with_power", "counter_disagrees", []string{"steady", "full", "startup", "release"}, true},
		{"scrape_interval_fine", "scrape_too_coarse", []string{"steady", "full", "startup", "release"}, true},
		{"first_token_times_exact", "first_tokens_bounded", []string{}, true},
		{"energy_counter_clean", "counter_glitch", []string{}, true},
		{"steady_state_reached", "not_steady", []string{"steady"}, true},
	} {
		r := mk(spec{id: "r", scenario: "chat", model: "m", engine: "vllm", steady: 0.2, full: 0.4, tokens: 10})
		res := check(false, "warn", c.check+" failed")
		res.Invalidates = invalidated[c.check]
		r.Results.Values[c.check] = res
		r.Results.Order = append(r.Results.Order, c.check)
		rep := p.Compare([]Run{r})
		row := rep.Runs[0]
		if flagNames(row.Flags) != c.flag || !slices.Equal(row.Removed, c.removed) || row.Included != c.included || len(rep.Flagged) != 1 {
			t.Errorf("%s: flags %s, removed %v, included %v; want %s, %v, %v", c.check, flagNames(row.Flags), row.Removed, row.Included, c.flag, c.removed, c.included)
		}
	}
	// A check that declares nothing (an older profile's results): the
	// rule's removes when it has one, else nothing.
	old := &Profile{Metrics: p.Metrics}
	if got := old.removedBy(check(false, "warn", ""), []string{ValueSteady}); !slices.Equal(got, []string{ValueSteady}) {
		t.Errorf("undeclared with a rule: %v", got)
	}
	if got := old.removedBy(check(false, "warn", ""), nil); !slices.Equal(got, []string{ValueNone}) {
		t.Errorf("undeclared without a rule: %v", got)
	}
	if got := old.removedBy(check(false, "exclude", ""), nil); !slices.Equal(got, []string{ValueAll}) {
		t.Errorf("an exclude check: %v", got)
	}
}

// Not applicable: a campaign's excluded combination (given) and a run the
// server refused because its prompts overflow the context appear as n/a
// rows, never as failures, flagged runs or absences.
func TestNotApplicableRows(t *testing.T) {
	p := builtin(t)
	ok := mk(spec{id: "ok", scenario: "long", model: "big", engine: "vllm", steady: 0.2, full: 0.4, tokens: 10})
	overflow := mk(spec{id: "ovf", scenario: "long", model: "small", engine: "vllm", steady: -1, full: -1, tokens: -1})
	overflow.Meta.Status = record.StatusFailed
	overflow.Meta.Reason = "warm-up: 8 of 8 requests failed: http 400: This model's maximum context length is 2048 tokens. However, your request has 9000 input tokens."
	crash := mk(spec{id: "crash", scenario: "long", model: "mid", engine: "vllm", steady: 0.2, full: 0.4, tokens: 10, incomplete: true})
	excluded := NotApplicable{Scenario: "long", Model: "tiny", Engine: "sglang", Setting: []FieldValue{{"max_tokens", "256"}},
		Reason: "excluded by the campaign"}
	rep := p.Compare([]Run{ok, overflow, crash}, excluded)
	if len(rep.NotApplicable) != 2 {
		t.Fatalf("n/a rows %+v, want 2", rep.NotApplicable)
	}
	na := rep.NotApplicable[0] // sorted by model: small, tiny
	if na.RunID != "ovf" || na.Model != "small" || !strings.HasPrefix(na.Reason, "not applicable: the prompts do not fit the model's context") {
		t.Errorf("overflow row %+v", na)
	}
	for _, r := range rep.Runs {
		if r.RunID == "ovf" {
			t.Errorf("the overflow run is a run row: %+v", r)
		}
	}
	for _, f := range rep.Flagged {
		if f.RunID == "ovf" {
			t.Errorf("the overflow run is flagged: %+v", f)
		}
	}
	// a crash for another reason stays a failure
	if len(rep.Flagged) != 1 || rep.Flagged[0].RunID != "crash" {
		t.Errorf("flagged %+v, want the crash only", rep.Flagged)
	}
	var buf bytes.Buffer
	if err := Render(&buf, rep, doc.FormatTable); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Not applicable", "│ tiny ", "max_tokens=256", "excluded by the campaign", "│ n/a "} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	_ = Render(&buf, rep, doc.FormatCSV)
	if !strings.Contains(buf.String(), "not_applicable,long,,tiny,sglang,,setting,max_tokens=256,,excluded by the campaign") {
		t.Errorf("csv lacks the n/a row:\n%s", buf.String())
	}
}

// Runs that differ only in the GPU power limit they applied (run.json's
// gpu_settings) are two configurations with the limit as a column, never
// repetitions of one.
//
//	a1  no limit   steady 0.24
//	a2  no limit   steady 0.26
//	c1  250 W      steady 0.14
//
// default: n=2, median (0.24 + 0.26)/2 = 0.25; 250 W: n=1, 0.14, rank 1.
func TestGPUPowerLimitIsAConfiguration(t *testing.T) {
	p := builtin(t)
	r := func(id, limit string, st float64) Run {
		run := withParams(mk(spec{id: id, scenario: "chat", model: "m", engine: "sim", params: "8e9", steady: st, full: st, tokens: 100}), nil)
		if limit != "" {
			run.Meta.GPUSettings = &record.GPUSettings{PowerLimitW: limit, Controller: "sim"}
		}
		return run
	}
	rep := p.Compare([]Run{r("a1", "", 0.24), r("a2", "", 0.26), r("c1", "250", 0.14)})
	if !slices.Equal(rep.ConfigurationColumns, []string{"gpu_settings.power_limit_w"}) {
		t.Fatalf("columns %v, want [gpu_settings.power_limit_w]", rep.ConfigurationColumns)
	}
	st := groupOf(t, rep, "chat", "<=50B")
	if len(st.Configs) != 2 {
		t.Fatalf("%d configurations, want 2: %+v", len(st.Configs), st.Configs)
	}
	for _, c := range st.Configs {
		switch c.Configuration[0].Value {
		case "-":
			if c.Runs != 2 || !near(c.Steady.Median, 0.25) || *c.SteadyRank != 2 {
				t.Errorf("default: %+v steady %+v", c, c.Steady)
			}
		case "250":
			if c.Runs != 1 || c.Steady.Median != 0.14 || *c.SteadyRank != 1 {
				t.Errorf("250 W: %+v steady %+v", c, c.Steady)
			}
		default:
			t.Errorf("configuration %+v", c.Configuration)
		}
	}
}

// A warn check that no rule of the comparison profile names (a user's
// profile adds one) removes what it declares, flagged by its own name.
func TestUnnamedCheckRemovesWhatItDeclares(t *testing.T) {
	p := builtin(t)
	r := mk(spec{id: "r", scenario: "chat", model: "m", engine: "vllm", steady: 0.2, full: 0.4, tokens: 10})
	res := check(false, "warn", "my check failed")
	res.Invalidates = []string{"startup_energy_j", "ttft_p50_ms"}
	r.Results.Values["my_check"] = res
	r.Results.Order = append(r.Results.Order, "my_check")
	row := p.Compare([]Run{r}).Runs[0]
	if flagNames(row.Flags) != "my_check" || !slices.Equal(row.Removed, []string{"startup"}) || !row.Included {
		t.Errorf("flags %s, removed %v, included %v; want my_check, [startup], included", flagNames(row.Flags), row.Removed, row.Included)
	}
	// declaring nothing: not a finding of the comparison
	res.Invalidates = nil
	r.Results.Values["my_check"] = res
	if row := p.Compare([]Run{r}).Runs[0]; len(row.Flags) != 0 {
		t.Errorf("undeclared: flags %s", flagNames(row.Flags))
	}
}

// Runs on different simulated hardware (engine.extra.sim_hardware) are
// different configurations, never repetitions of one.
func TestSimHardwareIsAConfiguration(t *testing.T) {
	p := builtin(t)
	r := func(id, hw string, st float64) Run {
		run := withParams(mk(spec{id: id, scenario: "chat", model: "m", engine: "sim", params: "8e9", steady: st, full: st, tokens: 100}), nil)
		run.Meta.Engine.Extra = map[string]any{"sim_hardware": hw}
		return run
	}
	rep := p.Compare([]Run{r("a", "h100-sxm/llama-3.1-8b", 0.09), r("b", "h200-sxm/llama-3.1-8b", 0.08)})
	if !slices.Equal(rep.ConfigurationColumns, []string{"engine.extra.sim_hardware"}) {
		t.Fatalf("columns %v, want [engine.extra.sim_hardware]", rep.ConfigurationColumns)
	}
	if st := groupOf(t, rep, "chat", "<=50B"); len(st.Configs) != 2 {
		t.Errorf("%d configurations, want 2", len(st.Configs))
	}
}
