package measure

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive/record"

	"github.com/joulebench/joulebench/internal/num"
)

// Engine state kinds: what a /metrics gauge of the side path reports.
const (
	EngineRunning = "running" // requests in the running batch
	EngineWaiting = "waiting" // requests queued for a slot
	EngineKV      = "kv"      // KV-cache usage, a fraction 0–1
)

// EngineStateKind returns the state a /metrics name reports for the
// engines joulebench knows (vLLM, SGLang, llama.cpp, the simulator), ""
// for any other name. vLLM's gpu_cache_usage_perc is the name before
// kv_cache_usage_perc; SGLang's token_usage is the share of its KV-cache
// tokens in use. Every KV-cache gauge here is a fraction, not a percent.
func EngineStateKind(name string) string {
	switch name {
	case "vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing", "sim:num_requests_running":
		return EngineRunning
	case "vllm:num_requests_waiting", "sglang:num_queue_reqs", "llamacpp:requests_deferred", "sim:num_requests_waiting":
		return EngineWaiting
	case "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage", "llamacpp:kv_cache_usage_ratio", "sim:kv_cache_usage_perc":
		return EngineKV
	}
	return ""
}

// TV is one value at one time.
type TV struct{ T, V float64 }

// EngineSeries is the engine's state over time from engine_metrics.jsonl:
// at each scrape time, the running batch and the waiting queue summed over
// the gauge's label sets (one per engine of a data-parallel server), and
// the KV-cache usage (fraction) of the fullest label set (a cache that
// is full caps the batch; two names for one cache are not added up).
// Each series is in time order; one is empty when no scrape had it.
type EngineSeries struct {
	Running, Waiting, KV []TV
}

// NewEngineSeries builds the series from the scrapes; names it does not
// know (EngineStateKind) and non-finite values are left out.
func NewEngineSeries(ms []record.EngineMetric) EngineSeries {
	type key struct {
		kind string
		t    float64
	}
	vals := map[key]float64{}
	for _, m := range ms {
		kind := EngineStateKind(m.Name)
		if kind == "" || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || math.IsNaN(m.T) {
			continue
		}
		k := key{kind, m.T}
		if old, seen := vals[k]; kind == EngineKV && seen {
			vals[k] = max(old, m.Value)
		} else {
			vals[k] = old + m.Value
		}
	}
	var s EngineSeries
	for k, v := range vals {
		tv := TV{k.t, v}
		switch k.kind {
		case EngineRunning:
			s.Running = append(s.Running, tv)
		case EngineWaiting:
			s.Waiting = append(s.Waiting, tv)
		case EngineKV:
			s.KV = append(s.KV, tv)
		}
	}
	for _, xs := range []([]TV){s.Running, s.Waiting, s.KV} {
		slices.SortFunc(xs, func(a, b TV) int { return cmp.Compare(a.T, b.T) })
	}
	return s
}

// Empty reports whether no scrape had a known state gauge.
func (s EngineSeries) Empty() bool {
	return len(s.Running) == 0 && len(s.Waiting) == 0 && len(s.KV) == 0
}

// EngineWindow summarises the engine's state over [a, b]: the mean of the
// scrapes inside (a ≤ t ≤ b, each scrape weighing the same: the side path
// scrapes at a fixed interval) and the KV-cache usage's largest value.
// Scrapes counts the running-batch scrapes inside; a Has* is false when
// no scrape of that gauge lies inside.
type EngineWindow struct {
	Scrapes                       int
	RunningMean, WaitingMean      float64
	KVMean, KVMax                 float64
	HasRunning, HasWaiting, HasKV bool
}

// Window summarises s over [a, b].
func (s EngineSeries) Window(a, b float64) EngineWindow {
	var w EngineWindow
	mean := func(xs []TV) (m, mx float64, n int) {
		mx = math.Inf(-1)
		for _, x := range xs {
			if x.T >= a && x.T <= b {
				m += x.V
				mx = max(mx, x.V)
				n++
			}
		}
		if n > 0 {
			m /= float64(n)
		}
		return m, mx, n
	}
	var n int
	w.RunningMean, _, n = mean(s.Running)
	w.Scrapes, w.HasRunning = n, n > 0
	w.WaitingMean, _, n = mean(s.Waiting)
	w.HasWaiting = n > 0
	w.KVMean, w.KVMax, n = mean(s.KV)
	w.HasKV = n > 0
	if !w.HasKV {
		w.KVMax = 0
	}
	return w
}

// BatchLimit returns the engine's configured limit on requests served at
// once, and where it was read: run.json engine.extra.slots (llama.cpp, the
// simulator), else the engine's command line (vLLM --max-num-seqs, SGLang
// --max-running-requests, llama.cpp --parallel / -np; the last one given
// wins, as the engines parse them), else the simulator's sim:num_slots
// gauge. 0 and "" when none says: an engine's default limit depends on
// its version and GPU and is not guessed.
func BatchLimit(m record.Meta, ms []record.EngineMetric) (float64, string) {
	if v, ok := num.Positive(m.Engine.Extra["slots"]); ok {
		return v, "run.json engine.extra.slots"
	}
	// The options that set the most requests served at once: vLLM,
	// SGLang, llama.cpp (long and short).
	batchLimitFlags := []string{"--max-num-seqs", "--max-running-requests", "--parallel", "-np"}
	limit, src := 0.0, ""
	argv := m.Engine.Command
	for i, arg := range argv {
		for _, f := range batchLimitFlags {
			val, ok := "", false
			switch {
			case arg == f && i+1 < len(argv):
				val, ok = argv[i+1], true
			case strings.HasPrefix(arg, f+"="):
				val, ok = strings.TrimPrefix(arg, f+"="), true
			}
			if !ok {
				continue
			}
			if n, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil && n > 0 && !math.IsInf(n, 0) {
				limit, src = n, "engine command "+f
			}
		}
	}
	if limit > 0 {
		return limit, src
	}
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Name == "sim:num_slots" && ms[i].Value > 0 && !math.IsInf(ms[i].Value, 0) {
			return ms[i].Value, "/metrics sim:num_slots"
		}
	}
	return 0, ""
}
