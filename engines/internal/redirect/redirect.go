// Package redirect is the redirect policy of every HTTP client that talks
// to an engine. Those clients carry credentials the user gave for one
// server (basic auth and a query from --engine-url, the --api-key bearer),
// some added again by their transport at every request, redirects
// included; so a redirect to another host is refused, never followed.
package redirect

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/joulebench/joulebench/internal/redact"
)

// MaxHops is how many redirects on the same host are followed.
const MaxHops = 10

// ErrOtherHost is returned (wrapped) for a redirect to another origin.
var ErrOtherHost = errors.New("redirect to another host refused")

// SameHost is an http.Client CheckRedirect: it follows up to MaxHops
// redirects that stay on the first request's origin (scheme, host and
// port) and refuses one that leaves it, saying where it pointed.
func SameHost(req *http.Request, via []*http.Request) error {
	if len(via) == 0 {
		return nil
	}
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("%w: %s://%s answered with a redirect to %s; joulebench sends its credentials only to the server it was given, use that address instead",
			ErrOtherHost, first.Scheme, first.Host, redact.URL(req.URL.String()))
	}
	if len(via) >= MaxHops {
		return fmt.Errorf("stopped after %d redirects", MaxHops)
	}
	return nil
}

// Guard returns a copy of c (a new client when nil) whose redirect policy
// is SameHost.
func Guard(c *http.Client) *http.Client {
	var cc http.Client
	if c != nil {
		cc = *c
	}
	cc.CheckRedirect = SameHost
	return &cc
}
