package report

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// llmdSchema ports the rules of llm-d's Benchmark Report v0.2 that an
// export by WriteLLMD can touch, as written in llm-d/llm-d-benchmark
// (commit 8bc9f1ddd873a24f1657d6cca2e0d0fb6947dd36):
// llmdbenchmark/analysis/benchmark_report/br_v0_2_json_schema.json (the
// "required" list and "properties" of each $defs entry; every object
// there is "additionalProperties": false except Observability and
// Generic) and the units each field allows, from the check_units
// validators of schema_v0_2.py with the unit lists of base.py
// (UNITS_QUANTITY = count, pixels; UNITS_TIME = ms, s;
// UNITS_GEN_LATENCY = ms/token, s/token; UNITS_GEN_THROUGHPUT = tokens/s;
// UNITS_REQUEST_THROUGHPUT = queries/s; UNITS_PORTION = percent,
// fraction; UNITS_POWER = Watts).
//
// A field's rule: string, int>=N, number, number>0, number>=0,
// date-time, enum:a|b, const:x, obj:DEF, arr:DEF, strings (a list of
// strings), any (not checked further), stats:UNIT|UNIT (a Statistics of
// those units).
type llmdDef struct {
	required []string
	fields   map[string]string
	open     bool // additionalProperties allowed
}

var llmdSchema = map[string]llmdDef{
	"BenchmarkReport": {[]string{"run", "results"}, map[string]string{
		"version": "string", "run": "obj:Run", "scenario": "obj:Scenario", "results": "obj:Results"}, false},
	"Run": {[]string{"uid"}, map[string]string{"uid": "string", "eid": "string", "cid": "string", "pid": "string",
		"time": "obj:RunTime", "user": "string", "description": "string", "keywords": "strings"}, false},
	"RunTime":  {nil, map[string]string{"start": "date-time", "end": "date-time", "duration": "string"}, false},
	"Scenario": {nil, map[string]string{"stack": "arr:Component", "load": "obj:Load"}, false},
	"Component": {[]string{"metadata", "standardized", "native"}, map[string]string{
		"metadata": "obj:ComponentMetadata", "standardized": "obj:InferenceEngine", "native": "obj:ComponentNative"}, false},
	"ComponentMetadata": {[]string{"label", "cfg_id"}, map[string]string{
		"schema_version": "string", "label": "string", "cfg_id": "string", "description": "string"}, false},
	"InferenceEngine": {[]string{"kind", "tool", "tool_version", "role", "replicas", "model", "accelerator"}, map[string]string{
		"kind": "const:inference_engine", "tool": "string", "tool_version": "string", "role": "enum:replica|prefill|decode",
		"replicas": "int>=1", "model": "obj:InferenceEngineModel", "accelerator": "obj:InferenceEngineAccelerator"}, false},
	"InferenceEngineModel": {[]string{"name"}, map[string]string{"name": "string"}, false},
	"InferenceEngineAccelerator": {[]string{"model", "count", "parallelism"}, map[string]string{
		"model": "string", "count": "int>=0", "parallelism": "obj:InferenceEngineParallelism"}, false},
	"InferenceEngineParallelism": {nil, map[string]string{"tp": "int>=0", "dp": "int>=0", "dp_local": "int>=0",
		"workers": "int>=0", "ep": "int>=1", "pp": "int>=1"}, false},
	"ComponentNative": {nil, map[string]string{"args": "any", "envars": "any", "config": "any"}, false},
	"Load": {[]string{"metadata", "standardized", "native"}, map[string]string{
		"metadata": "obj:LoadMetadata", "standardized": "obj:LoadStandardized", "native": "obj:LoadNative"}, false},
	"LoadMetadata": {nil, map[string]string{"schema_version": "string", "cfg_id": "string", "description": "string"}, false},
	"LoadNative":   {nil, map[string]string{"args": "any", "envars": "any", "config": "any"}, false},
	"LoadStandardized": {[]string{"tool", "tool_version", "source", "input_seq_len"}, map[string]string{
		"tool": "string", "tool_version": "string", "parallelism": "int>=1", "source": "enum:random|sampled|unknown",
		"stage": "int>=0", "input_seq_len": "obj:SequenceLength", "output_seq_len": "obj:SequenceLength",
		"prefix": "any", "multi_turn": "any", "rate_qps": "number>0", "concurrency": "number>=1"}, false},
	"SequenceLength": {[]string{"distribution", "value"}, map[string]string{
		"distribution": "enum:fixed|gaussian|uniform|other", "value": "number>=0", "std_dev": "number>=0",
		"min": "int>=0", "max": "int>=1"}, false},
	"Results": {nil, map[string]string{"request_performance": "obj:RequestPerformance", "observability": "obj:Observability",
		"profiling": "any", "component_health": "any"}, false},
	"RequestPerformance": {nil, map[string]string{"aggregate": "obj:AggregateRequestPerformance", "time_series": "any"}, false},
	"AggregateRequestPerformance": {nil, map[string]string{"requests": "obj:AggregateRequests",
		"latency": "obj:AggregateLatency", "throughput": "obj:AggregateThroughput"}, false},
	"AggregateRequests": {[]string{"total"}, map[string]string{"total": "int>=0", "failures": "int>=0", "incomplete": "int>=0",
		"input_length": "stats:count|pixels", "output_length": "stats:count|pixels"}, false},
	"AggregateLatency": {nil, map[string]string{"time_to_first_token": "stats:ms|s",
		"normalized_time_per_output_token": "stats:ms/token|s/token", "time_per_output_token": "stats:ms/token|s/token",
		"inter_token_latency": "stats:ms/token|s/token", "request_latency": "stats:ms|s"}, false},
	"AggregateThroughput": {nil, map[string]string{"input_token_rate": "stats:tokens/s", "output_token_rate": "stats:tokens/s",
		"total_token_rate": "stats:tokens/s", "request_rate": "stats:queries/s"}, false},
	"Observability": {nil, map[string]string{"components": "arr:ComponentObservability", "drop_rate": "any",
		"pod_startup_times": "any", "replica_status": "any"}, true},
	"ComponentObservability": {[]string{"component_label"}, map[string]string{"component_label": "string",
		"replica_id": "string", "aggregate": "obj:ResourceMetrics", "time_series": "any", "raw_data_path": "string", "graph_path": "string"}, false},
	"ResourceMetrics": {nil, map[string]string{"kv_cache_usage": "stats:percent|fraction", "cache_hit_rate": "stats:percent|fraction",
		"gpu_cache_usage": "stats:percent|fraction", "cpu_cache_usage": "stats:percent|fraction",
		"gpu_memory_usage": "any", "cpu_memory_usage": "any", "storage_usage": "any",
		"gpu_utilization": "stats:percent|fraction", "cpu_utilization": "stats:percent|fraction",
		"power_consumption": "stats:Watts", "running_requests": "stats:count|pixels", "waiting_requests": "stats:count|pixels",
		"swapped_requests": "stats:count|pixels", "preemptions": "stats:count|pixels"}, false},
	"Statistics": {[]string{"units", "mean"}, map[string]string{"units": "string", "mean": "number", "mode": "number",
		"stddev": "number>=0", "min": "number", "p0p1": "number", "p1": "number", "p5": "number", "p10": "number",
		"p25": "number", "p50": "number", "p75": "number", "p90": "number", "p95": "number", "p99": "number",
		"p99p9": "number", "max": "number"}, false},
}

// llmdUnits is the schema's Units enum (base.py Units).
var llmdUnits = strings.Split("count|pixels|percent|fraction|ratio|ms|s|bytes|MB|GB|TB|MiB|GiB|TiB|Mbit/s|Gbit/s|Tbit/s|GiB/s|MB/s|GB/s|TB/s|ms/token|s/token|tokens/s|queries/s|images/s|videos/s|audios/s|Watts", "|")

// checkLLMD checks a document against llmdSchema and returns what breaks
// a rule, each with its JSON path.
func checkLLMD(doc any) []string {
	var errs []string
	checkDef(&errs, "", "BenchmarkReport", doc)
	return errs
}

func checkDef(errs *[]string, path, def string, v any) {
	d := llmdSchema[def]
	obj, ok := v.(map[string]any)
	if !ok {
		*errs = append(*errs, fmt.Sprintf("%s: %s must be an object", path, def))
		return
	}
	for _, r := range d.required {
		if _, ok := obj[r]; !ok {
			*errs = append(*errs, fmt.Sprintf("%s: required field %q missing (%s)", path, r, def))
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rule, ok := d.fields[k]
		if !ok {
			if !d.open {
				*errs = append(*errs, fmt.Sprintf("%s.%s: %s has no field %q", path, k, def, k))
			}
			continue
		}
		checkField(errs, path+"."+k, rule, obj[k])
	}
}

func checkField(errs *[]string, path, rule string, v any) {
	bad := func(want string) { *errs = append(*errs, fmt.Sprintf("%s: %v is not %s", path, v, want)) }
	kind, arg, _ := strings.Cut(rule, ":")
	f, isNum := v.(float64)
	switch {
	case rule == "any":
	case rule == "string":
		if _, ok := v.(string); !ok {
			bad("a string")
		}
	case rule == "strings":
		l, ok := v.([]any)
		for _, x := range l {
			if _, s := x.(string); !s {
				ok = false
			}
		}
		if !ok {
			bad("a list of strings")
		}
	case rule == "date-time":
		if s, ok := v.(string); !ok {
			bad("a date-time")
		} else if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			bad("an RFC 3339 date-time")
		}
	case strings.HasPrefix(rule, "int>="):
		lo := map[string]float64{"int>=0": 0, "int>=1": 1}[rule]
		if !isNum || f != math.Trunc(f) || f < lo {
			bad("an integer " + strings.TrimPrefix(rule, "int"))
		}
	case rule == "number":
		if !isNum {
			bad("a number")
		}
	case rule == "number>0":
		if !isNum || f <= 0 {
			bad("a number > 0")
		}
	case strings.HasPrefix(rule, "number>="):
		lo := map[string]float64{"number>=0": 0, "number>=1": 1}[rule]
		if !isNum || f < lo {
			bad("a number " + strings.TrimPrefix(rule, "number"))
		}
	case kind == "enum":
		if s, ok := v.(string); !ok || !slices.Contains(strings.Split(arg, "|"), s) {
			bad("one of " + arg)
		}
	case kind == "const":
		if v != arg {
			bad(arg)
		}
	case kind == "obj":
		checkDef(errs, path, arg, v)
	case kind == "arr":
		l, ok := v.([]any)
		if !ok {
			bad("a list")
		}
		for i, x := range l {
			checkDef(errs, fmt.Sprintf("%s[%d]", path, i), arg, x)
		}
	case kind == "stats":
		checkDef(errs, path, "Statistics", v)
		if m, ok := v.(map[string]any); ok {
			u, _ := m["units"].(string)
			if !slices.Contains(llmdUnits, u) || !slices.Contains(strings.Split(arg, "|"), u) {
				*errs = append(*errs, fmt.Sprintf("%s.units: %q, this field allows %s", path, u, arg))
			}
		}
	default:
		panic("unknown rule " + rule)
	}
}

// The rules as ported catch what breaks them (so that a passing export
// means something): a missing required field, an unknown field, a wrong
// unit, a wrong type.
func TestCheckLLMDCatches(t *testing.T) {
	good := `{"version":"0.2","run":{"uid":"u"},"results":{"request_performance":{"aggregate":{"requests":{"total":3}}}}}`
	var doc any
	if err := json.Unmarshal([]byte(good), &doc); err != nil {
		t.Fatal(err)
	}
	if errs := checkLLMD(doc); len(errs) != 0 {
		t.Fatalf("a minimal report: %v", errs)
	}
	for _, c := range []struct{ doc, want string }{
		{`{"version":"0.2","run":{},"results":{}}`, `.run: required field "uid" missing`},
		{`{"run":{"uid":"u"}}`, `: required field "results" missing`},
		{`{"run":{"uid":"u"},"results":{},"energy":1}`, `.energy: BenchmarkReport has no field "energy"`},
		{`{"run":{"uid":"u"},"results":{"observability":{"components":[{"component_label":"e","aggregate":{"power_consumption":{"units":"W","mean":1}}}]}}}`,
			`.units: "W", this field allows Watts`},
		{`{"run":{"uid":"u"},"results":{"request_performance":{"aggregate":{"requests":{"total":1.5}}}}}`, `total: 1.5 is not an integer >=0`},
		{`{"run":{"uid":"u","time":{"start":"yesterday"}},"results":{}}`, `start: yesterday is not an RFC 3339 date-time`},
		{`{"run":{"uid":"u"},"results":{"request_performance":{"aggregate":{"latency":{"request_latency":{"units":"ms"}}}}}}`, `required field "mean" missing (Statistics)`},
	} {
		var d any
		if err := json.Unmarshal([]byte(c.doc), &d); err != nil {
			t.Fatal(err)
		}
		if errs := strings.Join(checkLLMD(d), "\n"); !strings.Contains(errs, c.want) {
			t.Errorf("%s: errors %q, want %q", c.doc, errs, c.want)
		}
	}
}

// llmdTestRun is a run evaluated by a benchmark profile, its values written
// by hand.
func llmdTestRun() Run {
	vals := map[string]record.Result{
		"formal_requests":         {Kind: "metric", Value: 4.0},
		"failed_requests":         {Kind: "metric", Value: 1.0},
		"mean_prompt_tokens":      {Kind: "metric", Value: 100.0},
		"mean_output_tokens":      {Kind: "metric", Value: 50.0},
		"ttft_ms":                 {Kind: "derived", Value: []any{10.0, 20.0, 30.0, 60.0}},
		"ttft_p50_ms":             {Kind: "metric", Value: 25.0},
		"ttft_p90_ms":             {Kind: "metric", Value: 51.0},
		"ttft_p99_ms":             {Kind: "metric", Value: 59.1},
		"tpot_ms":                 {Kind: "metric", Value: 8.0},
		"tpot_p50_ms":             {Kind: "metric", Value: 7.5},
		"e2e_ms":                  {Kind: "derived", Value: []float64{400, 600}},
		"e2e_latency_p50_ms":      {Kind: "metric", Value: 500.0},
		"output_throughput_tok_s": {Kind: "metric", Value: 20.0},
		"formal_duration_s":       {Kind: "derived", Value: 10.0},
		"input_tokens":            {Kind: "derived", Value: 400.0},
		"formal_tokens":           {Kind: "derived", Value: 200.0},
		"avg_gpu_power_w":         {Kind: "metric", Value: 350.0, Unit: "W"},
		"formal_j_per_token":      {Kind: "metric", Value: 17.5, Unit: "J/token"},
		"mean_kv_cache_usage_pct": {Kind: "metric", Value: 40.0},
		"max_kv_cache_usage_pct":  {Kind: "metric", Value: 70.0},
		"mean_running_batch":      {Kind: "metric", Value: nil, Note: "not applicable: no running-batch scrape"},
	}
	res := &record.Results{RunID: "r1", Values: vals}
	for k := range vals {
		res.Order = append(res.Order, k)
	}
	sort.Strings(res.Order)
	return Run{
		Meta: record.Meta{RunID: "r1", Profile: record.ProfileRef{Name: "benchmark-1.5"},
			Parameters: map[string]any{"rate": 2.0, "concurrency": 0.0, "max_concurrency": 8.0},
			Engine:     record.EngineInfo{Kind: "vllm", Version: "0.11.0", Model: "Qwen/Qwen3-0.6B", TensorParallel: 2},
			RequestSet: record.RequestSet{Source: "builtin:chat"},
			Hardware: record.Hardware{Devices: []record.Device{{ID: "0", Name: "NVIDIA H100"}, {ID: "1", Name: "NVIDIA H100"},
				{ID: "cpu0", Domain: record.DomainCPU}}},
			Software:  map[string]string{"joulebench": "1.2.3"},
			StartedAt: 1767268800, EndedAt: 1767268862.5},
		Results: res,
	}
}

// A run exported follows the schema's rules, and each figure lands in its
// field: hand values from llmdTestRun.
func TestWriteLLMD(t *testing.T) {
	var b strings.Builder
	if err := WriteLLMD(&b, []Run{llmdTestRun()}); err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if errs := checkLLMD(doc); len(errs) > 0 {
		t.Fatalf("the export breaks the schema's rules:\n%s\n%s", strings.Join(errs, "\n"), b.String())
	}
	for _, c := range []struct {
		path string
		want any
	}{
		{"version", "0.2"},
		{"run.uid", "r1"},
		// 1767268800 is 2026-01-01T12:00:00Z; the run lasted 62.5 s.
		{"run.time.start", "2026-01-01T12:00:00Z"},
		{"run.time.end", "2026-01-01T12:01:02.5Z"},
		{"run.time.duration", "PT62.500S"},
		{"scenario.stack.0.standardized.tool", "vllm"},
		{"scenario.stack.0.standardized.model.name", "Qwen/Qwen3-0.6B"},
		{"scenario.stack.0.standardized.accelerator.model", "NVIDIA H100"},
		{"scenario.stack.0.standardized.accelerator.count", 2.0}, // the CPU is not an accelerator
		{"scenario.stack.0.standardized.accelerator.parallelism.tp", 2.0},
		{"scenario.load.standardized.tool", "joulebench"},
		{"scenario.load.standardized.tool_version", "1.2.3"},
		{"scenario.load.standardized.source", "sampled"},
		{"scenario.load.standardized.input_seq_len.value", 100.0},
		{"scenario.load.standardized.output_seq_len.value", 50.0},
		{"scenario.load.standardized.rate_qps", 2.0},
		{"scenario.load.standardized.concurrency", 8.0},
		{"results.request_performance.aggregate.requests.total", 4.0},
		{"results.request_performance.aggregate.requests.failures", 1.0},
		// TTFT: mean (10 + 20 + 30 + 60) / 4 = 30 ms; deviations −20,
		// −10, 0, 30: population stddev √((400 + 100 + 0 + 900) / 4) =
		// √350 = 18.708 ms.
		{"results.request_performance.aggregate.latency.time_to_first_token.mean", 30.0},
		{"results.request_performance.aggregate.latency.time_to_first_token.stddev", math.Sqrt(350)},
		{"results.request_performance.aggregate.latency.time_to_first_token.min", 10.0},
		{"results.request_performance.aggregate.latency.time_to_first_token.max", 60.0},
		{"results.request_performance.aggregate.latency.time_to_first_token.p90", 51.0},
		{"results.request_performance.aggregate.latency.time_to_first_token.units", "ms"},
		{"results.request_performance.aggregate.latency.time_per_output_token.mean", 8.0},
		{"results.request_performance.aggregate.latency.time_per_output_token.units", "ms/token"},
		{"results.request_performance.aggregate.latency.request_latency.mean", 500.0}, // (400 + 600) / 2
		// Rates over the 10 s formal stage: 400 input tokens, 200 output,
		// 4 requests.
		{"results.request_performance.aggregate.throughput.input_token_rate.mean", 40.0},
		{"results.request_performance.aggregate.throughput.output_token_rate.mean", 20.0},
		{"results.request_performance.aggregate.throughput.total_token_rate.mean", 60.0},
		{"results.request_performance.aggregate.throughput.request_rate.mean", 0.4},
		{"results.request_performance.aggregate.throughput.request_rate.units", "queries/s"},
		{"results.observability.components.0.component_label", "vllm"},
		{"results.observability.components.0.aggregate.power_consumption.units", "Watts"},
		{"results.observability.components.0.aggregate.power_consumption.mean", 350.0},
		{"results.observability.components.0.aggregate.kv_cache_usage.max", 70.0},
		{"results.observability.components.0.aggregate.running_requests", nil}, // not applicable: left out
		{"scenario.stack.0.metadata.label", "vllm"},
	} {
		got := at(doc, c.path)
		if g, ok := got.(float64); ok {
			if w, ok := c.want.(float64); ok && math.Abs(g-w) <= 1e-9*math.Max(1, math.Abs(w)) {
				continue
			}
		}
		if got != c.want {
			t.Errorf("%s = %v, want %v", c.path, got, c.want)
		}
	}
}

// at reads a dotted path (list indexes as numbers) from a decoded
// document; nil when absent.
func at(doc any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch d := doc.(type) {
		case map[string]any:
			doc = d[k]
		case []any:
			var i int
			if _, err := fmt.Sscan(k, &i); err != nil || i >= len(d) {
				return nil
			}
			doc = d[i]
		default:
			return nil
		}
	}
	return doc
}

// A figure a failed check invalidates is left out and named; an excluded
// run keeps no figure and says why; one report holds one run.
func TestWriteLLMDLeavesOut(t *testing.T) {
	run := llmdTestRun()
	passed := false
	run.Results.Values["first_token_times_exact"] = record.Result{Kind: "check", Passed: &passed, Severity: "warn",
		Invalidates: []string{"ttft_p90_ms", "tpot_ms"}}
	run.Results.Order = append(run.Results.Order, "first_token_times_exact")
	doc := llmdDoc(t, run)
	lat := "results.request_performance.aggregate.latency."
	if at(doc, lat+"time_to_first_token") != nil || at(doc, lat+"time_per_output_token") != nil {
		t.Errorf("invalidated TTFT and TPOT exported: %v", at(doc, lat[:len(lat)-1]))
	}
	if d, _ := at(doc, "run.description").(string); !strings.Contains(d, "tpot_ms (check first_token_times_exact failed)") ||
		!strings.Contains(d, "ttft_p90_ms (check first_token_times_exact failed)") {
		t.Errorf("description %q does not name what was left out", d)
	}
	if at(doc, lat+"request_latency.mean") != 500.0 {
		t.Errorf("request latency lost: %v", at(doc, lat+"request_latency"))
	}

	run = llmdTestRun()
	run.Results.Excluded, run.Results.ExcludeReason = true, "power_valid failed"
	doc = llmdDoc(t, run)
	if r := at(doc, "results"); fmt.Sprint(r) != "map[]" {
		t.Errorf("an excluded run's results: %v, want none", r)
	}
	if d, _ := at(doc, "run.description").(string); !strings.Contains(d, "EXCLUDED (power_valid failed)") {
		t.Errorf("description %q does not say the run is excluded", d)
	}

	if err := WriteLLMD(&strings.Builder{}, []Run{llmdTestRun(), llmdTestRun()}); err == nil || !strings.Contains(err.Error(), "holds one run") {
		t.Errorf("two runs: error %v, want one run per report", err)
	}
}

func llmdDoc(t *testing.T, run Run) any {
	t.Helper()
	var b strings.Builder
	if err := WriteLLMD(&b, []Run{run}); err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if errs := checkLLMD(doc); len(errs) > 0 {
		t.Fatalf("breaks the schema's rules: %v", errs)
	}
	return doc
}
