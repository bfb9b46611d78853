package loadresults

import (
	"encoding/json"
	"fmt"
)

// The vLLM format as read from vllm-project/vllm, vllm/benchmarks/serve.py
// (commit 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1) and
// vllm/benchmarks/lib/endpoint_request_func.py (commit
// 02cfb534df5674737558730b10f23d1b7aef9b7c): `vllm bench serve
// --save-result` writes one JSON object (date, backend, model_id,
// num_prompts, duration, completed, failed, total_input_tokens,
// total_output_tokens, mean_/median_/pNN_{ttft,tpot,itl,e2el}_ms, ...)
// with, per request and in the same order, input_lens, output_lens,
// ttfts, itls, latencies, start_times, errors (seconds; start_times from
// time.perf_counter()). Without --save-detailed it drops input_lens,
// output_lens, start_times, ttfts, itls, generated_texts and errors. A
// failed request has ttft 0, latency 0, no itls and an error that may be
// "" (an HTTP status with no reason). The file records no vLLM version.

// vllmFile is the part of the file read.
type vllmFile struct {
	Backend           string      `json:"backend"`
	EndpointType      string      `json:"endpoint_type"`
	Duration          *float64    `json:"duration"`
	Completed         *float64    `json:"completed"`
	Failed            *float64    `json:"failed"`
	TotalInputTokens  *float64    `json:"total_input_tokens"`
	TotalOutputTokens *float64    `json:"total_output_tokens"`
	MeanTTFTMs        *float64    `json:"mean_ttft_ms"`
	MeanTPOTMs        *float64    `json:"mean_tpot_ms"`
	MeanITLMs         *float64    `json:"mean_itl_ms"`
	MeanE2ELMs        *float64    `json:"mean_e2el_ms"`
	InputLens         []float64   `json:"input_lens"`
	OutputLens        []float64   `json:"output_lens"`
	TTFTs             []float64   `json:"ttfts"`
	ITLs              [][]float64 `json:"itls"`
	Latencies         []float64   `json:"latencies"`
	StartTimes        []float64   `json:"start_times"`
	Errors            []*string   `json:"errors"`
}

func parseVLLM(name string, data []byte) (*Results, error) {
	var f vllmFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: vLLM bench serve result: %w", name, err)
	}
	if f.Completed == nil || f.Duration == nil {
		return nil, fmt.Errorf("%s: vLLM bench serve result: field \"completed\" or \"duration\" is missing (not a result of `vllm bench serve --save-result`)", name)
	}
	r := &Results{Path: name, Format: VLLMBenchServe, Tool: "vllm bench serve"}
	if err := f.aggregates(name, &r.Aggregates); err != nil {
		return nil, err
	}
	if f.TTFTs == nil || f.OutputLens == nil {
		r.NoRequests = "the file has no per-request ttfts and output_lens (saved without --save-detailed)"
		return r, nil
	}
	reqs, err := f.requests(name)
	if err != nil {
		return nil, err
	}
	r.Requests = reqs
	if f.StartTimes != nil {
		r.Clock = ClockMonotonic
	} else {
		r.Notes = append(r.Notes, "the file has no start_times (vLLM before they were saved): requests have no start")
	}
	return r, nil
}

func (f *vllmFile) aggregates(name string, a *Aggregates) error {
	if err := checkSeconds(name, "duration", *f.Duration); err != nil {
		return err
	}
	a.Duration = *f.Duration
	for _, c := range []struct {
		field string
		v     *float64
		to    func(int)
	}{
		{"completed", f.Completed, func(n int) { a.Completed = n }},
		{"failed", f.Failed, func(n int) { a.Failed = n }},
		{"total_input_tokens", f.TotalInputTokens, func(n int) { a.InputTokens = int64(n) }},
		{"total_output_tokens", f.TotalOutputTokens, func(n int) { a.OutputTokens = int64(n) }},
	} {
		if c.v == nil {
			continue
		}
		n, err := checkCount(name, c.field, *c.v)
		if err != nil {
			return err
		}
		c.to(n)
	}
	a.Stated = append(a.Stated, "duration", "completed")
	if f.TotalOutputTokens != nil {
		a.Stated = append(a.Stated, "output_tokens")
	}
	for _, m := range []struct {
		field string
		v     *float64
		to    *float64
	}{
		{"mean_ttft_ms", f.MeanTTFTMs, &a.MeanTTFT},
		{"mean_tpot_ms", f.MeanTPOTMs, &a.MeanTPOT},
		{"mean_itl_ms", f.MeanITLMs, &a.MeanITL},
		{"mean_e2el_ms", f.MeanE2ELMs, &a.MeanLatency},
	} {
		if m.v == nil {
			continue
		}
		if err := checkSeconds(name, m.field, *m.v/1000); err != nil {
			return err
		}
		*m.to = *m.v / 1000
		a.Stated = append(a.Stated, m.field)
	}
	return nil
}

// checkCount refuses a count that is negative, not whole or beyond 2^53.
func checkCount(name, field string, v float64) (int, error) {
	if v < 0 || v > 1<<53 || v != float64(int64(v)) {
		return 0, fieldError(name, field, "%v is not a count (a whole number ≥ 0)", v)
	}
	return int(v), nil
}

// requests builds the per-request records, every list as long as ttfts.
func (f *vllmFile) requests(name string) ([]Request, error) {
	n := len(f.TTFTs)
	for _, l := range []struct {
		field string
		len   int
		given bool
	}{
		{"output_lens", len(f.OutputLens), true},
		{"input_lens", len(f.InputLens), f.InputLens != nil},
		{"itls", len(f.ITLs), f.ITLs != nil},
		{"latencies", len(f.Latencies), f.Latencies != nil},
		{"start_times", len(f.StartTimes), f.StartTimes != nil},
		{"errors", len(f.Errors), f.Errors != nil},
	} {
		if l.given && l.len != n {
			return nil, fieldError(name, l.field, "%d entries, but ttfts has %d (one per request in each)", l.len, n)
		}
	}
	reqs := make([]Request, n)
	for i := range reqs {
		q, err := f.request(name, i)
		if err != nil {
			return nil, err
		}
		reqs[i] = q
	}
	return reqs, nil
}

func (f *vllmFile) request(name string, i int) (Request, error) {
	var q Request
	var err error
	at := func(field string) string { return fmt.Sprintf("%s[%d]", field, i) }
	if err := checkSeconds(name, at("ttfts"), f.TTFTs[i]); err != nil {
		return q, err
	}
	q.TTFT = f.TTFTs[i]
	if q.OutputTokens, err = checkTokens(name, at("output_lens"), f.OutputLens[i]); err != nil {
		return q, err
	}
	if f.InputLens != nil {
		if q.InputTokens, err = checkTokens(name, at("input_lens"), f.InputLens[i]); err != nil {
			return q, err
		}
	}
	if f.Latencies != nil {
		if err := checkSeconds(name, at("latencies"), f.Latencies[i]); err != nil {
			return q, err
		}
		q.Latency = f.Latencies[i]
	}
	if f.StartTimes != nil {
		if s := f.StartTimes[i]; s < 0 || s > 1e12 {
			return q, fieldError(name, at("start_times"), "%v is not a time in seconds", s)
		}
		q.Start = f.StartTimes[i]
	}
	if f.ITLs != nil {
		for j, v := range f.ITLs[i] {
			if err := checkSeconds(name, fmt.Sprintf("itls[%d][%d]", i, j), v); err != nil {
				return q, err
			}
		}
		q.ITL = f.ITLs[i]
	}
	if f.Errors != nil && f.Errors[i] != nil {
		q.Error = *f.Errors[i]
	}
	// A request vLLM counted as failed has an error, or no first token
	// (ttft 0; the reason may be "").
	q.OK = q.Error == "" && q.TTFT > 0
	if !q.OK && q.Error == "" {
		q.Error = "failed: no first token (vLLM recorded no reason)"
	}
	if q.OK && q.OutputTokens > 1 && q.Latency > q.TTFT {
		q.TPOT = (q.Latency - q.TTFT) / float64(q.OutputTokens-1)
	}
	if q.OK && q.Latency > 0 && q.Latency < q.TTFT {
		return q, fieldError(name, at("latencies"), "%v s is shorter than ttfts[%d] %v s", q.Latency, i, q.TTFT)
	}
	return q, nil
}
