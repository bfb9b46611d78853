package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"

	"github.com/joulebench/joulebench/internal/num"
)

// FormatLLMD is report's --format for llm-d's Benchmark Report v0.2
// (WriteLLMD).
const FormatLLMD = "llmd"

// The llm-d Benchmark Report v0.2 as defined in llm-d/llm-d-benchmark,
// llmdbenchmark/analysis/benchmark_report/br_v0_2_json_schema.json and
// schema_v0_2.py, schema_v0_2_components.py, base.py (commit
// 8bc9f1ddd873a24f1657d6cca2e0d0fb6947dd36; the schema files last changed
// in 2a46f34cdcf8254b5f2b8a20924339b96fd80a3b). Every object forbids
// fields the schema does not name (but results.observability); a
// Statistics needs units and mean. The schema defines power
// (power_consumption, Watts) but no energy: joulebench's energy and J/token
// figures have no field in it (docs/exports.md says where they map).

type llmdReport struct {
	Version  string        `json:"version"`
	Run      llmdRun       `json:"run"`
	Scenario *llmdScenario `json:"scenario,omitempty"`
	Results  llmdResults   `json:"results"`
}

type llmdRun struct {
	UID         string       `json:"uid"`
	Time        *llmdRunTime `json:"time,omitempty"`
	Description string       `json:"description,omitempty"`
	Keywords    []string     `json:"keywords,omitempty"`
}

type llmdRunTime struct {
	Start    string `json:"start,omitempty"`
	End      string `json:"end,omitempty"`
	Duration string `json:"duration,omitempty"`
}

type llmdScenario struct {
	Stack []llmdComponent `json:"stack,omitempty"`
	Load  *llmdLoad       `json:"load,omitempty"`
}

type llmdComponent struct {
	Metadata     llmdComponentMeta `json:"metadata"`
	Standardized llmdEngine        `json:"standardized"`
	Native       llmdNative        `json:"native"`
}

type llmdComponentMeta struct {
	SchemaVersion string `json:"schema_version"`
	Label         string `json:"label"`
	CfgID         string `json:"cfg_id"`
	Description   string `json:"description,omitempty"`
}

// llmdEngine is the standardized part of kind inference_engine.
type llmdEngine struct {
	Kind        string          `json:"kind"`
	Tool        string          `json:"tool"`
	ToolVersion string          `json:"tool_version"`
	Role        string          `json:"role"`
	Replicas    int             `json:"replicas"`
	Model       llmdModel       `json:"model"`
	Accelerator llmdAccelerator `json:"accelerator"`
}

type llmdModel struct {
	Name string `json:"name"`
}

type llmdAccelerator struct {
	Model       string          `json:"model"`
	Count       int             `json:"count"`
	Parallelism llmdParallelism `json:"parallelism"`
}

type llmdParallelism struct {
	TP int `json:"tp"`
}

type llmdNative struct {
	Args   map[string]any `json:"args,omitempty"`
	Config any            `json:"config,omitempty"`
}

type llmdLoad struct {
	Metadata     llmdLoadMeta     `json:"metadata"`
	Standardized llmdLoadStandard `json:"standardized"`
	Native       llmdNative       `json:"native"`
}

type llmdLoadMeta struct {
	SchemaVersion string `json:"schema_version"`
	CfgID         string `json:"cfg_id,omitempty"`
	Description   string `json:"description,omitempty"`
}

type llmdLoadStandard struct {
	Tool        string      `json:"tool"`
	ToolVersion string      `json:"tool_version"`
	Source      string      `json:"source"`
	InputSeqLen llmdSeqLen  `json:"input_seq_len"`
	OutputSeq   *llmdSeqLen `json:"output_seq_len,omitempty"`
	RateQPS     float64     `json:"rate_qps,omitempty"`
	Concurrency int         `json:"concurrency,omitempty"`
}

type llmdSeqLen struct {
	Distribution string  `json:"distribution"`
	Value        float64 `json:"value"`
}

type llmdResults struct {
	RequestPerformance *llmdRequestPerf  `json:"request_performance,omitempty"`
	Observability      *llmdObservablity `json:"observability,omitempty"`
}

type llmdRequestPerf struct {
	Aggregate llmdAggregate `json:"aggregate"`
}

type llmdAggregate struct {
	Requests   *llmdRequests   `json:"requests,omitempty"`
	Latency    *llmdLatency    `json:"latency,omitempty"`
	Throughput *llmdThroughput `json:"throughput,omitempty"`
}

type llmdRequests struct {
	Total        int        `json:"total"`
	Failures     *int       `json:"failures,omitempty"`
	InputLength  *llmdStats `json:"input_length,omitempty"`
	OutputLength *llmdStats `json:"output_length,omitempty"`
}

type llmdLatency struct {
	TimeToFirstToken   *llmdStats `json:"time_to_first_token,omitempty"`
	TimePerOutputToken *llmdStats `json:"time_per_output_token,omitempty"`
	InterTokenLatency  *llmdStats `json:"inter_token_latency,omitempty"`
	RequestLatency     *llmdStats `json:"request_latency,omitempty"`
}

type llmdThroughput struct {
	InputTokenRate  *llmdStats `json:"input_token_rate,omitempty"`
	OutputTokenRate *llmdStats `json:"output_token_rate,omitempty"`
	TotalTokenRate  *llmdStats `json:"total_token_rate,omitempty"`
	RequestRate     *llmdStats `json:"request_rate,omitempty"`
}

type llmdObservablity struct {
	Components []llmdComponentObs `json:"components"`
}

type llmdComponentObs struct {
	ComponentLabel string       `json:"component_label"`
	Aggregate      llmdResource `json:"aggregate"`
}

type llmdResource struct {
	KVCacheUsage     *llmdStats `json:"kv_cache_usage,omitempty"`
	PowerConsumption *llmdStats `json:"power_consumption,omitempty"`
	RunningRequests  *llmdStats `json:"running_requests,omitempty"`
	WaitingRequests  *llmdStats `json:"waiting_requests,omitempty"`
}

// llmdStats is the schema's Statistics (units and mean required).
type llmdStats struct {
	Units  string   `json:"units"`
	Mean   float64  `json:"mean"`
	Stddev *float64 `json:"stddev,omitempty"`
	Min    *float64 `json:"min,omitempty"`
	P50    *float64 `json:"p50,omitempty"`
	P90    *float64 `json:"p90,omitempty"`
	P99    *float64 `json:"p99,omitempty"`
	Max    *float64 `json:"max,omitempty"`
}

// WriteLLMD writes one run as an llm-d Benchmark Report v0.2 (JSON): the
// run, its engine and load, the formal stage's request figures and the
// GPUs' average power. A figure the run lacks, or that a failed check
// invalidates, is left out (the description names the invalidated ones);
// an excluded run keeps no figure. One report holds one run.
func WriteLLMD(w io.Writer, runs []Run) error {
	if len(runs) != 1 {
		return fmt.Errorf("--format %s: an llm-d benchmark report holds one run; give one run directory (got %d)", FormatLLMD, len(runs))
	}
	br := llmdOf(runs[0])
	b, err := json.MarshalIndent(br, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func llmdOf(run Run) llmdReport {
	m := run.Meta
	v := llmdValues{res: run.Results, invalid: InvalidatedBy(run.Results)}
	br := llmdReport{Version: "0.2", Run: llmdRun{UID: m.RunID, Time: llmdTime(m)}}
	br.Run.Keywords = []string{"joulebench", m.Profile.Name}
	desc := []string{fmt.Sprintf("joulebench run of profile %s", m.Profile.Name)}
	if m.Simulated {
		br.Run.Keywords = append(br.Run.Keywords, "simulated")
		desc = append(desc, "SIMULATED")
	}
	excluded, why := m.Excluded || (run.Results != nil && run.Results.Excluded), m.ExcludeReason
	if why == "" && run.Results != nil {
		why = run.Results.ExcludeReason
	}
	if excluded {
		desc = append(desc, "EXCLUDED ("+why+"): no figure reported")
	}
	label := cmpOr(m.Engine.Kind, "engine")
	br.Scenario = &llmdScenario{Stack: []llmdComponent{llmdEngineOf(m, label)}}
	if !excluded {
		br.Scenario.Load = llmdLoadOf(m, &v)
		br.Results = llmdResultsOf(&v, label)
	}
	if left := v.leftOut(); len(left) > 0 {
		desc = append(desc, "left out as a failed check invalidates them: "+strings.Join(left, "; "))
	}
	br.Run.Description = strings.Join(desc, "; ")
	return br
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// llmdTime is the run's start, end and length (ISO 8601).
func llmdTime(m record.Meta) *llmdRunTime {
	if m.StartedAt <= 0 {
		return nil
	}
	t := &llmdRunTime{Start: isoTime(m.StartedAt)}
	if m.EndedAt > m.StartedAt {
		t.End = isoTime(m.EndedAt)
		t.Duration = "PT" + strconv.FormatFloat(m.EndedAt-m.StartedAt, 'f', 3, 64) + "S"
	}
	return t
}

func isoTime(unix float64) string {
	sec, frac := math.Modf(unix)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC().Format(time.RFC3339Nano)
}

// cfgID is a hash of a component's configuration (the schema's cfg_id).
func cfgID(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

func llmdEngineOf(m record.Meta, label string) llmdComponent {
	e := m.Engine
	tp := max(e.TensorParallel, 1)
	devices, chip := 0, m.Hardware.Chip
	for _, d := range m.Hardware.Devices {
		if d.Domain == "" || d.Domain == record.DomainGPU {
			devices++
			chip = cmpOr(chip, d.Name)
		}
	}
	c := llmdComponent{
		Metadata: llmdComponentMeta{SchemaVersion: "0.0.1", Label: label, CfgID: cfgID(e)},
		Standardized: llmdEngine{Kind: "inference_engine", Tool: cmpOr(e.Kind, "unknown"), ToolVersion: cmpOr(e.Version, "unknown"),
			Role: "replica", Replicas: 1, Model: llmdModel{Name: cmpOr(e.Model, "unknown")},
			Accelerator: llmdAccelerator{Model: cmpOr(chip, "unknown"), Count: devices, Parallelism: llmdParallelism{TP: tp}}},
	}
	if len(e.Command) > 0 {
		c.Native.Args = map[string]any{"command": e.Command}
	}
	if e.Precision != "" || e.ContextLength > 0 {
		c.Native.Config = map[string]any{"precision": e.Precision, "context_length": e.ContextLength}
	}
	return c
}

// llmdLoadOf is the load as joulebench generated it; nil without the
// mean prompt length the schema requires.
func llmdLoadOf(m record.Meta, v *llmdValues) *llmdLoad {
	in, ok := v.get("mean_prompt_tokens")
	if !ok {
		return nil
	}
	rs := m.RequestSet
	source := "unknown"
	switch {
	case rs.Source == "random" || strings.HasPrefix(rs.Source, "random"):
		source = "random"
	case rs.Source != "":
		source = "sampled"
	}
	l := &llmdLoad{
		Metadata: llmdLoadMeta{SchemaVersion: "0.0.1", CfgID: cfgID(rs), Description: rs.Sampling},
		Standardized: llmdLoadStandard{Tool: "joulebench", ToolVersion: cmpOr(m.Software["joulebench"], "unknown"), Source: source,
			InputSeqLen: llmdSeqLen{Distribution: "other", Value: in}},
		Native: llmdNative{Args: map[string]any{"profile": m.Profile.Name}, Config: m.Parameters},
	}
	if out, ok := v.get("mean_output_tokens"); ok {
		l.Standardized.OutputSeq = &llmdSeqLen{Distribution: "other", Value: out}
	}
	if r := paramFloat(m.Parameters, "rate"); r > 0 {
		l.Standardized.RateQPS = r
	}
	for _, k := range []string{"concurrency", "max_concurrency"} {
		if c := paramFloat(m.Parameters, k); c >= 1 && c == math.Trunc(c) {
			l.Standardized.Concurrency = int(c)
			break
		}
	}
	return l
}

func paramFloat(p map[string]any, k string) float64 {
	f, _ := num.Finite(p[k])
	return f
}

func llmdResultsOf(v *llmdValues, label string) llmdResults {
	var r llmdResults
	agg := llmdAggregate{Requests: llmdRequestsOf(v), Latency: llmdLatencyOf(v), Throughput: llmdThroughputOf(v)}
	if agg.Requests != nil || agg.Latency != nil || agg.Throughput != nil {
		r.RequestPerformance = &llmdRequestPerf{Aggregate: agg}
	}
	res := llmdResource{
		PowerConsumption: v.stats("Watts", "avg_gpu_power_w", "", "", "", ""),
		KVCacheUsage:     v.stats("percent", "mean_kv_cache_usage_pct", "", "", "", "max_kv_cache_usage_pct"),
		RunningRequests:  v.stats("count", "mean_running_batch", "", "", "", ""),
		WaitingRequests:  v.stats("count", "mean_waiting_requests", "", "", "", ""),
	}
	if res != (llmdResource{}) {
		r.Observability = &llmdObservablity{Components: []llmdComponentObs{{ComponentLabel: label, Aggregate: res}}}
	}
	return r
}

func llmdRequestsOf(v *llmdValues) *llmdRequests {
	total, ok := v.get("formal_requests")
	if !ok {
		return nil
	}
	r := &llmdRequests{Total: int(total),
		InputLength:  v.stats("count", "mean_prompt_tokens", "", "", "", ""),
		OutputLength: v.stats("count", "mean_output_tokens", "", "", "", "")}
	if f, ok := v.get("failed_requests"); ok {
		n := int(f)
		r.Failures = &n
	}
	return r
}

func llmdLatencyOf(v *llmdValues) *llmdLatency {
	l := &llmdLatency{
		TimeToFirstToken:   v.listStats("ms", "ttft_ms", "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms"),
		TimePerOutputToken: v.stats("ms/token", "tpot_ms", "tpot_p50_ms", "tpot_p90_ms", "tpot_p99_ms", ""),
		RequestLatency:     v.listStats("ms", "e2e_ms", "e2e_latency_p50_ms", "e2e_latency_p90_ms", "e2e_latency_p99_ms"),
	}
	if *l == (llmdLatency{}) {
		return nil
	}
	return l
}

// llmdThroughputOf: the rates over the formal stage.
func llmdThroughputOf(v *llmdValues) *llmdThroughput {
	t := &llmdThroughput{OutputTokenRate: v.stats("tokens/s", "output_throughput_tok_s", "", "", "", "")}
	if d, ok := v.get("formal_duration_s"); ok && d > 0 {
		in, okIn := v.get("input_tokens")
		out, okOut := v.get("formal_tokens")
		if okIn {
			t.InputTokenRate = &llmdStats{Units: "tokens/s", Mean: in / d}
		}
		if okIn && okOut {
			t.TotalTokenRate = &llmdStats{Units: "tokens/s", Mean: (in + out) / d}
		}
		if n, ok := v.get("formal_requests"); ok {
			t.RequestRate = &llmdStats{Units: "queries/s", Mean: n / d}
		}
	}
	if *t == (llmdThroughput{}) {
		return nil
	}
	return t
}

// llmdValues reads a run's values: a figure a failed check invalidates
// is not given (and remembered, to be named).
type llmdValues struct {
	res     *record.Results
	invalid map[string][]string
	left    map[string]bool
}

func (v *llmdValues) get(name string) (float64, bool) {
	if v.res == nil {
		return 0, false
	}
	r, ok := v.res.Values[name]
	if !ok {
		return 0, false
	}
	f, ok := num.Finite(r.Value)
	if !ok {
		return 0, false
	}
	if len(v.invalid[name]) > 0 {
		if v.left == nil {
			v.left = map[string]bool{}
		}
		v.left[name+" (check "+strings.Join(v.invalid[name], ", ")+" failed)"] = true
		return 0, false
	}
	return f, true
}

func (v *llmdValues) leftOut() []string {
	out := make([]string, 0, len(v.left))
	for k := range v.left {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// stats is a Statistics of mean and, where named and given, p50, p90,
// p99 and max; nil without the mean.
func (v *llmdValues) stats(units, mean, p50, p90, p99, maxName string) *llmdStats {
	m, ok := v.get(mean)
	if !ok {
		return nil
	}
	s := &llmdStats{Units: units, Mean: m}
	v.percentiles(s, p50, p90, p99)
	if maxName != "" {
		if x, ok := v.get(maxName); ok {
			s.Max = &x
		}
	}
	return s
}

func (v *llmdValues) percentiles(s *llmdStats, p50, p90, p99 string) {
	for _, p := range []struct {
		name string
		to   **float64
	}{{p50, &s.P50}, {p90, &s.P90}, {p99, &s.P99}} {
		if p.name == "" {
			continue
		}
		if x, ok := v.get(p.name); ok {
			*p.to = &x
		}
	}
}

// listStats is a Statistics whose mean, standard deviation, min and max
// come from a per-request list the run keeps (a derived value, e.g.
// ttft_ms), its percentiles from the run's metrics; nil without the list,
// or when a failed check invalidates a percentile of it.
func (v *llmdValues) listStats(units, list, p50, p90, p99 string) *llmdStats {
	if v.res == nil {
		return nil
	}
	for _, p := range []string{p50, p90, p99} {
		if len(v.invalid[p]) > 0 {
			v.get(p) // remember it as left out
			return nil
		}
	}
	xs, ok := floats(v.res.Values[list].Value)
	if !ok || len(xs) == 0 {
		return nil
	}
	var sum, lo, hi float64 = 0, math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		sum += x
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	mean := sum / float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(len(xs)))
	s := &llmdStats{Units: units, Mean: mean, Stddev: &sd, Min: &lo, Max: &hi}
	v.percentiles(s, p50, p90, p99)
	return s
}

// floats reads a list of numbers (a derived value as results.json holds
// it); false when it is not one.
func floats(v any) ([]float64, bool) {
	var l []any
	switch x := v.(type) {
	case []float64:
		for _, f := range x {
			l = append(l, f)
		}
	case []any:
		l = x
	default:
		return nil, false
	}
	out := make([]float64, 0, len(l))
	for _, x := range l {
		f, ok := num.Finite(x)
		if !ok {
			return nil, false
		}
		out = append(out, f)
	}
	return out, true
}
