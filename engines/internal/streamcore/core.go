package streamcore

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workload"
)

// DefaultRequestTimeout bounds one request from send to the end of its
// stream unless the client says otherwise. It is long because in an
// unlimited-concurrency stage the last requests wait behind all the others.
const DefaultRequestTimeout = time.Hour

// Call is one request of a client, ready to send: how (Config, whose
// Timeout and Stall are the client's limits) and what.
type Call struct {
	Config
	// Target is the endpoint's URL, Body the encoded request.
	Target string
	Body   []byte
	// EncodeErr is why the body could not be made: nothing is sent, and
	// the record says "encode request: ...".
	EncodeErr error
	// ReportWrote tells the request's flight when the request has been
	// written (Flight.Wrote), before the response, so that the load
	// generator may release the next sends.
	ReportWrote bool
	// TokenTimes makes room in the record for the token times.
	TokenTimes bool
}

// Limits are the request timeout and the stall timeout of a request under
// flight f (nil: none): a limit the flight sets (> 0) wins over the
// client's own.
func Limits(timeout, stall time.Duration, f *workload.Flight) (time.Duration, time.Duration) {
	if f != nil {
		if f.Limits.Timeout > 0 {
			timeout = f.Limits.Timeout
		}
		if f.Limits.Stall > 0 {
			stall = f.Limits.Stall
		}
	}
	return timeout, stall
}

// Begin starts the lifecycle of request r under flight f (nil: none), the
// same for every client: rec is r's record (id, phase, prompt, max
// tokens); a body that did not encode, or a failure before a 200 response
// (the connection, the status), is written into rec (SentAt, DoneAt,
// Error) and Begin returns nil. Otherwise rec.SentAt is when the
// connection was obtained, and the caller reads x.Resp.Body into rec, then
// calls x.Close.
func Begin(ctx context.Context, c Call, r workload.Request, f *workload.Flight, rec *record.Request) *Exchange {
	*rec = record.Request{ID: r.ID, Phase: r.Phase, PromptID: r.PromptID, MaxTokens: r.MaxTokens}
	if c.EncodeErr != nil {
		rec.SentAt = c.Clock()
		rec.DoneAt = rec.SentAt
		rec.Error = "encode request: " + c.EncodeErr.Error()
		return nil
	}
	c.Timeout, c.Stall = Limits(c.Timeout, c.Stall, f)
	if c.ReportWrote && f != nil {
		c.Wrote = f.Wrote // the load generator may release the next sends
	}
	x := send(ctx, c.Config, c.Target, c.Body, rec)
	if c.ReportWrote {
		f.Wrote() // no-op when the request was written; else it never will be
	}
	if x != nil && c.TokenTimes {
		rec.TokenTimes = make([]float64, 0, min(max(r.MaxTokens, 16), 4096)+1)
	}
	return x
}

// Endpoint is the URL of path on the server at base: base's path, less a
// trailing "/" and "/v1", joined with path, and base's query string kept
// (a gateway may want ?key=...), so that a query never ends up in front
// of the path.
func Endpoint(base, path string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1") + path
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1") + path
	u.RawPath = ""
	u.Fragment = ""
	return u.String()
}
