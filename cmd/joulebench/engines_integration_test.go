package main

// Integration tests against real engines: llama.cpp's llama-server and
// Ollama, loading the tiny random-weight GGUF model that internal/gguf
// writes into the test's temporary directory (no download).
//
// The engines are found through JOULEBENCH_LLAMA_SERVER and
// JOULEBENCH_OLLAMA_BIN (what .ci/install-engines.sh writes to its
// engines.env), else as llama-server and ollama in PATH. A test whose
// engine is absent skips, unless JOULEBENCH_REQUIRE_ENGINES=1 (CI), which
// turns the skip into a failure. JOULEBENCH_FIDELITY_REPORT, when set,
// names a file the fidelity figures are appended to (they are also
// logged, visible with -v).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/llamacpp"
	"github.com/joulebench/joulebench/internal/gguf"
)

const enginesProfile = "testdata/engines-small.yaml"

// engineBin finds an engine binary or skips (fails under
// JOULEBENCH_REQUIRE_ENGINES=1).
func engineBin(t *testing.T, envVar, name string) string {
	t.Helper()
	require := os.Getenv("JOULEBENCH_REQUIRE_ENGINES") == "1"
	if testing.Short() && !require {
		t.Skip("real engine test: skipped in -short mode")
	}
	if p := os.Getenv(envVar); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		if require {
			t.Fatalf("%s=%s: not found", envVar, p)
		}
		t.Skipf("%s=%s: not found", envVar, p)
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	msg := fmt.Sprintf("%s not installed (set %s or put %s in PATH; .ci/install-engines.sh installs it)", name, envVar, name)
	if require {
		t.Fatal(msg + "; JOULEBENCH_REQUIRE_ENGINES=1 makes this a failure")
	}
	t.Skip(msg)
	return ""
}

func llamaServer(t *testing.T) string { return engineBin(t, "JOULEBENCH_LLAMA_SERVER", "llama-server") }
func ollamaBin(t *testing.T) string   { return engineBin(t, "JOULEBENCH_OLLAMA_BIN", "ollama") }

// tinyModel writes the tiny GGUF model into dir.
func tinyModel(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "tiny.gguf")
	if err := gguf.WriteTinyFile(path, gguf.DefaultTiny()); err != nil {
		t.Fatal(err)
	}
	return path
}

// llamaArgs are the flags of a run against a managed llama-server.
func llamaArgs(t *testing.T, out, bin, model string, extra ...string) []string {
	return append([]string{"run", enginesProfile, "--out", out, "--no-progress", "--telemetry", "none",
		"--engine", "llamacpp", "--engine-bin", bin, "--model-file", model, "--max-model-len", "1024", "--slots", "2",
		"--scrape-interval", "200ms"}, extra...)
}

// ollamaArgs are the flags of a run against a managed `ollama serve` with
// its models and keys in a temporary directory.
func ollamaArgs(t *testing.T, out, bin, model string, extra ...string) []string {
	home := t.TempDir()
	return append([]string{"run", enginesProfile, "--out", out, "--no-progress", "--telemetry", "none",
		"--engine", "ollama", "--engine-bin", bin, "--model", "tiny", "--model-file", model,
		"--engine-env", "OLLAMA_MODELS=" + filepath.Join(home, "models"), "--engine-env", "HOME=" + home}, extra...)
}

func loadRun(t *testing.T, dir string) *record.Run {
	t.Helper()
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func engineLog(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, archive.EngineLogFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkCompleteRun checks what every successful real-engine run archives.
func checkCompleteRun(t *testing.T, run *record.Run, kind string, external bool) {
	t.Helper()
	m := run.Meta
	if m.Status != record.StatusComplete || m.Simulated || m.Engine.Kind != kind || m.Engine.Version == "" || m.Engine.ServedModel == "" {
		t.Errorf("run.json: status %q simulated %v engine %+v", m.Status, m.Simulated, m.Engine)
	}
	if !external && (!m.Engine.Managed || len(m.Engine.Command) == 0 || m.Engine.Extra["pid"] == nil) {
		t.Errorf("managed engine info %+v", m.Engine)
	}
	if st, _ := m.Engine.Extra["exit_status"].(string); !external && st == "" {
		t.Errorf("run.json has no exit status of the engine: %+v", m.Engine.Extra)
	}
	var formal int
	for _, r := range run.Requests {
		if r.Phase != "formal" {
			continue
		}
		formal++
		if !r.OK || r.OutputTokens <= 0 || r.PromptTokens <= 0 || !(r.SentAt < r.FirstTokenAt && r.FirstTokenAt <= r.DoneAt) || len(r.TokenTimes) == 0 {
			t.Errorf("request %s: %+v", r.ID, r)
		}
	}
	if formal != 4 {
		t.Errorf("%d formal requests, want 4", formal)
	}
	if run.Results == nil {
		t.Fatal("no results.json")
	}
	for _, name := range []string{"formal_energy_j", "j_per_token"} {
		if r := run.Results.Values[name]; r.Value != nil || !strings.Contains(r.Note, "no power source") {
			t.Errorf("%s = %+v, want not applicable: no power source", name, r)
		}
	}
	for _, name := range []string{"startup_s", "release_s"} {
		r := run.Results.Values[name]
		if external && (r.Value != nil || !strings.Contains(r.Note, "external engine")) {
			t.Errorf("%s = %+v, want not applicable: external engine", name, r)
		}
		if !external && r.Value == nil {
			t.Errorf("%s = %+v, want a number", name, r)
		}
	}
	if tp := run.Results.Values["output_throughput_tok_s"]; tp.Value == nil {
		t.Errorf("throughput %+v", tp)
	}
}

// A profile run against llama-server completes and archives per-request
// timings, usage tokens, llama.cpp's timings, engine.log and the
// /metrics side path.
func TestEnginesLlamaCppRun(t *testing.T) {
	bin := llamaServer(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	stdout, stderr, code := runCLI(t, llamaArgs(t, out, bin, tinyModel(t, dir))...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run := loadRun(t, out)
	checkCompleteRun(t, run, "llamacpp", false)
	for _, r := range run.Requests {
		if r.Phase == "formal" && (r.TokensSource != "usage" || r.EngineTimings["predicted_per_second"] <= 0 || r.EngineTimings["predicted_n"] != float64(r.OutputTokens)) {
			t.Errorf("request %s: source %s timings %v", r.ID, r.TokensSource, r.EngineTimings)
		}
	}
	if m := run.Meta.Engine; m.ContextLength != 1024 || m.ModelFormat != "gguf" || !slices.Contains(m.Command, "--metrics") {
		t.Errorf("engine %+v", m)
	}
	log := engineLog(t, out)
	for _, want := range []string{"joulebench: ", "SIGTERM", "llama"} {
		if !strings.Contains(log, want) {
			t.Errorf("engine.log lacks %q", want)
		}
	}
	names := map[string]int{}
	for _, m := range run.EngineMetrics {
		names[m.Name]++
	}
	if names["llamacpp:requests_processing"] == 0 || names["llamacpp:requests_deferred"] == 0 {
		t.Errorf("engine_metrics.jsonl: %v", names)
	}
	if _, err := os.Stat(filepath.Join(out, "engine")); err != nil {
		t.Errorf("engine run directory: %v", err)
	}
}

// A profile run against Ollama (native API) completes and archives its
// eval_* counts and durations per request.
func TestEnginesOllamaRun(t *testing.T) {
	bin := ollamaBin(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	stdout, stderr, code := runCLI(t, ollamaArgs(t, out, bin, tinyModel(t, dir))...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run := loadRun(t, out)
	checkCompleteRun(t, run, "ollama", false)
	for _, r := range run.Requests {
		if r.Phase != "formal" {
			continue
		}
		for _, k := range []string{"eval_count", "eval_duration", "prompt_eval_count", "prompt_eval_duration", "load_duration", "total_duration"} {
			if _, ok := r.EngineTimings[k]; !ok {
				t.Errorf("request %s lacks %s: %v", r.ID, k, r.EngineTimings)
			}
		}
		if r.TokensSource != "engine" || float64(r.OutputTokens) != r.EngineTimings["eval_count"] {
			t.Errorf("request %s: %d tokens from %s", r.ID, r.OutputTokens, r.TokensSource)
		}
	}
	if m := run.Meta.Engine; m.Version == "" || m.Version == "0.0.0" || m.ServedModel != "tiny:latest" || m.API != "ollama" || m.Env["OLLAMA_HOST"] == "" {
		t.Errorf("engine %+v", m)
	}
	if !strings.Contains(engineLog(t, out), "created") {
		t.Error("engine.log does not record the model creation")
	}
}

// fidelity runs 256-token generations and compares the client's tok/s
// excluding TTFT (output tokens / (done - first token), as asiai M1) with
// the server's own figure.
func fidelity(t *testing.T, name string, args []string, server func(record.Request) float64) {
	t.Helper()
	stdout, stderr, code := runCLI(t, append(args, "--set", "max_tokens=256", "--set", "request_count=3", "--set", "concurrency=1")...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run := loadRun(t, args[slices.Index(args, "--out")+1])
	var diffs []float64
	var lines []string
	for _, r := range run.Requests {
		if r.Phase != "formal" {
			continue
		}
		if !r.OK || r.OutputTokens != 256 {
			t.Errorf("request %s: ok %v, %d tokens (want 256: the tiny model never stops early)", r.ID, r.OK, r.OutputTokens)
			continue
		}
		client := float64(r.OutputTokens) / (r.DoneAt - r.FirstTokenAt)
		srv := server(r)
		d := (client - srv) / srv
		diffs = append(diffs, math.Abs(d))
		lines = append(lines, fmt.Sprintf("fidelity %s %s: 256 tokens, client %.1f tok/s excluding TTFT, server %.1f tok/s, difference %+.2f %%",
			name, r.ID, client, srv, 100*d))
	}
	if len(diffs) != 3 {
		t.Fatalf("%d measured generations, want 3", len(diffs))
	}
	slices.Sort(diffs)
	lines = append(lines, fmt.Sprintf("fidelity %s: median difference %.2f %% (limit 5 %%)", name, 100*diffs[1]))
	for _, l := range lines {
		t.Log(l)
	}
	if p := os.Getenv("JOULEBENCH_FIDELITY_REPORT"); p != "" {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			_, _ = io.WriteString(f, strings.Join(lines, "\n")+"\n")
			_ = f.Close()
		}
	}
	if diffs[1] > 0.05 {
		t.Errorf("client and server tok/s differ by %.2f %% (median), more than 5 %%", 100*diffs[1])
	}
}

// Client tok/s excluding TTFT agrees with llama.cpp's
// timings.predicted_per_second within 5 %.
func TestEnginesLlamaCppFidelity(t *testing.T) {
	bin := llamaServer(t)
	dir := t.TempDir()
	fidelity(t, "llama.cpp", llamaArgs(t, filepath.Join(dir, "run"), bin, tinyModel(t, dir)), func(r record.Request) float64 {
		return r.EngineTimings["predicted_per_second"]
	})
}

// Client tok/s excluding TTFT agrees with Ollama's
// eval_count / eval_duration within 5 %.
func TestEnginesOllamaFidelity(t *testing.T) {
	bin := ollamaBin(t)
	dir := t.TempDir()
	fidelity(t, "ollama", ollamaArgs(t, filepath.Join(dir, "run"), bin, tinyModel(t, dir)), func(r record.Request) float64 {
		return r.EngineTimings["eval_count"] / (r.EngineTimings["eval_duration"] / 1e9)
	})
}

// A server that serves another model than the one requested fails the
// identity check before any formal request, with both names in the error.
func TestEnginesWrongModelFailsIdentity(t *testing.T) {
	bin := llamaServer(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	_, stderr, code := runCLI(t, llamaArgs(t, out, bin, tinyModel(t, dir), "--engine-arg", "--alias", "--engine-arg", "some-other-model")...)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d\n%s", code, exitFailure, stderr)
	}
	run := loadRun(t, out)
	want := `model: requested "tiny", served "some-other-model"`
	if run.Meta.Status != record.StatusFailed || !strings.Contains(run.Meta.Reason, want) || !strings.Contains(run.Meta.Reason, "before any formal request") {
		t.Errorf("status %q reason %q", run.Meta.Status, run.Meta.Reason)
	}
	if len(run.Requests) != 0 {
		t.Errorf("%d requests sent after a failed identity check", len(run.Requests))
	}
}

// An engine killed during the formal stage ends the run as failed, with
// the reason and the tail of engine.log, and keeps the raw data.
func TestEnginesKilledMidRun(t *testing.T) {
	bin := llamaServer(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	args := llamaArgs(t, out, bin, tinyModel(t, dir), "--max-model-len", "4096",
		"--set", "max_tokens=3500", "--set", "request_count=4", "--set", "concurrency=2")
	var killed sync.WaitGroup
	killed.Add(1)
	var killErr error
	stop := make(chan struct{})
	go func() {
		defer killed.Done()
		killErr = killWhenBusy(out, 2, stop)
	}()
	_, stderr, code := runCLI(t, args...)
	close(stop)
	killed.Wait()
	if killErr != nil {
		t.Fatal(killErr)
	}
	if code != exitFailure {
		t.Fatalf("exit %d, want %d\n%s\nengine.log:\n%s", code, exitFailure, stderr, engineLog(t, out))
	}
	run := loadRun(t, out)
	if run.Meta.Status != record.StatusFailed || !strings.Contains(run.Meta.Reason, "exited on its own") || !strings.Contains(run.Meta.Reason, "engine.log") {
		t.Errorf("status %q reason %q", run.Meta.Status, run.Meta.Reason)
	}
	var warm, formal int
	for _, r := range run.Requests {
		switch r.Phase {
		case "warmup":
			warm++
		case "formal":
			formal++
			if r.OK {
				t.Errorf("request %s completed although the engine was killed", r.ID)
			}
		}
	}
	if warm != 1 || formal == 0 {
		t.Errorf("kept %d warm-up and %d formal requests", warm, formal)
	}
	if log := engineLog(t, out); !strings.Contains(log, "exited on its own") {
		t.Errorf("engine.log does not record the exit:\n%s", log)
	}
}

// killWhenBusy waits until the run's llama-server is generating `busy`
// requests at once (the formal stage; the warm-up sends one), then kills
// it with SIGKILL, as a crash would.
func killWhenBusy(out string, busy int, stop <-chan struct{}) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-stop:
			return fmt.Errorf("the run ended before the engine was busy")
		case <-time.After(20 * time.Millisecond):
		}
		b, err := os.ReadFile(filepath.Join(out, archive.RunFile))
		if err != nil {
			continue
		}
		var m record.Meta
		if json.Unmarshal(b, &m) != nil || m.Engine.URL == "" || m.Engine.Extra["pid"] == nil {
			continue
		}
		resp, err := hc.Get(m.Engine.URL + "/metrics")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), fmt.Sprintf("llamacpp:requests_processing %d", busy)) {
			continue
		}
		pid := int(m.Engine.Extra["pid"].(float64))
		return syscall.Kill(pid, syscall.SIGKILL)
	}
	return fmt.Errorf("the engine never had %d requests in flight", busy)
}

// An engine that never becomes ready: the run fails with a timeout error
// naming the health URL, and the process is stopped. (A stand-in process
// that never listens; no engine needed.)
func TestEnginesNeverReady(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a ready timeout")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "silent-engine")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'loading forever'\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The preflight hashes the model file before the baseline: a
	// placeholder that exists (the stand-in never reads it).
	model := filepath.Join(dir, "placeholder.gguf")
	if err := os.WriteFile(model, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	_, stderr, code := runCLI(t, llamaArgs(t, out, script, model, "--set", "ready_timeout=2s")...)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d\n%s", code, exitFailure, stderr)
	}
	run := loadRun(t, out)
	health := run.Meta.Engine.URL + "/health"
	if run.Meta.Status != record.StatusFailed || !strings.Contains(run.Meta.Reason, "not ready after 2s") || !strings.Contains(run.Meta.Reason, "GET "+health) {
		t.Errorf("status %q reason %q (want the health URL %s)", run.Meta.Status, run.Meta.Reason, health)
	}
	log := engineLog(t, out)
	var pid int
	if i := strings.Index(log, "started pid "); i >= 0 {
		_, _ = fmt.Sscanf(log[i:], "started pid %d", &pid)
	}
	if pid == 0 {
		t.Fatalf("no pid in engine.log:\n%s", log)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("engine process %d still running after the failed run", pid)
	}
	if !strings.Contains(log, "loading forever") || !strings.Contains(log, "SIGTERM") {
		t.Errorf("engine.log:\n%s", log)
	}
}

// An already running llama-server (--engine-url): the run completes, its
// lifecycle metrics are not applicable, and nothing is started or stopped.
func TestEnginesExternalLlamaCpp(t *testing.T) {
	bin := llamaServer(t)
	dir := t.TempDir()
	var log strings.Builder
	srv, err := llamacpp.New(llamacpp.Config{Common: engines.Common{Bin: bin, ModelFile: tinyModel(t, dir), Slots: 2, MaxModelLen: 1024, Log: &lockedWriter{w: &log}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(ctx, 5*time.Second)
	if err := srv.WaitReady(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	stdout, stderr, code := runCLI(t, "run", enginesProfile, "--out", out, "--no-progress", "--telemetry", "none",
		"--engine", "llamacpp", "--engine-url", srv.BaseURL(), "--model", "tiny", "--scrape-interval", "200ms")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run := loadRun(t, out)
	checkCompleteRun(t, run, "llamacpp", true)
	if run.Meta.Engine.Managed || run.Meta.Engine.Extra["external"] != true {
		t.Errorf("engine %+v", run.Meta.Engine)
	}
	for _, st := range []string{"startup", "release"} {
		if _, ok := run.Meta.StageByName(st); ok {
			t.Errorf("an external engine's run has a %s stage", st)
		}
	}
	select {
	case <-srv.Exited():
		t.Error("the external engine was stopped by the run")
	default:
	}
	if len(run.EngineMetrics) == 0 {
		t.Error("no engine metrics scraped from the external llama-server")
	}
}

// Engine flags are checked before anything runs.
func TestEngineFlagsInvalid(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--engine", "llamacpp"}, "needs --model-file"},
		{[]string{"--engine", "vllm"}, "needs --model"},
		{[]string{"--engine", "tgi"}, "want one of"},
		{[]string{"--engine", "ollama", "--model", "m", "--ollama-api", "grpc"}, "--ollama-api"},
		{[]string{"--engine", "sim", "--engine-url", "http://127.0.0.1:1"}, "cannot be combined"},
		{[]string{"--engine", "llamacpp", "--model-file", "x.gguf", "--engine-env", "NOVALUE"}, "KEY=VALUE"},
	}
	for i, c := range cases {
		out := filepath.Join(dir, fmt.Sprint(i))
		_, stderr, code := runCLI(t, append([]string{"run", enginesProfile, "--out", out, "--no-progress", "--telemetry", "none"}, c.args...)...)
		if code != exitInvalid || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", c.args, code, exitInvalid, c.want, stderr)
		}
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A two-turn conversation against llama-server (its prompt cache is on by
// default): the second turn, which resends the first turn's prompt and
// answer, reports cached prompt tokens (timings.cache_n, or usage
// prompt_tokens_details.cached_tokens), and the first turn reports none.
func TestEnginesLlamaCppMultiTurnCache(t *testing.T) {
	bin := llamaServer(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "conversations.jsonl")
	first := strings.Repeat("the river runs past the old mill ", 10)
	line, _ := json.Marshal(map[string]any{"id": "c1", "turns": []any{
		map[string]any{"user": first, "max_tokens": 8}, map[string]any{"user": "and then?", "max_tokens": 8}}})
	if err := os.WriteFile(data, append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	stdout, stderr, code := runCLI(t, llamaArgs(t, out, bin, tinyModel(t, dir), "--dataset", data, "--dataset-format", "conversation",
		"--set", "concurrency=1", "--set", "max_tokens=0")...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run := loadRun(t, out)
	turns := map[int]record.Request{}
	for _, r := range run.Requests {
		if r.Phase == "formal" {
			turns[r.Turn] = r
		}
	}
	t1, t2 := turns[1], turns[2]
	if len(turns) != 2 || !t1.OK || !t2.OK || t1.ConversationID != "c1" || t2.ConversationID != "c1" {
		t.Fatalf("formal turns %+v", turns)
	}
	t.Logf("turn 1: %d prompt tokens, %d cached; turn 2: %d prompt tokens, %d cached (timings %v)",
		t1.PromptTokens, t1.CachedPromptTokens, t2.PromptTokens, t2.CachedPromptTokens, t2.EngineTimings)
	if t2.CachedPromptTokens <= 0 || t2.CachedPromptTokens >= t2.PromptTokens || t2.PromptTokens <= t1.PromptTokens {
		t.Errorf("turn 2: %d prompt tokens, %d cached; want some cached, and more prompt tokens than turn 1's %d", t2.PromptTokens, t2.CachedPromptTokens, t1.PromptTokens)
	}
}
