package loadresults

import (
	"fmt"

	"github.com/joulebench/joulebench/archive/record"
)

// Records gives the file's requests as the archive's request records
// (requests.jsonl), their times on the Unix clock: a request's sent_at is
// its Start + shift. shift is 0 for a file on ClockUnix; for one on
// ClockMonotonic (vLLM) it is the offset from the tool's clock to Unix
// time, which only the caller can know (for instance from when the
// command ran). phase is the records' phase ("formal"). A file without
// per-request data or without start times has no records (an error
// says why); so has a successful request without a first-token time or a
// latency (a request that was not streamed), which the archive requires,
// and so has a file whose every successful request of two or more output
// tokens has its first token at its end: a tool that did not stream
// states the latency as the time to first token, which would read as a
// TPOT of 0 (one such request among streamed ones is a response that
// came in one chunk, and stays). A failed request keeps no output
// tokens (the archive never counts a failed request's tokens).
func (r *Results) Records(shift float64, phase string) ([]record.Request, error) {
	switch {
	case r.Requests == nil:
		return nil, fmt.Errorf("%s: no per-request data: %s", r.Path, r.NoRequests)
	case r.Clock == ClockNone:
		return nil, fmt.Errorf("%s: the requests have no start times", r.Path)
	case r.Clock == ClockMonotonic && shift == 0:
		return nil, fmt.Errorf("%s: start times on %s's own clock need the offset to Unix time", r.Path, r.Tool)
	case r.Clock == ClockUnix && shift != 0:
		return nil, fmt.Errorf("%s: start times are Unix times already; no offset applies", r.Path)
	}
	if err := r.checkStreamed(); err != nil {
		return nil, err
	}
	out := make([]record.Request, 0, len(r.Requests))
	for i, q := range r.Requests {
		rec := record.Request{ID: fmt.Sprintf("%s-%d", r.Format, i), Phase: phase, SentAt: q.Start + shift,
			PromptTokens: q.InputTokens, OK: q.OK, Error: q.Error}
		if q.TTFT > 0 {
			rec.FirstTokenAt = rec.SentAt + q.TTFT
		}
		if q.Latency > 0 {
			rec.DoneAt = rec.SentAt + q.Latency
		}
		if q.OK {
			if q.TTFT == 0 || q.Latency == 0 {
				return nil, fmt.Errorf("%s: request %d succeeded but has no time to first token or no latency (not streamed?): the archive needs both", r.Path, i)
			}
			if q.Latency < q.TTFT {
				return nil, fmt.Errorf("%s: request %d: latency %v s is shorter than its time to first token %v s", r.Path, i, q.Latency, q.TTFT)
			}
			rec.OutputTokens = q.OutputTokens
		}
		out = append(out, rec)
	}
	return out, nil
}

// checkStreamed refuses requests of which none was streamed: every
// successful one of two or more output tokens has its first token at its
// end (none such: nothing to tell).
func (r *Results) checkStreamed() error {
	multi := 0
	for _, q := range r.Requests {
		if !q.OK || q.OutputTokens < 2 {
			continue
		}
		if q.TTFT != q.Latency {
			return nil
		}
		multi++
	}
	if multi == 0 {
		return nil
	}
	return fmt.Errorf("%s: every successful request of two or more output tokens has its time to first token equal to its latency (%d requests): the responses were not streamed, so when their tokens came is unknown (TPOT would read 0); stream them", r.Path, multi)
}
