package simtest

import (
	"io"
	"net/http"
	"testing"

	"github.com/joulebench/joulebench/engines/sim"
)

// The engine Serve returns answers at once: its model list is served.
func TestServeIsReady(t *testing.T) {
	cfg := sim.Quick(sim.DefaultConfig())
	cfg.Log = io.Discard
	e := Serve(t, cfg)
	resp, err := http.Get(e.BaseURL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/models: %s", resp.Status)
	}
}
