package main

// BenchmarkRunPath measures the whole `joulebench run` path (the built-in
// benchmark-1.0 profile, --engine-url, the load generator, the archive)
// against internal/ssebench's stream server, the configurations of issue
// 15. Three processes: the stream server and the client (the test binary
// as joulebench) are children of the benchmark, each pinned to a CPU of
// its own where the system allows (Linux, two CPUs or more), so the
// client's CPU time is its own:
//
//	go test -run '^$' -bench RunPath -benchtime 1x ./cmd/joulebench/
//	go test -run '^$' -bench 'RunPath/B' -benchtime 1x -count 3 ./cmd/joulebench/
//
// Configurations (one sub-benchmark each; every iteration is one run):
//
//	A-first200ms     1,000 streams of 256 tokens, one every 20 ms, the first
//	                 200 ms after the request arrives
//	B-burst          the same without the first-token delay: first chunks
//	                 arrive while the client is still sending the burst
//	D-concurrency    B with mode concurrency at as many in flight as
//	                 streams: first chunks arrive during the first fill
//	E-gamma          B with mode gamma at 2,000 requests/s, burstiness
//	                 0.1: clusters of sends while first chunks arrive
//	C-ceiling-N      N streams (100 and 1,000), the server writing as fast
//	                 as it can, 64 chunks per write; the minimal Go client
//	                 (ssebench.RunMinimal: counts `data:` lines, no times)
//	                 runs the same streams after each run, as a reference
//
// Metrics:
//
//	ttft_added_p50_ms/_p99_ms  client first_token_at minus the server's
//	                           first write of that request
//	token_added_p99_ms         the same for every chunk
//	ttft_past_write_end_p99_ms client first_token_at minus the end of the
//	                           server's first write: on loopback the bytes
//	                           are queued to the client when the write
//	                           returns, so what is past it is the client's
//	server_write_p99_ms        server write durations (stamp to return),
//	                           which include the server kept off its CPU
//	                           by other work on a shared machine
//	late_first_frac            (A, B, D, E) share of requests whose first_token_at
//	                           is half an inter-token step or more after the
//	                           first write: stamped with a later chunk's
//	                           time, or the client or the server (between
//	                           its stamp and its write) kept off the CPU
//	late_token_frac            (A, B, D, E) the same over every chunk
//	itl_p50_ratio/_p99_ratio   (A, B, D, E) inter-token gap percentile, client
//	                           (archived token_times) ÷ server (its write
//	                           times); itl_server_p99_ms is the server's
//	tokens/cpu-s               formal output tokens per CPU-second of the
//	                           client process during the formal stage
//	                           (/proc/PID/stat sampled every 10 ms,
//	                           interpolated at the stage's ends; Linux)
//	tokens/cpu-s_whole         the same over the client's whole life
//	                           (getrusage of the child: start, baseline,
//	                           evaluation and archive included)
//	client_busy                formal-stage CPU ÷ formal-stage wall time
//	minimal_tokens/cpu-s       (C) the minimal client's tokens per CPU-second
//	                           (its getrusage over the streaming)
//
// Client and server records are joined by the X-Request-Id header
// "<run id>-<request id>" that the client sends. Times: the server stamps
// with a clock built like joulebench's run clock (wall time at its start
// plus monotonic time since), so the two differ by a constant, how far the
// wall clock moved against the monotonic one between the two starts; the
// benchmark measures that (ssebench.Offset) and adds it to every server
// time. Left out of that: a wall-clock slew during the ~0.1 s between the
// client's start and its run clock's (at most 50 µs at NTP's 500 ppm).
//
// Sizes (environment): JOULEBENCH_BENCH_RUN_STREAMS (A, B, D and E, 1000),
// JOULEBENCH_BENCH_RUN_TOKENS (A, B, D and E, 256), JOULEBENCH_BENCH_RUN_CEIL_STREAMS
// (C, "100,1000"), JOULEBENCH_BENCH_RUN_CEIL_TOKENS (C, total tokens per
// run, 409600, split evenly over the streams). JOULEBENCH_BENCH_RUN_NICE
// (e.g. -10, with the privilege) runs both children at that priority, so
// that other work on a shared machine takes less of their CPUs.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/internal/ssebench"
)

// TestSSEBenchChild is the benchmark's child process (the stream server or
// the minimal client) when ssebench.ChildEnv is set; it does nothing
// otherwise.
func TestSSEBenchChild(t *testing.T) {
	spec := os.Getenv(ssebench.ChildEnv)
	if spec == "" {
		t.Skip("child process of BenchmarkRunPath only")
	}
	os.Exit(ssebench.RunChild(spec, os.Stdin, os.Stdout, os.Stderr))
}

type runPathConfig struct {
	name            string
	first, gap      time.Duration
	batch           int
	streams, tokens int
	minimal         bool
	sets            []string // more --set values for the run
}

func runPathConfigs(b *testing.B) []runPathConfig {
	streams := envInt(b, "JOULEBENCH_BENCH_RUN_STREAMS", 1000)
	tokens := envInt(b, "JOULEBENCH_BENCH_RUN_TOKENS", 256)
	ceilTokens := envInt(b, "JOULEBENCH_BENCH_RUN_CEIL_TOKENS", 409600)
	cs := []runPathConfig{
		{name: "A-first200ms", first: 200 * time.Millisecond, gap: 20 * time.Millisecond, batch: 1, streams: streams, tokens: tokens},
		{name: "B-burst", gap: 20 * time.Millisecond, batch: 1, streams: streams, tokens: tokens},
		{name: "D-concurrency", gap: 20 * time.Millisecond, batch: 1, streams: streams, tokens: tokens,
			sets: []string{"--set", "mode=concurrency", "--set", fmt.Sprintf("concurrency=%d", streams)}},
		{name: "E-gamma", gap: 20 * time.Millisecond, batch: 1, streams: streams, tokens: tokens,
			sets: []string{"--set", "mode=gamma", "--set", "rate=2000", "--set", "burstiness=0.1"}},
	}
	ceil := os.Getenv("JOULEBENCH_BENCH_RUN_CEIL_STREAMS")
	if ceil == "" {
		ceil = "100,1000"
	}
	for _, f := range strings.Split(ceil, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("JOULEBENCH_BENCH_RUN_CEIL_STREAMS=%q: want stream counts, comma-separated", ceil)
		}
		cs = append(cs, runPathConfig{name: fmt.Sprintf("C-ceiling-%d", n), batch: 64, streams: n, tokens: max(1, ceilTokens/n), minimal: true})
	}
	return cs
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// placement is where and at what priority a child runs.
type placement struct{ cpu, nice int }

func BenchmarkRunPath(b *testing.B) {
	nice := 0
	if s := os.Getenv("JOULEBENCH_BENCH_RUN_NICE"); s != "" {
		var err error
		if nice, err = strconv.Atoi(s); err != nil {
			b.Fatalf("JOULEBENCH_BENCH_RUN_NICE=%q: want a nice value (-20 to 19)", s)
		}
	}
	if _, err := ssebench.RaiseFileLimit(); err != nil {
		b.Logf("open-file limit: %v", err)
	}
	clientCPU, serverCPU := -1, -1
	if cpus := ssebench.CPUs(); len(cpus) >= 2 {
		clientCPU, serverCPU = cpus[0], cpus[1]
		b.Logf("client pinned to CPU %d, stream server to CPU %d", clientCPU, serverCPU)
	} else {
		b.Logf("CPUs %v: client and server not pinned apart", cpus)
	}
	for _, cfg := range runPathConfigs(b) {
		b.Run(cfg.name, func(b *testing.B) {
			srv := startSSEServer(b, cfg, placement{serverCPU, nice})
			client := placement{clientCPU, nice}
			var m runPathMetrics
			for b.Loop() {
				runOnce(b, cfg, srv, client, &m)
				if cfg.minimal {
					runMinimal(b, cfg, srv, client, &m)
				}
			}
			m.report(b, cfg)
			if la, err := os.ReadFile("/proc/loadavg"); err == nil {
				b.Logf("load average after %s: %s", cfg.name, bytes.TrimSpace(la))
			}
		})
	}
}

// sseServer is the stream server child.
type sseServer struct {
	url     string
	started time.Time // when its clock started, near enough
}

func startSSEServer(b *testing.B, cfg runPathConfig, at placement) *sseServer {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSSEBenchChild$")
	cmd.Env = append(os.Environ(), ssebench.ChildEnv+"="+ssebench.ServerSpec(cfg.first, cfg.gap, cfg.batch))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := ssebench.StartPinned(cmd, at.cpu, at.nice); err != nil {
		b.Fatal(err)
	}
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	started := time.Now()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b.Fatalf("stream server: %v", err)
	}
	b.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	return &sseServer{url: "http://" + strings.TrimSpace(addr), started: started}
}

func (s *sseServer) log(runID string) ([]ssebench.Entry, error) {
	resp, err := http.Get(s.url + "/ssebench/log?prefix=" + url.QueryEscape(runID+"-"))
	if err != nil {
		return nil, fmt.Errorf("stream server log: %w", err)
	}
	defer resp.Body.Close()
	var out []ssebench.Entry
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("stream server log: %w", err)
	}
	return out, nil
}

// runPathMetrics pools what the iterations measured.
type runPathMetrics struct {
	ttftAdded, tokenAdded, itlClient, itlServer []float64
	ttftPastEnd, serverWrite                    []float64
	lateFirst, lateTokens, requests, mismatched int
	tokens, cpuFormal, wallFormal               float64
	cpuWhole                                    float64
	minTokens, minCPU                           float64
	offsets                                     []float64
}

func (m *runPathMetrics) report(b *testing.B, cfg runPathConfig) {
	if len(m.ttftAdded) > 0 {
		b.ReportMetric(pct(m.ttftAdded, 50), "ttft_added_p50_ms")
		b.ReportMetric(pct(m.ttftAdded, 99), "ttft_added_p99_ms")
		b.ReportMetric(pct(m.tokenAdded, 99), "token_added_p99_ms")
		b.ReportMetric(pct(m.ttftPastEnd, 99), "ttft_past_write_end_p99_ms")
		b.ReportMetric(pct(m.serverWrite, 99), "server_write_p99_ms")
	}
	if cfg.gap > 0 && len(m.itlServer) > 0 {
		b.ReportMetric(float64(m.lateFirst)/float64(m.requests), "late_first_frac")
		b.ReportMetric(float64(m.lateTokens)/float64(len(m.tokenAdded)), "late_token_frac")
		b.ReportMetric(pct(m.itlClient, 50)/pct(m.itlServer, 50), "itl_p50_ratio")
		b.ReportMetric(pct(m.itlClient, 99)/pct(m.itlServer, 99), "itl_p99_ratio")
		b.ReportMetric(pct(m.itlServer, 99), "itl_server_p99_ms")
	}
	if m.mismatched > 0 {
		b.ReportMetric(float64(m.mismatched), "times_mismatched")
	}
	if m.cpuFormal > 0 {
		b.ReportMetric(m.tokens/m.cpuFormal, "tokens/cpu-s")
		b.ReportMetric(m.cpuFormal/m.wallFormal, "client_busy")
	}
	if m.cpuWhole > 0 {
		b.ReportMetric(m.tokens/m.cpuWhole, "tokens/cpu-s_whole")
	}
	if m.minCPU > 0 {
		b.ReportMetric(m.minTokens/m.minCPU, "minimal_tokens/cpu-s")
	}
	if len(m.offsets) > 0 {
		b.ReportMetric(slices.Max(m.offsets)*1e6, "clock_offset_abs_max_us")
	}
}

// cpuSample is the client's CPU time at a wall time.
type cpuSample struct{ t, cpu float64 }

// runOnce runs joulebench against the server once and adds what it
// measured to m.
func runOnce(b *testing.B, cfg runPathConfig, srv *sseServer, at placement, m *runPathMetrics) {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "run")
	replay, err := filepath.Abs(smallRun) // power samples to replay: there is no GPU
	if err != nil {
		b.Fatal(err)
	}
	args := []string{"run", "benchmark-1.0", "--engine-url", srv.url, "--telemetry", "replay", "--replay", replay, "--out", dir, "--no-progress",
		"--set", "baseline=1s", "--set", "sample_interval=250ms", "--set", "warmup_requests=1", "--set", "metrics_interval=60s",
		"--set", fmt.Sprintf("request_count=%d", cfg.streams), "--set", fmt.Sprintf("max_tokens=%d", cfg.tokens),
		"--set", "ignore_eos=true", "--set", "accept_unsteady=true"}
	args = append(args, cfg.sets...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "JOULEBENCH_TEST_AS_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	offset := ssebench.Offset(srv.started, time.Now())
	if err := ssebench.StartPinned(cmd, at.cpu, at.nice); err != nil {
		b.Fatal(err)
	}
	samples := sampleCPU(cmd.Process.Pid)
	err = cmd.Wait()
	cpuTrace := samples()
	if err != nil && cmd.ProcessState == nil {
		b.Fatal(err)
	}
	if code := cmd.ProcessState.ExitCode(); code != exitOK && code != exitChecks {
		b.Fatalf("joulebench run: exit %d\n%s", code, stderr.Bytes())
	}
	run, err := archive.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	entries, err := srv.log(run.Meta.RunID)
	if err != nil {
		b.Fatal(err)
	}
	byID, err := ssebench.ByRequest(entries, run.Meta.RunID)
	if err != nil {
		b.Fatal(err)
	}
	m.offsets = append(m.offsets, math.Abs(offset))
	formal, ok := run.Meta.StageByName("formal")
	if !ok {
		b.Fatalf("run %s has no formal stage", run.Meta.RunID)
	}
	n := 0
	for _, r := range run.Requests {
		if r.Phase != "formal" {
			continue
		}
		e, found := byID[r.ID]
		if !r.OK || !found || len(e.Writes) == 0 || r.OutputTokens != cfg.tokens {
			b.Fatalf("request %s: ok %v, %d tokens (want %d), in the server's log %v (%d writes): %s", r.ID, r.OK, r.OutputTokens, cfg.tokens, found, len(e.Writes), r.Error)
		}
		n++
		m.tokens += float64(r.OutputTokens)
		w0 := e.Writes[0] + offset
		added := r.FirstTokenAt - w0
		m.ttftAdded = append(m.ttftAdded, added*1e3)
		if len(e.WriteEnds) == len(e.Writes) {
			m.ttftPastEnd = append(m.ttftPastEnd, (r.FirstTokenAt-e.WriteEnds[0]-offset)*1e3)
			for j, t := range e.Writes {
				m.serverWrite = append(m.serverWrite, (e.WriteEnds[j]-t)*1e3)
			}
		}
		if cfg.gap > 0 && added >= cfg.gap.Seconds()/2 {
			m.lateFirst++
		}
		if len(r.TokenTimes) != len(e.Writes) {
			m.mismatched++
			continue
		}
		for j, t := range r.TokenTimes {
			late := t - e.Writes[j] - offset
			m.tokenAdded = append(m.tokenAdded, late*1e3)
			if cfg.gap > 0 && late >= cfg.gap.Seconds()/2 {
				m.lateTokens++
			}
			if j > 0 && cfg.gap > 0 {
				m.itlClient = append(m.itlClient, (t-r.TokenTimes[j-1])*1e3)
				m.itlServer = append(m.itlServer, (e.Writes[j]-e.Writes[j-1])*1e3)
			}
		}
	}
	if n != cfg.streams {
		b.Fatalf("run %s: %d formal requests, want %d", run.Meta.RunID, n, cfg.streams)
	}
	m.requests += n
	if c0, ok0 := cpuAt(cpuTrace, formal.Start); ok0 {
		if c1, ok1 := cpuAt(cpuTrace, formal.End); ok1 {
			m.cpuFormal += c1 - c0
			m.wallFormal += formal.End - formal.Start
		}
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.cpuWhole += ssebench.RusageSeconds(ru)
	}
}

// sampleCPU samples process pid's CPU time every 10 ms until the returned
// function is called, which returns the samples.
func sampleCPU(pid int) func() []cpuSample {
	stop := make(chan struct{})
	var out []cpuSample
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if c, err := ssebench.ProcCPU(pid); err == nil {
				out = append(out, cpuSample{t: float64(time.Now().UnixNano()) / 1e9, cpu: c})
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	return func() []cpuSample { close(stop); wg.Wait(); return out }
}

// cpuAt interpolates the CPU time at wall time t between the samples
// around it; false when t is outside them.
func cpuAt(s []cpuSample, t float64) (float64, bool) {
	i, found := slices.BinarySearchFunc(s, t, func(x cpuSample, t float64) int {
		switch {
		case x.t < t:
			return -1
		case x.t > t:
			return 1
		}
		return 0
	})
	if found {
		return s[i].cpu, true
	}
	if i == 0 || i == len(s) {
		return 0, false
	}
	a, z := s[i-1], s[i]
	return a.cpu + (z.cpu-a.cpu)*(t-a.t)/(z.t-a.t), true
}

// runMinimal runs the minimal client on the same streams once.
func runMinimal(b *testing.B, cfg runPathConfig, srv *sseServer, at placement, m *runPathMetrics) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSSEBenchChild$")
	cmd.Env = append(os.Environ(), ssebench.ChildEnv+"="+ssebench.MinimalSpec(srv.url, cfg.streams, cfg.tokens))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := ssebench.StartPinned(cmd, at.cpu, at.nice); err != nil {
		b.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("minimal client: %v\n%s", err, stderr.Bytes())
	}
	var res ssebench.MinimalResult
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); err != nil {
		b.Fatalf("minimal client: %v: %s", err, stdout.Bytes())
	}
	if res.Tokens != cfg.streams*cfg.tokens {
		b.Fatalf("minimal client: %d tokens, want %d", res.Tokens, cfg.streams*cfg.tokens)
	}
	m.minTokens += float64(res.Tokens)
	m.minCPU += res.CPUS
}

// pct is the nearest-rank percentile p of v (0 for none).
func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[int(p/100*float64(len(s)-1)+0.5)]
}

// cpuAt interpolates between the samples around t and refuses times
// outside them.
func TestCPUAt(t *testing.T) {
	s := []cpuSample{{10, 1}, {10.5, 1.2}, {11, 2}}
	for _, tc := range []struct {
		t, want float64
		ok      bool
	}{
		{10.25, 1.1, true}, // halfway 1 → 1.2
		{10.75, 1.6, true}, // halfway 1.2 → 2
		{10, 1, true},
		{11, 2, true},
		{9.99, 0, false},
		{11.01, 0, false},
	} {
		got, ok := cpuAt(s, tc.t)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("cpuAt(%v) = %v, %v; want %v, %v", tc.t, got, ok, tc.want, tc.ok)
		}
	}
}
