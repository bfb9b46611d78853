package main

// joulebench measure around load generators joulebench did not write
// (hey, from the Go module proxy, and a plain curl loop) against a real
// llama-server (found as the other engine tests find it) serving the tiny
// random-weight GGUF model, with --metrics. The power is a replayed
// recording (a simulated power source: known by construction), so the
// hand value of J/token is the trapezoid of the archive's own power.csv
// over the formal stage divided by the server's token counter, read by
// the test itself before and after the run.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

// loadTool finds a load generator: envVar, then PATH, then (for a Go
// tool) GOPATH/bin; absent, the test skips (fails under
// JOULEBENCH_REQUIRE_ENGINES=1, as CI sets).
func loadTool(t *testing.T, envVar, name string) string {
	t.Helper()
	if p := os.Getenv(envVar); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("%s not installed (set %s; .ci/run installs it)", name, envVar)
	if os.Getenv("JOULEBENCH_REQUIRE_ENGINES") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// startLlamaServer starts llama-server bin on 127.0.0.1 with model and
// --metrics in its own process group, stopped when t ends, and returns
// its URL once /health answers 200.
func startLlamaServer(t *testing.T, bin, model string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	logf, err := os.Create(filepath.Join(t.TempDir(), "llama-server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-m", model, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--metrics", "-c", "1024", "-np", "2")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logf.Close()
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("llama-server at %s not healthy within 2 min; its log:\n%s", base, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tokensPredicted reads llama-server's own counter of generated tokens.
func tokensPredicted(t *testing.T, base string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "llamacpp:tokens_predicted_total "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("%s/metrics has no llamacpp:tokens_predicted_total", base)
	return 0
}

// replayRecording writes a power.csv of one GPU over 15 minutes at 20
// samples a second, alternating 78 W and 82 W (within the release band
// of the 80 W idle, so the release closes after its hold).
func replayRecording(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("t,device,power_w,energy_j,mem_used_bytes\n")
	t0 := 1.8e9
	for i := 0; i < 15*60*20; i++ {
		w := 78.0
		if i%2 == 1 {
			w = 82
		}
		fmt.Fprintf(&b, "%.2f,gpu0,%g,,\n", t0+float64(i)*0.05, w)
	}
	p := filepath.Join(t.TempDir(), "power.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// handEnergy is the trapezoid of the samples' power over [a, b], power at
// a and b interpolated between the neighbouring samples (one device).
func handEnergy(ps []record.PowerSample, a, b float64) float64 {
	sort.Slice(ps, func(i, j int) bool { return ps[i].T < ps[j].T })
	at := func(x float64) float64 {
		i := sort.Search(len(ps), func(i int) bool { return ps[i].T >= x })
		if i == 0 {
			return ps[0].PowerW
		}
		if i == len(ps) {
			return ps[len(ps)-1].PowerW
		}
		p, q := ps[i-1], ps[i]
		return p.PowerW + (q.PowerW-p.PowerW)*(x-p.T)/(q.T-p.T)
	}
	ts, ws := []float64{a}, []float64{at(a)}
	for _, s := range ps {
		if s.T > a && s.T < b {
			ts, ws = append(ts, s.T), append(ws, s.PowerW)
		}
	}
	ts, ws = append(ts, b), append(ws, at(b))
	e := 0.0
	for i := 1; i < len(ts); i++ {
		e += (ws[i] + ws[i-1]) / 2 * (ts[i] - ts[i-1])
	}
	return e
}

func TestMeasureLlamaServer(t *testing.T) {
	bin := llamaServer(t)
	hey := loadTool(t, "JOULEBENCH_HEY", "hey")
	curl := loadTool(t, "JOULEBENCH_CURL", "curl")
	base := startLlamaServer(t, bin, tinyModel(t, t.TempDir()))
	body := `{"prompt":"Once upon a time","max_tokens":32,"temperature":0}`
	rec := replayRecording(t)
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"hey", []string{hey, "-n", "24", "-c", "2", "-m", "POST", "-T", "application/json", "-d", body, base + "/v1/completions"}},
		{"curl loop", []string{"sh", "-c", fmt.Sprintf(`for i in 1 2 3 4 5 6 7 8; do %s -sS -o /dev/null -H 'Content-Type: application/json' -d '%s' %s/v1/completions || exit 1; done`, curl, body, base)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			before := tokensPredicted(t, base)
			args := append([]string{"measure", "--engine-url", base, "--engine", "llamacpp", "--telemetry", "replay", "--replay", rec,
				"--out", out, "--no-progress", "--set", "baseline=2s", "--set", "sample_interval=100ms", "--set", "release_hold=1s",
				"--set", "release_max_wait=30s", "--"}, tc.argv...)
			stdout, stderr, code := runCLI(t, args...)
			after := tokensPredicted(t, base)
			if code != 0 {
				t.Fatalf("measure exit %d\n%s\n%s", code, stdout, stderr)
			}
			run, err := archive.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			m := run.Meta
			tokens := int(after - before)
			if m.Measure == nil || m.Measure.OutputTokens != tokens || tokens <= 0 {
				t.Fatalf("measure %+v; the server's counter moved by %d", m.Measure, tokens)
			}
			if m.Measure.ExitStatus == nil || *m.Measure.ExitStatus != 0 || m.Measure.TokenMetric != "llamacpp:tokens_predicted_total" {
				t.Errorf("measure %+v", *m.Measure)
			}
			formal, ok := m.StageByName("formal")
			if _, okb := m.StageByName("baseline"); !ok || !okb {
				t.Fatalf("stages %+v", m.Stages)
			}
			if _, ok := m.StageByName("release"); !ok {
				t.Fatalf("no release stage: %+v", m.Stages)
			}
			hand := handEnergy(run.Power, formal.Start, formal.End) / float64(tokens)
			got := measureResult(t, out, "formal_j_per_token")
			t.Logf("%s: formal stage %.3f s, %d tokens (llamacpp:tokens_predicted_total %.0f → %.0f), formal_j_per_token %.5f J/token, hand %.5f J/token",
				tc.name, formal.End-formal.Start, tokens, before, after, got, hand)
			if math.Abs(got-hand)/hand > 0.02 {
				t.Errorf("formal_j_per_token %v, hand value %v (trapezoid of power.csv over the formal stage / the counter's %d tokens)", got, hand, tokens)
			}
			if rel := measureResult(t, out, "release_complete_at"); rel < formal.End {
				t.Errorf("release_complete_at %v before the formal stage's end %v", rel, formal.End)
			}
			if !strings.Contains(stderr, "exited with status 0") {
				t.Errorf("stderr does not report the command's exit status:\n%s", stderr)
			}
		})
	}
}

// resultEntry is a value of a run's results.json, as written.
type resultEntry struct {
	Value any    `json:"value"`
	Note  string `json:"note"`
}

// resultValues reads the values of the run's results.json in dir.
func resultValues(t *testing.T, dir string) map[string]resultEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, archive.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Values map[string]resultEntry `json:"values"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res.Values
}

// measureResult is a number of the run's results.json.
func measureResult(t *testing.T, dir, name string) float64 {
	t.Helper()
	e := resultValues(t, dir)[name]
	v, ok := e.Value.(float64)
	if !ok {
		t.Fatalf("results.json %s: %+v", name, e)
	}
	return v
}
