package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/telemetry"
)

// An agent whose clock is more than a day off the run's is refused when
// it is opened, with an error naming the agent, the offset and the bound:
// the archive reader refuses such an offset in run.json (its bound is
// archive.MaxClockOffsetS, one day), so a run that accepted it could not
// read its own archive back. An offset just inside the bound is accepted.
// An end offset beyond the bound is an end error, and the entry keeps no
// end (the run is not complete) rather than an offset the reader refuses.
func TestClockADayOffRefused(t *testing.T) {
	var clk offsetClock
	clk.set(archive.MaxClockOffsetS + 3600) // a day and an hour ahead
	url, _, _ := startAgent(t, "node1", &clk)
	_, err := Open(context.Background(), Options{Agents: []Endpoint{{URL: url}}, Token: testToken})
	if err == nil || !strings.Contains(err.Error(), "agent "+url) || !strings.Contains(err.Error(), "clock offset +") ||
		!strings.Contains(err.Error(), "more than a day (± 86400 s)") {
		t.Fatalf("open of an agent a day and an hour ahead: %v", err)
	}
	clk.set(-(archive.MaxClockOffsetS + 1)) // behind, just beyond
	if _, err := Open(context.Background(), Options{Agents: []Endpoint{{URL: url}}, Token: testToken}); err == nil || !strings.Contains(err.Error(), "more than a day") {
		t.Fatalf("open of an agent a day and a second behind: %v", err)
	}
	clk.set(archive.MaxClockOffsetS - 60) // a minute inside the bound
	s, err := Open(context.Background(), Options{Agents: []Endpoint{{URL: url}}, Token: testToken})
	if err != nil {
		t.Fatalf("open of an agent a minute within a day: %v", err)
	}
	defer s.Close()
	clk.set(archive.MaxClockOffsetS + 60)
	cs, err := s.ClockSync(context.Background(), true)
	if err == nil || !strings.Contains(err.Error(), "more than a day") || len(cs) != 1 || cs[0].EndOffsetS != nil {
		t.Fatalf("end a day and a minute off: %+v, %v", cs, err)
	}
}

// silentAgent serves the agent's protocol on 127.0.0.1: its stream sends
// n readings of gpu0, then stays open and sends nothing more (a source
// that gives nothing, a connection that hangs).
func silentAgent(t *testing.T, n int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			http.Error(w, Unauthorized, http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case PathClock:
			_ = json.NewEncoder(w).Encode(ClockReply{T: telemetry.WallClock()})
		case PathDevices:
			_ = json.NewEncoder(w).Encode(map[string]any{"host": "node-s", "devices": []map[string]string{{"id": "gpu0", "name": "Silent GPU"}}})
		case PathSamples:
			fl := w.(http.Flusher)
			for i := 1; i <= n; i++ {
				fmt.Fprintf(w, "{\"t\":%.6f,\"device\":\"gpu0\",\"power_w\":%d,\"mem_used_bytes\":-1}\n", telemetry.WallClock(), i)
				fl.Flush()
				time.Sleep(10 * time.Millisecond)
			}
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// An agent whose stream stays open but sends nothing is a dead power
// source once SilentAfter has passed without a line: Read fails naming
// the agent, where it used to repeat the last reading for ever (the run
// went on with no power and ended with exit 4).
func TestSilentStreamFails(t *testing.T) {
	url := silentAgent(t, 3)
	s, err := Open(context.Background(), Options{Agents: []Endpoint{{URL: url}}, Token: testToken, ReadWait: 20 * time.Millisecond, SilentAfter: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	for {
		_, err := s.Read(context.Background())
		if err != nil {
			if !strings.Contains(err.Error(), "agent "+url) || !strings.Contains(err.Error(), "no sample for") || !strings.Contains(err.Error(), "went silent") {
				t.Errorf("read of a silent agent: %v", err)
			}
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("a silent agent read for 5 s without an error")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Once failed, the source stays failed.
	if _, err := s.Read(context.Background()); err == nil {
		t.Error("a read after the failure succeeded")
	}
}
