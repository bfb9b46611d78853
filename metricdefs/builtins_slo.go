package metricdefs

import (
	"context"
	"fmt"

	"github.com/joulebench/joulebench/archive/record"
)

// EngineStateView is what engine_state() returns to expressions.
type EngineStateView struct {
	Scrapes     int     `expr:"scrapes"`
	RunningMean float64 `expr:"running_mean"`
	WaitingMean float64 `expr:"waiting_mean"`
	KVMeanPct   float64 `expr:"kv_mean_pct"`
	KVMaxPct    float64 `expr:"kv_max_pct"`
	HasRunning  bool    `expr:"has_running"`
	HasWaiting  bool    `expr:"has_waiting"`
	HasKV       bool    `expr:"has_kv"`
}

// BatchLimitView is what engine_batch_limit() returns to expressions.
type BatchLimitView struct {
	Limit  float64 `expr:"limit"`
	Source string  `expr:"source"`
}

// sloBuiltinDefs are the built-ins of latency targets and of the engine
// state beside power: the output tokens a subset of the requests
// generated in an interval (the requests meeting an SLO), the engine's
// state from the /metrics side path over an interval, and its batch limit.
func sloBuiltinDefs() []builtinDef {
	return []builtinDef{
		{
			Builtin: Builtin{"tokens_in", `tokens_in(requests, a, b) float`, `output tokens the requests generated in [a, b], pro rata as in attribute and steady_state (tokens_in(formal, steady.start, steady.end) is steady.tokens)`},
			fn: func(p ...any) (any, error) {
				d, reqs, a, b, err := requestsInterval("tokens_in", p)
				if err != nil {
					return nil, err
				}
				return d.subShapes.TokensIn(reqs, a, b)
			},
			types: []any{new(func(context.Context, []*record.Request, float64, float64) float64), new(func(context.Context, []any, float64, float64) float64)},
		},
		{
			Builtin: Builtin{"engine_state", `engine_state(a, b) {scrapes, running_mean, waiting_mean, kv_mean_pct, kv_max_pct, has_running, has_waiting, has_kv}`, `the engine's state from engine_metrics.jsonl over [a, b] (vLLM, SGLang, llama.cpp and simulator gauges): mean running batch and waiting queue (summed over label sets), mean and largest KV-cache usage in % (fullest label set), each the plain mean of the scrapes inside; scrapes counts the running-batch scrapes there. Never an energy input`},
			fn: func(p ...any) (any, error) {
				d, a, b, err := dataInterval("engine_state", p)
				if err != nil {
					return nil, err
				}
				if b < a {
					return nil, fmt.Errorf("engine_state: interval [%v, %v] is not an interval", a, b)
				}
				w := d.engine.Window(a, b)
				return EngineStateView{Scrapes: w.Scrapes, RunningMean: w.RunningMean, WaitingMean: w.WaitingMean,
					KVMeanPct: w.KVMean * 100, KVMaxPct: w.KVMax * 100, HasRunning: w.HasRunning, HasWaiting: w.HasWaiting, HasKV: w.HasKV}, nil
			},
			types: []any{new(func(context.Context, float64, float64) EngineStateView)},
		},
		{
			Builtin: Builtin{"engine_batch_limit", `engine_batch_limit() {limit, source}`, `the engine's configured limit on requests served at once and where it was read: run.json engine.extra.slots, the engine command (--max-num-seqs, --max-running-requests, --parallel, -np) or the simulator's sim:num_slots; limit 0 when none says`},
			fn: func(p ...any) (any, error) {
				d, err := dataFrom(p[0].(context.Context))
				if err != nil {
					return nil, err
				}
				return BatchLimitView{Limit: d.batchLimit, Source: d.batchLimitSource}, nil
			},
			types: []any{new(func(context.Context) BatchLimitView)},
		},
	}
}
