package sim

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// TestServe: serve-sim listens where told, reports its activity on
// /metrics (loading, then ready with the quick load of 2 s / 3 = 0.67 s)
// and returns nil once its context ends (SIGTERM).
func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ServeOptions{Listen: addr, Quick: true, Seed: 1, Grace: 10 * time.Millisecond})
	}()
	phases := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for !phases[simtel.PhaseReady] && time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			a, perr := simtel.ParseActivity(resp.Body)
			resp.Body.Close()
			if perr == nil {
				phases[a.Phase] = true
				if a.Slots <= 0 {
					t.Fatalf("activity %+v: no slots", a)
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !phases[simtel.PhaseLoading] || !phases[simtel.PhaseReady] {
		t.Fatalf("phases seen %v, want loading then ready", phases)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}

func TestServeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    ServeOptions
		want string
	}{
		{"no listen", ServeOptions{}, "--listen is required"},
		{"bad preset", ServeOptions{Listen: "127.0.0.1:0", Preset: "nope"}, `"nope": not a preset`},
		{"deployment", ServeOptions{Listen: "127.0.0.1:0", Preset: "disaggregated"}, "cannot be served as one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Serve(context.Background(), tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Serve = %v, want %q", err, tc.want)
			}
		})
	}
}
