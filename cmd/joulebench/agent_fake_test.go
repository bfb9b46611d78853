package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

// fakeAgent is an HTTP server on 127.0.0.1 that speaks the agent's
// protocol (GET /v1/clock, /v1/devices, /v1/samples with the bearer
// token) and misbehaves as a test asks.
type fakeAgent struct {
	// offsetS is added to the wall clock: the agent's clock.
	offsetS float64
	// clockDelay delays every /v1/clock answer.
	clockDelay time.Duration
	// samples is how many sample lines the first stream sends (every
	// 50 ms) before it ends; a later stream sends none. 0: the stream
	// never ends.
	samples int
	// silent: a stream that has sent its samples stays open and sends
	// nothing more (instead of ending).
	silent bool

	streams atomic.Int32
}

func (f *fakeAgent) now() float64 {
	return float64(time.Now().UnixNano())/1e9 + f.offsetS
}

// start serves the fake agent until the test ends and returns its URL.
func (f *fakeAgent) start(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+agentTestToken {
			http.Error(w, "bad or missing token", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/v1/clock":
			time.Sleep(f.clockDelay)
			_ = json.NewEncoder(w).Encode(map[string]float64{"t": f.now()})
		case "/v1/devices":
			_ = json.NewEncoder(w).Encode(map[string]any{"host": "node-f", "source": "fake", "interval_s": 0.05,
				"devices": []map[string]any{{"id": "gpu0", "name": "Fake GPU", "method": "power", "host": "node-f"}}})
		case "/v1/samples":
			f.stream(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// stream sends 100 W every 50 ms: for ever, or f.samples lines on the
// first stream and nothing on the next ones.
func (f *fakeAgent) stream(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	n := -1
	if f.samples > 0 {
		n = 0
		if f.streams.Add(1) == 1 {
			n = f.samples
		}
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := 0; n < 0 || i < n; i++ {
		fmt.Fprintf(w, "{\"t\":%.6f,\"device\":\"gpu0\",\"power_w\":100,\"mem_used_bytes\":-1}\n", f.now())
		if fl != nil {
			fl.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
	if f.silent {
		<-r.Context().Done()
	}
}

// runWithFakeAgent runs benchmark-1.5 on the simulator with its power
// from the fake agent at url, into a new directory under a temporary one.
func runWithFakeAgent(t *testing.T, url string) (dir, out, errOut string, code int) {
	t.Helper()
	t.Setenv("JOULEBENCH_AGENT_TOKEN", agentTestToken)
	dir = filepath.Join(t.TempDir(), "run")
	args := append([]string{"run", "benchmark-1.5", "--out", dir, "--telemetry", "agent", "--agent", url}, fastSets...)
	out, errOut, code = runCLI(t, args...)
	return dir, out, errOut, code
}

// An agent whose clock is more than a day off the run's is refused when
// the run opens it (exit 2), naming the agent, the offset and the bound:
// the archive reader refuses such an offset (docs/archive-v1.md, "Bounds"),
// so the run used to go to its end and then fail reading its own
// archive. Nothing is measured, so no run directory is left.
func TestRunRefusesAgentClockADayOff(t *testing.T) {
	f := &fakeAgent{offsetS: 2 * 86400} // two days ahead
	url := f.start(t)
	dir, out, errOut, code := runWithFakeAgent(t, url)
	if code != exitInvalid || !strings.Contains(errOut, "agent "+url) || !strings.Contains(errOut, "a day") || !strings.Contains(errOut, "clock") {
		t.Fatalf("exit %d, want %d naming the agent's clock a day off\n%s\n%s", code, exitInvalid, out, errOut)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused run left %s behind (%v)", dir, err)
	}
}

// An agent whose sample stream ends mid-run, and whose reconnects would
// get nothing, is a dead power source, whether the stream ends (EOF) or
// stays open and silent: the run fails at once (exit 1, status failed)
// with a reason naming the agent, its raw data kept.
func TestRunFailsWhenAgentStreamEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for a few seconds")
	}
	for _, c := range []struct {
		name   string
		silent bool
		want   string
	}{{"eof", false, "stream ended"}, {"silent", true, "no sample"}} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeAgent{samples: 30, silent: c.silent} // 1.5 s of samples, then the end
			url := f.start(t)
			start := time.Now()
			dir, out, errOut, code := runWithFakeAgent(t, url)
			took := time.Since(start)
			if code != exitFailure || !strings.Contains(errOut, "agent "+url) || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, want %d naming the agent's stream (%q)\n%s\n%s", code, exitFailure, c.want, out, errOut)
			}
			m, err := archive.ReadMeta(filepath.Join(dir, archive.RunFile))
			if err != nil {
				t.Fatalf("raw data not kept: %v", err)
			}
			if m.Status != record.StatusFailed || !strings.Contains(m.Reason, "agent "+url) || !strings.Contains(m.Reason, c.want) {
				t.Errorf("status %q, reason %q", m.Status, m.Reason)
			}
			if _, err := os.Stat(filepath.Join(dir, archive.PowerFile)); err != nil {
				t.Errorf("power.csv: %v", err)
			}
			// At once: the silence bound (5 s) after the last sample, well
			// before the run would have ended.
			if took > 20*time.Second {
				t.Errorf("the run took %s to fail", took)
			}
		})
	}
}

// Refusals before anything is measured (exit 2: no token, a refused
// token, a clock answering too slowly) leave no run directory.
func TestRunAgentRefusalsLeaveNoDirectory(t *testing.T) {
	slow := (&fakeAgent{clockDelay: 80 * time.Millisecond}).start(t)
	good := (&fakeAgent{}).start(t)
	for _, c := range []struct {
		name, url, token, want string
	}{
		{"no token", good, "", "JOULEBENCH_AGENT_TOKEN"},
		{"refused token", good, "not-the-token-8a", "refused the token"},
		{"slow clock", slow, agentTestToken, "round trip too long"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("JOULEBENCH_AGENT_TOKEN", c.token)
			dir := filepath.Join(t.TempDir(), "run")
			args := append([]string{"run", "benchmark-1.5", "--out", dir, "--telemetry", "agent", "--agent", c.url}, fastSets...)
			out, errOut, code := runCLI(t, args...)
			if code != exitInvalid || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, want %d with %q\n%s\n%s", code, exitInvalid, c.want, out, errOut)
			}
			if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the refused run left %s behind (%v)", dir, err)
			}
		})
	}
}
