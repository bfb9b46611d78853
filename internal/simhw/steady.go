package simhw

import "math"

// Serving is a closed-loop load at steady state: Concurrency requests in
// flight, each with PromptTokens of prompt and OutputTokens of output,
// under a locked clock and a power limit (Operate's arguments).
type Serving struct {
	Concurrency, PromptTokens, OutputTokens int
	// ChunkTokens is the prefill chunk (0: 2048).
	ChunkTokens int
	LockRatio   float64
	LimitW      float64
}

// Summary is a Serving's figures per GPU group.
type Summary struct {
	// JPerToken is the energy of every GPU of the group per output token.
	JPerToken float64
	// TPOTS is the time per output token a request sees; DecodeStepS the
	// decode step alone.
	TPOTS, DecodeStepS float64
	// TokPerS is the output tokens per second.
	TokPerS float64
	// DecodePowerW and PrefillPowerW are one GPU's power in a decode step
	// and in a prefill chunk; MeanPowerW over the whole cycle.
	DecodePowerW, PrefillPowerW, MeanPowerW float64
	// DecodeCapped says the power limit held the decode clock down.
	DecodeCapped bool
	// DecodeClockMHz is the clock in decode.
	DecodeClockMHz float64
}

// Steady is the closed loop sv at steady state, computed from the model
// rather than simulated: in the time one request produces its output,
// Concurrency requests finish and as many are prefilled, so a cycle is
// OutputTokens decode steps at batch Concurrency (every sequence at the
// mean context PromptTokens + OutputTokens/2) and Concurrency prefills,
// each in chunks of ChunkTokens run alone.
func (s Setup) Steady(sv Serving) Summary {
	c, p, o := sv.Concurrency, sv.PromptTokens, sv.OutputTokens
	chunk := sv.ChunkTokens
	if chunk <= 0 {
		chunk = 2048
	}
	dec := s.Operate(Work{Decoding: c, ContextTokens: c * (p + o/2)}, sv.LockRatio, sv.LimitW)
	// Prefill of one prompt: full chunks and the rest, each attending to
	// the prompt before it (the mean of its tokens' prefixes).
	var preS, preJ float64
	for done := 0; done < p; done += chunk {
		n := min(chunk, p-done)
		pt := s.Operate(Work{PrefillTokens: n, PrefillContext: n * (done + n/2)}, sv.LockRatio, sv.LimitW)
		preS += pt.StepS
		preJ += pt.PowerW * pt.StepS
	}
	gpus := float64(s.TP)
	cycleS := float64(o)*dec.StepS + float64(c)*preS
	cycleJ := gpus * (float64(o)*dec.PowerW*dec.StepS + float64(c)*preJ)
	tokens := float64(c * o)
	sum := Summary{
		JPerToken: cycleJ / tokens, TPOTS: cycleS / float64(o), DecodeStepS: dec.StepS, TokPerS: tokens / cycleS,
		DecodePowerW: dec.PowerW, MeanPowerW: cycleJ / gpus / cycleS,
		DecodeCapped: dec.PowerCapped, DecodeClockMHz: dec.ClockMHz,
	}
	if preS > 0 {
		sum.PrefillPowerW = preJ / preS
	}
	if math.IsNaN(sum.JPerToken) {
		sum.JPerToken = 0
	}
	return sum
}
