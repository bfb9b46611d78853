package observe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/sim"
	"github.com/joulebench/joulebench/engines/sim/simtest"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/internal/redact"
	"github.com/joulebench/joulebench/runner"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/workflow"
)

// The measured command of these tests is this test binary itself, run
// with JOULEBENCH_MEASURE_HELPER_URL set: it sends requests to the
// server, as a load generator joulebench did not write would.
func TestMain(m *testing.M) {
	if u := os.Getenv("JOULEBENCH_MEASURE_HELPER_URL"); u != "" {
		os.Exit(helperLoad(u, os.Getenv("JOULEBENCH_MEASURE_HELPER_EXIT"), os.Getenv("JOULEBENCH_MEASURE_HELPER_RESULTS")))
	}
	os.Exit(m.Run())
}

// readStream reads a streamed chat completion (server-sent events): how
// long after start its first content chunk came, and the usage's tokens.
func readStream(body io.Reader, start time.Time) (first time.Duration, prompt, completion int, err error) {
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return 0, 0, 0, err
		}
		if first == 0 && len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			first = time.Since(start)
		}
		if chunk.Usage != nil {
			prompt, completion = chunk.Usage.Prompt, chunk.Usage.Completion
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, 0, err
	}
	if first == 0 || completion == 0 {
		return 0, 0, 0, fmt.Errorf("stream without content or usage")
	}
	return first, prompt, completion, nil
}

// helperLoad sends 4 streamed chat completions to base, writes an AIPerf
// profile_export.jsonl of them to results when set (each request's
// Unix start and end, its first content chunk's time, the usage's
// tokens), then exits with status exit (default 0).
func helperLoad(base, exit, results string) int {
	fmt.Println("load generator", strings.Join(os.Args[1:], " "))
	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if err != nil || len(models.Data) == 0 {
		fmt.Fprintln(os.Stderr, "no model:", err)
		return 1
	}
	var lines bytes.Buffer
	for i := 0; i < 4; i++ {
		start := time.Now()
		body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"count to %d"}],"max_tokens":24,"stream":true,"stream_options":{"include_usage":true}}`, models.Data[0].ID, i+5)
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		first, prompt, completion, err := readStream(resp.Body, start)
		resp.Body.Close()
		end := time.Now()
		fmt.Printf("request %d: %s\n", i, resp.Status)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		fmt.Fprintf(&lines, `{"metadata": {"request_start_ns": %d, "request_end_ns": %d, "benchmark_phase": "profiling", "was_cancelled": false}, "metrics": {"input_sequence_length": {"value": %d, "unit": "tokens"}, "time_to_first_token": {"value": %g, "unit": "ms"}, "request_latency": {"value": %g, "unit": "ms"}, "output_token_count": {"value": %d, "unit": "tokens"}, "output_sequence_length": {"value": %d, "unit": "tokens"}}, "error": null}`+"\n",
			start.UnixNano(), end.UnixNano(), prompt, ms(first), ms(end.Sub(start)), completion, completion)
	}
	if results != "" {
		if err := os.WriteFile(results, lines.Bytes(), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if exit != "" {
		var st int
		fmt.Sscan(exit, &st)
		return st
	}
	return 0
}

// constSource is a power source of one GPU at a constant power: the
// energy of any window is known by hand.
type constSource struct {
	w     float64
	clock telemetry.Clock
}

func (constSource) Name() string { return "const" }
func (constSource) Devices(context.Context) ([]record.Device, error) {
	return []record.Device{{ID: "gpu0", Name: "test GPU", Method: "power", Domain: record.DomainGPU}}, nil
}
func (s constSource) Read(context.Context) ([]telemetry.Reading, error) {
	return []telemetry.Reading{{Device: "gpu0", PowerW: s.w, MemUsedBytes: -1, T: s.clock()}}, nil
}
func (constSource) Close() error { return nil }

// testSpec is a run spec against the server at url with the constant
// power source, short stages and the run directory out.
func testSpec(url, out string, msgs *syncBuf) runner.Spec {
	return runner.Spec{
		Engine: runner.EngineOptions{URL: url},
		Sets:   []string{"baseline=1s", "sample_interval=100ms", "release_hold=1s", "release_max_wait=10s"},
		Out:    out,
		FindProfile: func(ref, from string) ([]byte, string, error) {
			return workflow.DefaultLookup(ref, from)
		},
		OpenTelemetry: func(_ context.Context, env runner.TelemetryEnv) (telemetry.Source, record.TelemetryInfo, error) {
			return constSource{w: 100, clock: env.Clock.Now}, record.TelemetryInfo{Source: "const", Note: "test: 100 W"}, nil
		},
		Messages: msgs,
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMeasureCommand runs measure around a command against the
// simulated engine's server (its /metrics has sim:generation_tokens_total)
// with a power source of 100 W: the output tokens are the counter's
// difference read by the test around the run, and formal_j_per_token is
// 100 W × the formal stage's duration / those tokens.
func TestMeasureCommand(t *testing.T) {
	e := simtest.Serve(t, sim.Quick(sim.DefaultConfig()))
	url := e.BaseURL()
	c := Counter{Family: "sim:generation_tokens_total"}
	before, err := ReadTokens(context.Background(), MetricsURL(url), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("JOULEBENCH_MEASURE_HELPER_URL", url)
	out := filepath.Join(t.TempDir(), "run")
	msgs := &syncBuf{}
	spec := testSpec(url, out, msgs)
	spec.Redact = redact.New().With("s3cret")
	res, err := Run(context.Background(), spec, Options{Argv: []string{os.Args[0], "-test.run=^$", "--api-key=s3cret"}})
	if err != nil {
		t.Fatalf("measure: %v\n%s", err, msgs)
	}
	after, err := ReadTokens(context.Background(), MetricsURL(url), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Dirs) != 1 || res.Dirs[0] != out {
		t.Fatalf("dirs %v", res.Dirs)
	}
	run, err := archive.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	m := run.Meta
	if m.Measure == nil {
		t.Fatal("run.json has no measure object")
	}
	want := int(after - before)
	if want <= 0 || m.Measure.OutputTokens != want {
		log, _ := os.ReadFile(filepath.Join(out, "command.log"))
		t.Fatalf("measure.output_tokens %d, the counter moved by %d (%v → %v); command.log:\n%s", m.Measure.OutputTokens, want, before, after, log)
	}
	if m.Measure.Load != "command" || m.Measure.ExitStatus == nil || *m.Measure.ExitStatus != 0 || m.Measure.TokenMetric != "sim:generation_tokens_total" {
		t.Errorf("measure %+v", *m.Measure)
	}
	if got := strings.Join(m.Measure.Command, " "); strings.Contains(got, "s3cret") {
		t.Errorf("the command's secret reached run.json: %s", got)
	}
	for _, st := range []string{"baseline", "formal", "release"} {
		if _, ok := m.StageByName(st); !ok {
			t.Errorf("no %s stage: %+v", st, m.Stages)
		}
	}
	formal, _ := m.StageByName("formal")
	// Hand value: 100 W constant, so the formal stage's energy is 100 W ×
	// its duration, over the counter's tokens.
	hand := 100 * (formal.End - formal.Start) / float64(want)
	got := resultValue(t, out, "formal_j_per_token")
	if math.Abs(got-hand)/hand > 0.02 {
		t.Errorf("formal_j_per_token %v, hand value %v (100 W × %.3f s / %d tokens)", got, hand, formal.End-formal.Start, want)
	}
	t.Logf("formal stage %.3f s, %d tokens (counter %v → %v), formal_j_per_token %.5f, hand %.5f", formal.End-formal.Start, want, before, after, got, hand)
	if os.Getenv("JOULEBENCH_MEASURE_KEEP") != "" {
		_ = os.CopyFS(os.Getenv("JOULEBENCH_MEASURE_KEEP"), os.DirFS(out))
	}
	// The server keeps running: the release closes on power and memory
	// back at baseline, without an engine exit.
	if rel := resultValue(t, out, "release_complete_at"); rel < formal.End {
		t.Errorf("release_complete_at %v before the formal stage's end %v", rel, formal.End)
	}
	for _, name := range []string{"ttft_p50_ms", "tpot_ms", "itl_p50_ms", "e2e_latency_p99_ms"} {
		if r := resultNA(t, out, name); !strings.Contains(r, "server's counter") {
			t.Errorf("%s not applicable with reason %q", name, r)
		}
	}
	// The load's request count is not joulebench's to know: no warning
	// that it sends too few for steady state.
	if strings.Contains(msgs.String(), "can never be reached") {
		t.Errorf("messages warn about a request count measure does not set:\n%s", msgs)
	}
	log, _ := os.ReadFile(filepath.Join(out, "command.log"))
	if !strings.Contains(string(log), "request 3: 200") || strings.Contains(string(log), "s3cret") {
		t.Errorf("command.log: %s", log)
	}
	if !strings.Contains(msgs.String(), "exited with status 0") {
		t.Errorf("messages: %s", msgs)
	}
	t.Run("archive held to the counter", func(t *testing.T) { heldToCounter(t, out, want) })
}

// heldToCounter: the reader holds a measured run's synthetic requests to
// run.json's measure.output_tokens (docs/archive-v1.md): a request whose
// tokens were raised, or a measure object whose count was, is refused.
func heldToCounter(t *testing.T, src string, tokens int) {
	for _, tc := range []struct{ file, old, new string }{
		{archive.RequestsFile, fmt.Sprintf(`"output_tokens":%d`, tokens), fmt.Sprintf(`"output_tokens":%d`, tokens+1000)},
		{archive.RunFile, fmt.Sprintf(`"output_tokens": %d`, tokens), fmt.Sprintf(`"output_tokens": %d`, tokens+1000)},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, tc.file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(tc.old)) {
			t.Fatalf("%s has no %s", tc.file, tc.old)
		}
		if err := os.WriteFile(p, bytes.Replace(b, []byte(tc.old), []byte(tc.new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = archive.Load(dir)
		if err == nil || !strings.Contains(err.Error(), "measure.output_tokens") {
			t.Errorf("%s with %s: %v, want a refusal naming measure.output_tokens", tc.file, tc.new, err)
		}
	}
}

// TestMeasureWithResults: the command's result file (AIPerf's
// profile_export.jsonl, with Unix times) gives the formal requests their
// own times and tokens, so latency is measured; the file's tokens are set
// beside the server counter's.
func TestMeasureWithResults(t *testing.T) {
	e := simtest.Serve(t, sim.Quick(sim.DefaultConfig()))
	url := e.BaseURL()
	c := Counter{Family: "sim:generation_tokens_total"}
	before, err := ReadTokens(context.Background(), MetricsURL(url), c)
	if err != nil {
		t.Fatal(err)
	}
	resFile := filepath.Join(t.TempDir(), "profile_export.jsonl")
	t.Setenv("JOULEBENCH_MEASURE_HELPER_URL", url)
	t.Setenv("JOULEBENCH_MEASURE_HELPER_RESULTS", resFile)
	out := filepath.Join(t.TempDir(), "run")
	msgs := &syncBuf{}
	if _, err := Run(context.Background(), testSpec(url, out, msgs), Options{Argv: []string{os.Args[0], "-test.run=^$"}, Results: resFile}); err != nil {
		t.Fatalf("measure: %v\n%s", err, msgs)
	}
	after, err := ReadTokens(context.Background(), MetricsURL(url), c)
	if err != nil {
		t.Fatal(err)
	}
	run, err := archive.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	ms := run.Meta.Measure
	if ms == nil || ms.Results == nil || ms.Results.Format != "aiperf" || ms.Results.Requests != 4 {
		t.Fatalf("measure %+v", ms)
	}
	fileTokens := 0
	for _, q := range run.Requests {
		if q.Synthetic || q.Phase != "formal" || !q.OK || q.FirstTokenAt <= q.SentAt {
			t.Errorf("request %+v", q)
		}
		fileTokens += q.OutputTokens
	}
	if len(run.Requests) != 4 || int64(fileTokens) != ms.Results.OutputTokens {
		t.Fatalf("%d requests, %d tokens; measure.results %+v", len(run.Requests), fileTokens, *ms.Results)
	}
	// The simulator's usage counts what its counter counts: the two agree.
	if counted := int(after - before); ms.OutputTokens != counted || fileTokens != counted {
		t.Errorf("file %d tokens, measure.output_tokens %d, the counter moved by %d", fileTokens, ms.OutputTokens, counted)
	}
	if !strings.Contains(strings.Join(ms.Notes, "\n"), "(0.0 % apart)") {
		t.Errorf("notes %q lack the cross-check", ms.Notes)
	}
	if v := resultValue(t, out, "ttft_p50_ms"); v <= 0 {
		t.Errorf("ttft_p50_ms %v", v)
	}
	// Streamed, each request's tokens came after its first: TPOT is not
	// 0 (it read 0.00 ms when the load stated the latency as the TTFT).
	if v := resultValue(t, out, "tpot_ms"); v <= 0 {
		t.Errorf("tpot_ms %v", v)
	}
	formal, _ := run.Meta.StageByName("formal")
	hand := 100 * (formal.End - formal.Start) / float64(fileTokens)
	if got := resultValue(t, out, "formal_j_per_token"); math.Abs(got-hand)/hand > 0.02 {
		t.Errorf("formal_j_per_token %v, hand %v", got, hand)
	}
	if os.Getenv("JOULEBENCH_MEASURE_KEEP_RESULTS") != "" {
		_ = os.CopyFS(os.Getenv("JOULEBENCH_MEASURE_KEEP_RESULTS"), os.DirFS(out))
	}
}

// TestMeasureDuration: --duration measures whatever traffic the server
// gets over the window (here sent by the test): run.json says so, and
// the tokens are the counter's over the window.
func TestMeasureDuration(t *testing.T) {
	e := simtest.Serve(t, sim.Quick(sim.DefaultConfig()))
	url := e.BaseURL()
	out := filepath.Join(t.TempDir(), "run")
	msgs := &syncBuf{}
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		// Traffic from elsewhere, all along the run.
		st := 0
		for st == 0 {
			select {
			case <-stop:
				done <- st
				return
			default:
				st = helperLoad(url, "", "")
			}
		}
		done <- st
	}()
	_, err := Run(context.Background(), testSpec(url, out, msgs), Options{Duration: 3 * time.Second})
	close(stop)
	if err != nil {
		t.Fatalf("measure: %v\n%s", err, msgs)
	}
	if st := <-done; st != 0 {
		t.Fatalf("the traffic failed: %d", st)
	}
	m, err := archive.ReadMeta(filepath.Join(out, archive.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if m.Measure == nil || m.Measure.Load != "live traffic over 3s" || m.Measure.DurationS != 3 || m.Measure.OutputTokens <= 0 || m.Measure.ExitStatus != nil {
		t.Fatalf("measure %+v", m.Measure)
	}
	formal, _ := m.StageByName("formal")
	if d := formal.End - formal.Start; d < 3 || d > 4 {
		t.Errorf("formal stage %.3f s, want the 3 s window", d)
	}
}

// TestMeasureInterrupted: Ctrl-C during the command stops its process
// group and ends the run as interrupted, the archive kept and saying why.
func TestMeasureInterrupted(t *testing.T) {
	e := simtest.Serve(t, sim.Quick(sim.DefaultConfig()))
	url := e.BaseURL()
	out := filepath.Join(t.TempDir(), "run")
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancel once the command runs (it writes its child's pid).
		for ctx.Err() == nil {
			if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
				cancel()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	_, err := Run(ctx, testSpec(url, out, &syncBuf{}), Options{Argv: []string{"sh", "-c", "sleep 60 & echo $! > " + pidFile + "; wait"}, Grace: time.Second})
	if err == nil || exitcode.Of(err) != int(exitcode.Interrupted) {
		t.Fatalf("measure interrupted: %v (code %d)", err, exitcode.Of(err))
	}
	m, rerr := archive.ReadMeta(filepath.Join(out, archive.RunFile))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if m.Status != record.StatusInterrupted || m.Measure == nil || !strings.Contains(m.Measure.ExitReason, "interrupted") {
		t.Errorf("status %q, measure %+v", m.Status, m.Measure)
	}
	b, _ := os.ReadFile(pidFile)
	var pid int
	fmt.Sscan(string(b), &pid)
	// The command's child (sleep, in its process group) is gone too.
	deadline := time.Now().Add(5 * time.Second)
	for pid > 0 && syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the command's child %d outlived the interrupt", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMeasureFailedCommand: a command that exits non-zero fails the run
// with its status; the archive keeps the raw data and says why.
func TestMeasureFailedCommand(t *testing.T) {
	e := simtest.Serve(t, sim.Quick(sim.DefaultConfig()))
	url := e.BaseURL()
	t.Setenv("JOULEBENCH_MEASURE_HELPER_URL", url)
	t.Setenv("JOULEBENCH_MEASURE_HELPER_EXIT", "3")
	out := filepath.Join(t.TempDir(), "run")
	msgs := &syncBuf{}
	_, err := Run(context.Background(), testSpec(url, out, msgs), Options{Argv: []string{os.Args[0], "-test.run=^$"}})
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("measure around a command that exits 3: %v", err)
	}
	m, rerr := archive.ReadMeta(filepath.Join(out, archive.RunFile))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if m.Status != record.StatusFailed || !strings.Contains(m.Reason, "exit status 3") {
		t.Errorf("status %q reason %q", m.Status, m.Reason)
	}
	if m.Measure == nil || m.Measure.ExitStatus == nil || *m.Measure.ExitStatus != 3 || m.Measure.OutputTokens <= 0 {
		t.Errorf("measure %+v", m.Measure)
	}
	if st, err := os.Stat(filepath.Join(out, archive.PowerFile)); err != nil || st.Size() == 0 {
		t.Errorf("power.csv not kept: %v", err)
	}
}

// TestMeasureRefusesWithoutCounter: a server whose /metrics has no token
// counter measure knows (or that has none) is refused before anything is
// created.
func TestMeasureRefusesWithoutCounter(t *testing.T) {
	srv := newMetricsServer(t, "# TYPE other_total counter\nother_total 3\n")
	out := filepath.Join(t.TempDir(), "run")
	for _, tc := range []struct {
		kind, want string
	}{
		{"", "expose no count of generated tokens"},
		{"vllm", "no vllm:generation_tokens_total"},
		{"ollama", "Ollama serves no Prometheus"},
	} {
		spec := testSpec(srv, out, &syncBuf{})
		if tc.kind != "" {
			spec.Engines, spec.EngineGiven = []string{tc.kind}, true
		}
		_, err := Run(context.Background(), spec, Options{Duration: time.Second})
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitcode.Of(err) != int(exitcode.Invalid) {
			t.Errorf("--engine %q: %v (code %v), want %q", tc.kind, err, exitcode.Of(err), tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("--engine %q: %s was created", tc.kind, out)
		}
	}
}

func newMetricsServer(t *testing.T, body string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, body) })
	srv := &http.Server{Handler: mux}
	ln := listen(t)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func resultValue(t *testing.T, dir, name string) float64 {
	t.Helper()
	v := result(t, dir, name)
	f, ok := v["value"].(float64)
	if !ok {
		t.Fatalf("results.json %s: %v", name, v)
	}
	return f
}

func resultNA(t *testing.T, dir, name string) string {
	t.Helper()
	v := result(t, dir, name)
	s, _ := v["note"].(string)
	return s
}

func result(t *testing.T, dir, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, archive.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Values map[string]map[string]any `json:"values"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	v, ok := res.Values[name]
	if !ok {
		t.Fatalf("results.json has no %s", name)
	}
	return v
}
