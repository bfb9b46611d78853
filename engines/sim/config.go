package sim

import (
	"io"
	"strings"

	"github.com/joulebench/joulebench/internal/simhw"
)

// Config parameterises the simulated engine. Times are in seconds at
// Speed 1; every duration is divided by Speed.
type Config struct {
	// Model is the served model id. It always contains "sim": a name
	// without it is prefixed with "sim-".
	Model string
	// Revision is reported by /v1/models (a sim-specific field) and Identity.
	Revision string
	// Version is the engine version served at /version.
	Version string
	// MaxModelLen is the context length in tokens.
	MaxModelLen int
	// TensorParallel is the reported tensor-parallel size.
	TensorParallel int
	// Slots is the continuous-batching limit; requests beyond it wait.
	Slots int
	// StartupS is the model-load delay before /health turns 200.
	StartupS float64
	// StoppingS is the delay between Stop and exit.
	StoppingS float64
	// StepBaseS and StepPerSeqS give the decode step time:
	// (StepBaseS + StepPerSeqS·decoding)·(1 + DriftPerRequest·finished).
	StepBaseS, StepPerSeqS float64
	// PrefillTokPerS is the prefill rate; a step that prefills n prompt
	// tokens takes n/PrefillTokPerS longer.
	PrefillTokPerS float64
	// PrefillChunkTokens caps the prompt tokens prefilled per step
	// (chunked prefill); a longer prompt spans several steps.
	PrefillChunkTokens int
	// KVCacheTokens is the KV cache size behind sim:kv_cache_usage_perc.
	KVCacheTokens int
	// MemFrac is the fraction of device memory held once loaded (it rises
	// linearly from 0 during loading).
	MemFrac float64
	// DefaultMaxTokens applies when a request sets no max_tokens (capped
	// by the context left after the prompt).
	DefaultMaxTokens int
	// StopProb is the probability that a request without ignore_eos stops
	// early at a length drawn uniformly in [ceil(max_tokens/4), max_tokens]
	// (deterministic per prompt and seed); otherwise it generates
	// max_tokens.
	StopProb float64
	// MinStopFrac is the shortest early stop as a fraction of max_tokens
	// (default 0.25).
	MinStopFrac float64
	// Speed scales time: 10 runs everything ten times faster.
	Speed float64
	// Seed seeds token texts and stop lengths.
	Seed int64
	// DriftPerRequest makes the decode step this fraction slower for every
	// finished request, so that J/token never settles (tests of
	// steady_state_reached = false). 0 disables.
	DriftPerRequest float64
	// PrefixCache turns on the prefix cache model (see prefixCache): the
	// leading 16-token blocks of a prompt seen before are not prefilled
	// again, and usage reports them as prompt_tokens_details.cached_tokens.
	// Its capacity is KVCacheTokens.
	PrefixCache bool
	// CrashAfterRequests makes the engine exit on its own after that many
	// finished requests (fault tests). 0 disables.
	CrashAfterRequests int
	// GPU, when set, slows the steps as the simulated GPUs' power limit
	// and locked clocks do (telemetry/sim's GPUSettings): a step's decode
	// time is multiplied by decode, its prefill time by prefill.
	GPU GPU
	// HW, when set, is the hardware model (--sim-gpu, --sim-model): a
	// step's time and the GPUs' power come from it (internal/simhw), under
	// the GPU settings of GPU when GPU also has HWLimits; StepBaseS,
	// StepPerSeqS and PrefillTokPerS are then not used. Nil: the toy
	// model of the default run.
	HW *simhw.Setup
	// Port to listen on at 127.0.0.1; 0 picks a free one.
	Port int
	// Listen, when set, is the address to listen on instead (HOST:PORT,
	// e.g. ":8000" in an engine pod: serve-sim).
	Listen string
	// Log receives the engine's log lines (engine.log); nil discards.
	Log io.Writer
}

// GPU is the simulated GPUs as the engine's speed sees them.
type GPU interface {
	// Slowdown is the factor on a step's decode and prefill time for
	// decoding and prefilling sequences of slots.
	Slowdown(decoding, prefilling, slots int) (decode, prefill float64)
}

// DefaultConfig keeps the default benchmark fast: a 2 s model load, 64
// slots, ~49 tok/s per sequence at batch 1 falling to ~19 tok/s at 64
// (≈1230 tok/s aggregate), 20000 prompt tok/s prefill in chunks of 2048.
func DefaultConfig() Config {
	return Config{
		Model:              "sim-llm-8b",
		Revision:           "sim-rev-0001",
		Version:            "sim-1",
		MaxModelLen:        8192,
		TensorParallel:     2,
		Slots:              64,
		StartupS:           2,
		StoppingS:          0.5,
		StepBaseS:          0.02,
		StepPerSeqS:        0.0005,
		PrefillTokPerS:     20000,
		PrefillChunkTokens: 2048,
		KVCacheTokens:      262144,
		MemFrac:            0.9,
		DefaultMaxTokens:   256,
		StopProb:           0.5,
		MinStopFrac:        0.25,
		Speed:              1,
		Seed:               1,
	}
}

// normalize fills zero fields with defaults.
func (c Config) normalize() Config {
	d := DefaultConfig()
	if c.Model == "" {
		c.Model = d.Model
	}
	if !strings.Contains(strings.ToLower(c.Model), "sim") {
		c.Model = "sim-" + c.Model
	}
	if c.Revision == "" {
		c.Revision = d.Revision
	}
	if c.Version == "" {
		c.Version = d.Version
	}
	if c.MaxModelLen <= 0 {
		c.MaxModelLen = d.MaxModelLen
	}
	if c.TensorParallel <= 0 {
		c.TensorParallel = d.TensorParallel
	}
	if c.Slots <= 0 {
		c.Slots = d.Slots
	}
	if c.StepBaseS <= 0 {
		c.StepBaseS = d.StepBaseS
	}
	if c.StepPerSeqS < 0 {
		c.StepPerSeqS = 0
	}
	if c.PrefillTokPerS <= 0 {
		c.PrefillTokPerS = d.PrefillTokPerS
	}
	if c.PrefillChunkTokens <= 0 {
		c.PrefillChunkTokens = d.PrefillChunkTokens
	}
	if c.KVCacheTokens <= 0 {
		c.KVCacheTokens = d.KVCacheTokens
	}
	if c.MemFrac <= 0 || c.MemFrac > 1 {
		c.MemFrac = d.MemFrac
	}
	if c.DefaultMaxTokens <= 0 {
		c.DefaultMaxTokens = d.DefaultMaxTokens
	}
	if c.StopProb < 0 {
		c.StopProb = 0
	}
	if c.StopProb > 1 {
		c.StopProb = 1
	}
	if c.MinStopFrac <= 0 || c.MinStopFrac > 1 {
		c.MinStopFrac = d.MinStopFrac
	}
	if c.Speed <= 0 {
		c.Speed = 1
	}
	if c.StartupS < 0 {
		c.StartupS = 0
	}
	if c.StoppingS < 0 {
		c.StoppingS = 0
	}
	if c.DriftPerRequest < 0 {
		c.DriftPerRequest = 0
	}
	return c
}

// The small-batch preset (--sim-preset small-batch): the knee of the
// energy–latency frontier within a small request set. The KV cache holds
// the prompt and max_tokens of each running request: with the chat set
// (about 12 prompt tokens) and max_tokens 64, 13 requests fit, so the KV
// cache runs out before the 16 slots do.
const (
	SmallBatchSlots    = 16
	SmallBatchKVTokens = 1024
	// SmallBatchStepPerSeqS keeps J/token falling up to a full batch:
	// with power linear in the batch b (P0 + k·b, k = (max - P0)/slots)
	// and a step of a + c·b, J/token = (P0 + k·b)(a + c·b)/b is lowest at
	// b = sqrt(P0·a / (k·c)): 17.9 for P0 75 W, k 23.4 W, a 20 ms and
	// c 0.2 ms, past the 16 slots. (The default's 64 slots and 0.5 ms put
	// that minimum at a batch of about 23.)
	SmallBatchStepPerSeqS = 0.0002
)

// SmallBatch returns c with the small-batch preset.
func SmallBatch(c Config) Config {
	c.Slots, c.KVCacheTokens, c.StepPerSeqS = SmallBatchSlots, SmallBatchKVTokens, SmallBatchStepPerSeqS
	return c
}

// QuickSpeed is how much faster than real time the quick configuration runs.
const QuickSpeed = 3

// Quick returns c tuned for the quick default run: three times faster than
// real time, and every request ending on its own at a length between 60 %
// and 100 % of max_tokens (unless it asks for ignore_eos), so completions
// spread out, the batch stays full and per-request J/token settles within
// a few hundred requests. Power time constants of the simulated GPU must be
// divided by QuickSpeed too (telemetry/sim.Config.Scale).
func Quick(c Config) Config {
	c.Speed = QuickSpeed
	c.StopProb = 1
	c.MinStopFrac = 0.6
	return c
}

// WithPrefixCache returns c with the prefix cache model on (--sim-preset
// prefix-cache).
func WithPrefixCache(c Config) Config {
	c.PrefixCache = true
	return c
}
