package observe

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/importer/loadresults"
	"github.com/joulebench/joulebench/steps"
)

// stageSlack is how far (s) a request of a result file on the Unix
// clock may lie outside the formal stage and still be taken as this
// load's (clocks of the tool and of joulebench read at slightly
// different moments); it is then placed on the stage's edge.
const stageSlack = 0.5

// crossCheckTolerance is the largest relative difference between the
// result file's output tokens and the server counter's that is not
// pointed out.
const crossCheckTolerance = 0.02

// resultsReader is the observe step's Results for the result file at
// path: read once the command has exited.
func resultsReader(path string) func(start, end float64, counted int) (*steps.ObservedRequests, error) {
	return func(start, end float64, counted int) (*steps.ObservedRequests, error) {
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("--results: %w", err)
		}
		if mt := float64(st.ModTime().UnixNano()) / 1e9; mt < start-1 {
			return nil, fmt.Errorf("--results %s was last written before the formal stage began: not this load's results", path)
		}
		res, err := loadresults.Read(path)
		if err != nil {
			return nil, fmt.Errorf("--results: %w", err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--results: %w", err)
		}
		sum := sha256.Sum256(b)
		return FromResults(res, hex.EncodeToString(sum[:]), start, end, counted)
	}
}

// FromResults turns a result file's per-request records into the formal
// requests of the stage [start, end]: on the Unix clock as they are (a
// request outside the stage by more than stageSlack is refused); on the
// tool's monotonic clock shifted so that the last response ends at the
// stage's end (the command exits right after it). counted is the server
// counter's output tokens (-1: none), which the file's are set beside.
func FromResults(res *loadresults.Results, sha string, start, end float64, counted int) (*steps.ObservedRequests, error) {
	if len(res.Requests) == 0 {
		return nil, fmt.Errorf("--results %s has no per-request records (%s)", res.Path, res.NoRequests)
	}
	var shift float64
	var notes []string
	switch res.Clock {
	case loadresults.ClockUnix:
	case loadresults.ClockMonotonic:
		last := math.Inf(-1)
		for _, r := range res.Requests {
			last = math.Max(last, r.Start+r.Latency)
		}
		shift = end - last
		notes = append(notes, fmt.Sprintf("%s's request times are on its own monotonic clock: placed so that the last response ends at the formal stage's end (the command's exit)", res.Tool))
	default:
		return nil, fmt.Errorf("--results %s records no request start times: the requests cannot be placed in the formal stage", res.Path)
	}
	recs, err := res.Records(shift, "formal")
	if err != nil {
		return nil, fmt.Errorf("--results: %w", err)
	}
	out := make([]record.Request, 0, len(recs))
	var tokens int64
	for i, q := range recs {
		q, err := inStage(i, q, res.Requests[i].ITL, start, end)
		if err != nil {
			return nil, fmt.Errorf("--results %s: %w", res.Path, err)
		}
		if q.OK {
			tokens += int64(q.OutputTokens)
		}
		out = append(out, q)
	}
	if counted >= 0 && tokens > int64(counted+archive.MaxResultTokensOver(counted)) {
		return nil, fmt.Errorf("--results %s: its %d output tokens are above the server's count: %d by the server's counter, at most %d more by the file (10 %%, at least 16: the tool's own tokenizer); the counter counts every token the server generated, so the file counts tokens that were not generated here",
			res.Path, tokens, counted, archive.MaxResultTokensOver(counted))
	}
	notes = append(notes, crossCheck(res, tokens, counted))
	file := &record.MeasureResults{Path: filepath.Clean(res.Path), SHA256: sha, Format: string(res.Format), Tool: res.Tool, Version: res.Version,
		Clock: string(res.Clock), Requests: len(out), OutputTokens: tokens}
	what := fmt.Sprintf("the %s result file %s: %d requests with their own times (the tool's token counts)", res.Tool, filepath.Base(res.Path), len(out))
	return &steps.ObservedRequests{Requests: out, What: what, Notes: append(notes, res.Notes...), File: file}, nil
}

// inStage places the i-th record of a result file (loadresults.Records)
// in the formal stage [start, end]: one outside it by more than
// stageSlack is not of this load; within it, it is put on the stage's
// edge. Its tokens are the tool's (tokens_source user); its chunk
// arrivals come from the gaps the file lists.
func inStage(i int, q record.Request, itl []float64, start, end float64) (record.Request, error) {
	if q.DoneAt == 0 {
		q.DoneAt = q.SentAt // a failed request the file gives no latency
	}
	if q.SentAt < start-stageSlack || q.DoneAt > end+stageSlack {
		return q, fmt.Errorf("request %d (sent %.3f, done %.3f) lies outside the formal stage [%.3f, %.3f]: the file is not of this load", i+1, q.SentAt, q.DoneAt, start, end)
	}
	q.ID = fmt.Sprintf("results-%d", i+1)
	q.SentAt = math.Max(q.SentAt, start)
	q.DoneAt = math.Min(math.Max(q.DoneAt, q.SentAt), end)
	if !q.OK {
		q.FirstTokenAt = 0
		if q.Error == "" {
			q.Error = "failed (the tool's result file)"
		}
		return q, nil
	}
	q.TokensSource = "user"
	q.FirstTokenAt = math.Min(math.Max(q.FirstTokenAt, q.SentAt), q.DoneAt)
	q.TokenTimes = chunkTimes(q.FirstTokenAt, q.DoneAt, itl, q.OutputTokens)
	return q, nil
}

// chunkTimes are the arrival times of a request's streamed chunks from
// its first token and the gaps the file lists; nil when they do not fit
// the request (more chunks than tokens, or past its end).
func chunkTimes(first, done float64, itl []float64, tokens int) []float64 {
	if len(itl) == 0 || len(itl)+1 > tokens {
		return nil
	}
	ts := make([]float64, 0, len(itl)+1)
	t := first
	ts = append(ts, t)
	for _, g := range itl {
		t += g
		if g < 0 || t > done+1e-6 {
			return nil
		}
		ts = append(ts, math.Min(t, done))
	}
	return ts
}

// crossCheck sets the result file's output tokens beside the server
// counter's.
func crossCheck(res *loadresults.Results, tokens int64, counted int) string {
	if counted < 0 {
		return fmt.Sprintf("output tokens: %d by the %s result file; the server's counter could not be read", tokens, res.Tool)
	}
	diff := 0.0
	if counted > 0 {
		diff = math.Abs(float64(tokens)-float64(counted)) / float64(counted)
	}
	msg := fmt.Sprintf("output tokens: %d by the %s result file, %d by the server's counter (%.1f %% apart)", tokens, res.Tool, counted, 100*diff)
	if diff > crossCheckTolerance || counted == 0 && tokens > 0 {
		msg += ": more than 2 % apart; the counter counts every request the server served in the window (anyone else's too), the file only the tool's, each by its own tokenizer"
	}
	return msg
}
