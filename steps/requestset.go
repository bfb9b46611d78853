package steps

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/workflow"
	"github.com/joulebench/joulebench/workload"
)

// requestSetMeta is run.json's request_set for a frozen set sent as count
// requests: what it is, how it was drawn and, when downloaded, where from.
func requestSetMeta(set *workload.RequestSet, count int) record.RequestSet {
	rs := record.RequestSet{Source: set.Source, Format: set.Format, Count: count, SHA256: set.SHA256,
		Seed: set.Options.Seed, Unique: set.Unique, Sampling: set.Sampling, LengthMethod: set.LengthMethod}
	if o := set.Origin; o != nil {
		rs.Origin = &record.DatasetOrigin{URL: o.URL, Repo: o.Repo, Revision: o.Revision, RequestedRevision: o.Requested,
			Path: o.Path, SHA256: o.SHA256, Size: o.Size}
	}
	if t := set.Trace; t != nil {
		rs.Trace = &record.TraceWindow{File: t.File, Format: t.Format, SHA256: t.SHA256, StartS: t.StartS, DurationS: t.DurationS,
			Scale: t.Scale, Requests: t.Requests, TotalRows: t.TotalRows}
	}
	return rs
}

// FormalRequests returns how many formal requests the profile's requests
// steps will send: each step's frozen set (Prepare) times its repeat,
// capped by max_requests. known is false when a step sends the whole
// dataset (count 0) and no set was frozen for it (d nil or not prepared),
// or when an observe step measures another tool's load.
func FormalRequests(l *workflow.Loaded, d *Deps) (n int, known bool) {
	known = true
	for _, st := range l.Steps {
		if _, ok := st.Config.(*ObserveConfig); ok {
			// joulebench measure: the load is another tool's, its count
			// unknown before it has run.
			known = false
			continue
		}
		c, ok := st.Config.(*RequestsConfig)
		if !ok {
			continue
		}
		k := c.Count
		if d != nil {
			if set, ok := d.run.sets[st.Config]; ok {
				k = len(set.Prompts)
			}
		}
		if k == 0 {
			known = false
			continue
		}
		n += requestsSent(c, k)
	}
	return n, known
}

// requestsSent is how many requests a requests step sends from a set of
// n prompts: n times its repeat, capped by max_requests (saturating
// instead of overflowing).
func requestsSent(c *RequestsConfig, n int) int {
	k := n
	if c.Repeat > 1 {
		if n > math.MaxInt/c.Repeat {
			k = math.MaxInt
		} else {
			k = n * c.Repeat
		}
	}
	if c.MaxRequests > 0 {
		k = min(k, c.MaxRequests)
	}
	return k
}

// servedLengths makes a generated set's prompt lengths (random, shared
// prefixes, a trace) in the served model's tokens, once the engine is up:
// with the server's own tokenizer
// when the engine has one (engines.Tokenizer: llama.cpp, vLLM, SGLang,
// the simulator), else calibrated with two probe requests against the
// server's prompt_tokens (Ollama, an external server). When neither works
// the set stays as generated (length method "estimate") and a warning
// says so. Any other set is returned as it is.
func servedLengths(ctx context.Context, rc *workflow.RunContext, d *Deps, set *workload.RequestSet) (*workload.RequestSet, error) {
	if set.LengthMethod != workload.LengthEstimate || len(set.Prompts) == 0 {
		return set, nil
	}
	if tk, ok := d.Engine.(engines.Tokenizer); ok {
		fitted, err := fitLengths(ctx, set, tk.CountTokens, workload.LengthTokenize)
		if err == nil {
			return fitted, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		rc.Log.Warn().Err(err).Msg("the server's tokenizer failed: calibrating the prompt lengths with probe requests instead")
	}
	count, err := calibrate(ctx, d, set)
	if err == nil {
		var fitted *workload.RequestSet
		if fitted, err = fitLengths(ctx, set, count, workload.LengthCalibrated); err == nil {
			return fitted, nil
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	rc.Log.Warn().Err(err).Msg("prompt lengths are estimated (a word for a token), not in the served model's tokens")
	return set, nil
}

// calibrate sends two probe requests (max_tokens 1) of w and 2w words
// drawn from the set's first prompt, w a quarter of the mean input length
// (at least 8), and fits the server's prompt_tokens as a line in the
// words (workload.LinearCounter). The probes are not recorded.
func calibrate(ctx context.Context, d *Deps, set *workload.RequestSet) (workload.TokenCounter, error) {
	if d.Client == nil {
		return nil, fmt.Errorf("no client to send probe requests")
	}
	// A quarter of the mean input length: the random set's own, else
	// (a trace, the shared-prefix set) its prompts' mean in words.
	w1 := max(8, set.MeanPromptWords()/4)
	if spec, err := workload.ParseRandomSpec(set.Source); err == nil {
		w1 = max(8, spec.InputLen/4)
	}
	words := strings.Fields(set.Prompts[0].Prompt)
	if len(words) == 0 {
		return nil, fmt.Errorf("no words in the first prompt to probe with")
	}
	probe := func(n int) (int, error) {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = words[i%len(words)]
		}
		r := d.Client.Do(ctx, workload.Request{ID: fmt.Sprintf("calibrate-%d", n), Phase: "calibrate", Model: d.Model,
			Prompt: strings.Join(ws, " "), MaxTokens: 1, Chat: d.Chat})
		if !r.OK {
			return 0, fmt.Errorf("probe request of %d words: %s", n, r.Error)
		}
		if r.PromptTokens <= 0 {
			return 0, fmt.Errorf("probe request of %d words: the server reported no prompt_tokens", n)
		}
		return r.PromptTokens, nil
	}
	c1, err := probe(w1)
	if err != nil {
		return nil, err
	}
	c2, err := probe(2 * w1)
	if err != nil {
		return nil, err
	}
	return workload.LinearCounter(w1, c1, 2*w1, c2)
}

// fitLengths puts a generated set's lengths in the served model's tokens:
// prompt by prompt for the random set (workload.FitRandom), by one ratio
// for the shared-prefix set and a trace, whose prompts share text
// (workload.FitRatio).
func fitLengths(ctx context.Context, set *workload.RequestSet, count workload.TokenCounter, method string) (*workload.RequestSet, error) {
	if set.CanFitRatio() {
		return workload.FitRatio(ctx, set, count, method)
	}
	return workload.FitRandom(ctx, set, count, method)
}
