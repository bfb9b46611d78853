package engines

import (
	"context"
	"net/http"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workload"
)

// Client is a run's request client: it sends one request and returns its
// record, never an error (a failure is a record with ok=false). It is the
// load generator's Doer; the clients of engines/all also have its
// optional abilities (Tracker, Preparer).
type Client interface {
	Do(ctx context.Context, r workload.Request) record.Request
}

// ClientConfig is what a run's request client is built from, whatever its
// API: each API's client reads the fields it has a use for.
type ClientConfig struct {
	// BaseURL is the server's root.
	BaseURL string
	// Clock is the run's clock (Unix seconds).
	Clock func() float64
	// HTTP is the client requests go through.
	HTTP *http.Client
	// APIKey, when set, is sent as a bearer token; RunID names the run in
	// each request's X-Request-Id (where the API has one).
	APIKey, RunID string
	// Seed and MaxModelLen are sent with every request where the API
	// takes them per request (Ollama's seed and num_ctx).
	Seed        int64
	MaxModelLen int
	// Think is the thinking setting sent with every request (nil: the
	// server's default).
	Think *bool
}

// NewClientFunc builds the request client of one API.
type NewClientFunc func(ClientConfig) Client
