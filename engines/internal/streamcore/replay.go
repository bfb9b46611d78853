package streamcore

import "net/http"

// Replaying wraps rt so that a request with a body that failed on a
// reused keep-alive connection before any answer came back is resent:
// llama-server closes its connection after a streamed response although
// it announces keep-alive, and Go's transport only retries requests it
// may replay (idempotent methods, or a request whose header holds an
// Idempotency-Key or X-Idempotency-Key). The key added is nil-valued, so
// it is never sent; a request the server has started answering is never
// resent. The caller's request is not modified.
func Replaying(rt http.RoundTripper) http.RoundTripper { return replayable{rt: rt} }

type replayable struct{ rt http.RoundTripper }

func (r replayable) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.GetBody != nil && req.Header.Get("Idempotency-Key") == "" {
		req = req.Clone(req.Context())
		req.Header["X-Idempotency-Key"] = nil
	}
	return r.rt.RoundTrip(req)
}
