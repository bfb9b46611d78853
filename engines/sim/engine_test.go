package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines/internal/enginetest"
	"github.com/joulebench/joulebench/internal/syncbuf"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// fastConfig runs 50× faster than real time with an instant-ish load.
func fastConfig() Config {
	c := DefaultConfig()
	c.Speed = 50
	c.StartupS = 0.5
	c.StoppingS = 0.5
	return c
}

// start launches an engine, waits until ready and stops it at cleanup.
func start(t *testing.T, cfg Config) *Engine {
	t.Helper()
	e := New(cfg)
	enginetest.StartReady(t, e, 30*time.Second)
	return e
}

func post(t *testing.T, ctx context.Context, url string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func get(t *testing.T, url string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// sse is a parsed event stream.
type sse struct {
	chunks []map[string]any
	done   bool // saw data: [DONE]
	after  bool // data after [DONE]
}

// readSSE parses "data: ...\n\n" events as a client would.
func readSSE(t *testing.T, r io.Reader) sse {
	t.Helper()
	var out sse
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		if out.done {
			out.after = true
		}
		if data == "[DONE]" {
			out.done = true
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		out.chunks = append(out.chunks, m)
	}
	return out
}

func choice0(m map[string]any) map[string]any {
	cs, _ := m["choices"].([]any)
	if len(cs) == 0 {
		return nil
	}
	c, _ := cs[0].(map[string]any)
	return c
}

func chatBody(prompt string, maxTokens int, stream, ignoreEOS bool) map[string]any {
	b := map[string]any{
		"model":      "sim-llm-8b",
		"messages":   []map[string]any{{"role": "user", "content": prompt}},
		"max_tokens": maxTokens,
		"stream":     stream,
		"ignore_eos": ignoreEOS,
	}
	if stream {
		b["stream_options"] = map[string]any{"include_usage": true}
	}
	return b
}

func TestHealthLoadingThenReady(t *testing.T) {
	cfg := DefaultConfig() // 2 s load at speed 1
	e := New(cfg)
	if e.Activity().Phase != simtel.PhaseOff || e.BaseURL() != "" {
		t.Fatal("not off before Start")
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background(), time.Second)
	if err := e.Start(context.Background()); err == nil {
		t.Error("second Start succeeded")
	}
	if !strings.HasPrefix(e.BaseURL(), "http://127.0.0.1:") {
		t.Errorf("BaseURL = %q", e.BaseURL())
	}
	code, hdr, _ := get(t, e.BaseURL()+"/health")
	if e.Phase() == simtel.PhaseLoading { // still loading after the response: it must have said 503
		if code != http.StatusServiceUnavailable {
			t.Errorf("health while loading = %d", code)
		}
		resp := post(t, context.Background(), e.BaseURL()+"/v1/chat/completions", chatBody("hi", 3, false, true))
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable && e.Phase() == simtel.PhaseLoading {
			t.Errorf("completion while loading = %d", resp.StatusCode)
		}
		if a := e.Activity(); a.Phase != simtel.PhaseLoading || a.MemFrac > cfg.MemFrac {
			t.Errorf("activity while loading = %+v", a)
		}
	} else {
		t.Log("machine too slow to observe loading; skipped the 503 check")
	}
	if hdr.Get(SimulatedHeader) != "true" {
		t.Error("simulated header missing")
	}
	if err := e.WaitReady(context.Background(), 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := get(t, e.BaseURL()+"/health"); code != http.StatusOK {
		t.Errorf("health when ready = %d", code)
	}
	if a := e.Activity(); a.Phase != simtel.PhaseReady || a.MemFrac != cfg.MemFrac || a.Slots != cfg.Slots {
		t.Errorf("activity when ready = %+v", a)
	}
}

func TestWaitReadyTimeoutAndNotStarted(t *testing.T) {
	e := New(DefaultConfig())
	if err := e.WaitReady(context.Background(), time.Millisecond); err == nil {
		t.Error("WaitReady before Start succeeded")
	}
	if _, err := e.Stop(context.Background(), time.Second); err == nil {
		t.Error("Stop before Start succeeded")
	}
	cfg := DefaultConfig()
	cfg.StartupS = 3600
	e = New(cfg)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitReady(context.Background(), 10*time.Millisecond); err == nil {
		t.Error("WaitReady did not time out")
	}
	go func() { _, _ = e.Stop(context.Background(), time.Second) }()
	if err := e.WaitReady(context.Background(), 0); err == nil {
		t.Error("WaitReady returned nil for an engine that exited while loading")
	}
}

func TestStreamingChat(t *testing.T) {
	e := start(t, fastConfig())
	prompt := strings.Repeat("abcd", 25) // 100 chars → 25 prompt tokens
	resp := post(t, context.Background(), e.BaseURL()+"/v1/chat/completions", chatBody(prompt, 20, true, true))
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(SimulatedHeader) != "true" ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	s := readSSE(t, resp.Body)
	if !s.done || s.after {
		t.Fatalf("[DONE] seen %v, data after it %v", s.done, s.after)
	}
	// role chunk + 20 token chunks + finish chunk + usage chunk
	if len(s.chunks) != 23 {
		t.Fatalf("%d chunks, want 23", len(s.chunks))
	}
	id := s.chunks[0]["id"]
	for i, c := range s.chunks {
		if c["object"] != "chat.completion.chunk" || c["id"] != id || c["model"] != "sim-llm-8b" {
			t.Errorf("chunk %d header fields %v", i, c)
		}
	}
	d0 := choice0(s.chunks[0])["delta"].(map[string]any)
	if d0["role"] != "assistant" || d0["content"] != nil {
		t.Errorf("first chunk not role-only: %v", d0)
	}
	var text strings.Builder
	for i := 1; i <= 20; i++ {
		c := choice0(s.chunks[i])
		content, _ := c["delta"].(map[string]any)["content"].(string)
		if content == "" || c["finish_reason"] != nil {
			t.Errorf("token chunk %d = %v", i, c)
		}
		text.WriteString(content)
	}
	fin := choice0(s.chunks[21])
	if fin["finish_reason"] != "length" || len(fin["delta"].(map[string]any)) != 0 {
		t.Errorf("final chunk = %v", fin)
	}
	u := s.chunks[22]
	if cs := u["choices"].([]any); len(cs) != 0 {
		t.Errorf("usage chunk has choices %v", cs)
	}
	usage := u["usage"].(map[string]any)
	if usage["prompt_tokens"] != 25.0 || usage["completion_tokens"] != 20.0 || usage["total_tokens"] != 45.0 {
		t.Errorf("usage = %v", usage)
	}
	if n := len(text.String()); n < 20 || n > 20*8 {
		t.Errorf("text %q has implausible length", text.String())
	}

	// The same request gives the same tokens (seeded).
	resp2 := post(t, context.Background(), e.BaseURL()+"/v1/chat/completions", chatBody(prompt, 20, false, true))
	defer resp2.Body.Close()
	var whole struct {
		Object  string `json:"object"`
		Choices []struct {
			Message      struct{ Role, Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.NewDecoder(resp2.Body).Decode(&whole); err != nil {
		t.Fatal(err)
	}
	if whole.Object != "chat.completion" || whole.Choices[0].Message.Content != text.String() ||
		whole.Choices[0].Message.Role != "assistant" || whole.Usage.CompletionTokens != 20 || whole.Choices[0].FinishReason != "length" {
		t.Errorf("non-streaming = %+v, streamed text %q", whole, text.String())
	}
}

func TestStreamingCompletions(t *testing.T) {
	e := start(t, fastConfig())
	body := map[string]any{"model": "sim-llm-8b", "prompt": "12345678", "max_tokens": 5, "stream": true, "ignore_eos": true}
	resp := post(t, context.Background(), e.BaseURL()+"/v1/completions", body)
	defer resp.Body.Close()
	s := readSSE(t, resp.Body)
	if !s.done || len(s.chunks) != 6 { // 5 tokens + finish; no usage chunk asked for
		t.Fatalf("done %v, %d chunks", s.done, len(s.chunks))
	}
	for i, c := range s.chunks {
		if c["object"] != "text_completion" || c["usage"] != nil {
			t.Errorf("chunk %d = %v", i, c)
		}
	}
	if txt, _ := choice0(s.chunks[0])["text"].(string); txt == "" {
		t.Error("first chunk carries no token")
	}
	if f := choice0(s.chunks[5]); f["finish_reason"] != "length" || f["text"] != "" {
		t.Errorf("final = %v", f)
	}
	// Non-streaming completions with usage; prompt as token ids.
	resp2 := post(t, context.Background(), e.BaseURL()+"/v1/completions",
		map[string]any{"prompt": []int{1, 2, 3, 4, 5, 6, 7}, "max_tokens": 4, "ignore_eos": true})
	defer resp2.Body.Close()
	var whole map[string]any
	if err := json.NewDecoder(resp2.Body).Decode(&whole); err != nil {
		t.Fatal(err)
	}
	u := whole["usage"].(map[string]any)
	if whole["object"] != "text_completion" || u["prompt_tokens"] != 7.0 || u["completion_tokens"] != 4.0 {
		t.Errorf("completion = %v", whole)
	}
}

func completionTokens(t *testing.T, e *Engine, prompt string, maxTokens int, ignoreEOS bool) (int, string) {
	t.Helper()
	resp := post(t, context.Background(), e.BaseURL()+"/v1/chat/completions", chatBody(prompt, maxTokens, false, ignoreEOS))
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var r struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r.Usage.CompletionTokens, r.Choices[0].FinishReason
}

func TestMaxTokensHonoured(t *testing.T) {
	cfg := fastConfig()
	cfg.StopProb = 1
	cfg.Speed = 200
	e := start(t, cfg)
	for _, n := range []int{1, 2, 7, 33} {
		if got, fin := completionTokens(t, e, "count", n, true); got != n || fin != "length" {
			t.Errorf("ignore_eos max_tokens %d: %d tokens, finish %q", n, got, fin)
		}
	}
	// Without ignore_eos a stop length is drawn: never above max_tokens,
	// "stop" when shorter; deterministic per prompt.
	stops := 0
	for i := 0; i < 10; i++ {
		p := fmt.Sprintf("question %d", i)
		got, fin := completionTokens(t, e, p, 30, false)
		if got < 1 || got > 30 || (got < 30) != (fin == "stop") {
			t.Errorf("%q: %d tokens, finish %q", p, got, fin)
		}
		if fin == "stop" {
			stops++
		}
		if again, _ := completionTokens(t, e, p, 30, false); again != got {
			t.Errorf("%q: %d then %d tokens", p, got, again)
		}
	}
	if stops == 0 {
		t.Error("no request stopped early with StopProb 1")
	}
	// Default max tokens when the request sets none.
	resp := post(t, context.Background(), e.BaseURL()+"/v1/completions", map[string]any{"prompt": "x", "ignore_eos": true})
	var r struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	_ = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if r.Usage.CompletionTokens != cfg.DefaultMaxTokens {
		t.Errorf("default max tokens: %d", r.Usage.CompletionTokens)
	}
}

func TestBadRequests(t *testing.T) {
	e := start(t, fastConfig())
	cases := []struct {
		path string
		body any
		code int
	}{
		{"/v1/chat/completions", map[string]any{"model": "gpt-4", "messages": []any{map[string]any{"role": "user", "content": "x"}}}, 404},
		{"/v1/chat/completions", map[string]any{"messages": []any{}}, 400},
		{"/v1/completions", map[string]any{"max_tokens": 3}, 400},
		{"/v1/completions", map[string]any{"prompt": "x", "max_tokens": 0}, 400},
		{"/v1/completions", map[string]any{"prompt": "x", "max_tokens": 9000}, 400},
		{"/v1/completions", map[string]any{"prompt": strings.Repeat("x", 4*8192)}, 400},
		{"/v1/completions", map[string]any{"prompt": "x", "n": 2}, 400},
		{"/v1/completions", "not an object", 400},
	}
	for i, c := range cases {
		resp := post(t, context.Background(), e.BaseURL()+c.path, c.body)
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if resp.StatusCode != c.code || m["error"] == nil || resp.Header.Get(SimulatedHeader) != "true" {
			t.Errorf("case %d: status %d, body %v", i, resp.StatusCode, m)
		}
	}
	// Content parts are accepted.
	resp := post(t, context.Background(), e.BaseURL()+"/v1/chat/completions", map[string]any{
		"messages":   []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "abcdefgh"}}}},
		"max_tokens": 2,
	})
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("content parts: %d", resp.StatusCode)
	}
	if code, hdr, _ := get(t, e.BaseURL()+"/nope"); code != 404 || hdr.Get(SimulatedHeader) != "true" {
		t.Errorf("unknown path: %d %v", code, hdr)
	}
}

func TestModelsVersionIdentity(t *testing.T) {
	cfg := fastConfig()
	cfg.Model = "tiny"
	e := start(t, cfg)
	code, hdr, body := get(t, e.BaseURL()+"/v1/models")
	if code != 200 || hdr.Get(SimulatedHeader) != "true" {
		t.Fatalf("models: %d", code)
	}
	var models struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		}
	}
	if err := json.Unmarshal(body, &models); err != nil || len(models.Data) != 1 {
		t.Fatalf("models %s: %v", body, err)
	}
	if models.Data[0].ID != "sim-tiny" || models.Data[0].MaxModelLen != cfg.MaxModelLen {
		t.Errorf("models = %+v", models)
	}
	code, _, body = get(t, e.BaseURL()+"/version")
	var v struct{ Version string }
	if code != 200 || json.Unmarshal(body, &v) != nil || v.Version != "sim-1" {
		t.Errorf("version: %d %s", code, body)
	}
	id, err := e.Identity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if id.Model != "sim-tiny" || id.EngineVersion != "sim-1" || id.ContextLength != cfg.MaxModelLen ||
		id.Revision != cfg.Revision || id.TensorParallel != cfg.TensorParallel || id.Raw["/v1/models"] == nil {
		t.Errorf("identity = %+v", id)
	}
	info := e.Info()
	if info.Kind != "sim" || info.Version != "sim-1" || info.Model != "sim-tiny" || !info.Managed ||
		len(info.Command) != 1 || info.Command[0] != "joulebench-sim" || info.URL != e.BaseURL() || info.API != "openai" {
		t.Errorf("info = %+v", info)
	}
	if e.Kind() != "sim" || !e.Simulated() || e.API() != "openai" {
		t.Error("kind/simulated/api")
	}
}

// metrics scrapes /metrics into name → value.
func metrics(t *testing.T, e *Engine) map[string]float64 {
	t.Helper()
	code, _, body := get(t, e.BaseURL()+"/metrics")
	if code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, "{")
		_, val, _ := strings.Cut(rest, "} ")
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("metric line %q", line)
		}
		out[name] = f
	}
	return out
}

func TestSlotsAndQueue(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Slots = 2
	cfg.StartupS = 0
	cfg.StepBaseS = 0.05 // 20 tok/s: 2000 tokens outlast the test
	e := start(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	results := make([]sse, 5)
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, _ := json.Marshal(chatBody(fmt.Sprintf("long %d", i), 2000, true, true))
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.BaseURL()+"/v1/chat/completions", bytes.NewReader(b))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var buf bytes.Buffer
			_, _ = io.Copy(&buf, resp.Body) // cut by Stop: may end mid-line
			results[i] = sse{done: bytes.Contains(buf.Bytes(), []byte("data: [DONE]"))}
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	seen := false
	for time.Now().Before(deadline) {
		m := metrics(t, e)
		if m["sim:num_requests_running"] > 2 {
			t.Fatalf("running %v > 2 slots", m["sim:num_requests_running"])
		}
		if a := e.Activity(); a.Running+a.Prefilling > 2 {
			t.Fatalf("activity %+v over the slot limit", a)
		}
		if m["sim:num_requests_running"] == 2 && m["sim:num_requests_waiting"] == 3 {
			seen = true
			if m["sim:kv_cache_usage_perc"] <= 0 || m["sim:kv_cache_usage_perc"] >= 1 || m["sim:num_slots"] != 2 {
				t.Errorf("metrics %v", m)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !seen {
		t.Fatal("never saw 2 running and 3 waiting")
	}
	// Stop cuts the streams: no [DONE].
	if _, err := e.Stop(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, r := range results {
		if r.done {
			t.Errorf("request %d finished normally despite Stop", i)
		}
	}
}

func TestClientGoneIsDropped(t *testing.T) {
	cfg := fastConfig()
	cfg.Speed = 1
	cfg.StartupS = 0
	e := start(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(t, ctx, e.BaseURL()+"/v1/chat/completions", chatBody("bye", 5000, true, true))
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil { // first chunk arrived: it is running
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		m := metrics(t, e)
		if m["sim:request_aborted_total"] == 1 && m["sim:num_requests_running"] == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("abandoned request still scheduled: %v", metrics(t, e))
}

// lockedBuffer is a log sink safe to read after the engine exited.
type lockedBuffer = syncbuf.Buffer

func TestStopExits(t *testing.T) {
	cfg := fastConfig()
	var log lockedBuffer
	cfg.Log = &log
	e := start(t, cfg)
	completionTokens(t, e, "logged", 4, true)
	base := e.BaseURL()
	if _, err := http.Get(base + "/health"); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	exitedAt, err := e.Stop(context.Background(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.Exited():
	default:
		t.Fatal("Exited not closed after Stop")
	}
	if exitedAt.Before(before) || exitedAt.After(time.Now()) {
		t.Errorf("exitedAt %v outside the Stop call", exitedAt)
	}
	if _, err := http.Get(base + "/health"); err == nil {
		t.Error("health still reachable after exit")
	}
	if a := e.Activity(); a.Phase != simtel.PhaseOff || a.MemFrac != 0 || a.Running != 0 {
		t.Errorf("activity after exit = %+v", a)
	}
	again, err := e.Stop(context.Background(), time.Second)
	if err != nil || !again.Equal(exitedAt) {
		t.Errorf("second Stop = %v, %v", again, err)
	}
	if e.ExitErr() != nil {
		t.Errorf("ExitErr = %v", e.ExitErr())
	}
	if err := e.Start(context.Background()); err == nil {
		t.Error("restart succeeded")
	}
	for _, want := range []string{"starting sim-1 (simulated)", "ready", "stopping", "exited: 1 requests finished, 4 tokens generated"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("engine log lacks %q:\n%s", want, log.String())
		}
	}
}

func TestStopPhasesAndGrace(t *testing.T) {
	cfg := fastConfig()
	cfg.StoppingS = 3600 // only the grace ends it
	e := start(t, cfg)
	done := make(chan time.Time)
	go func() {
		at, _ := e.Stop(context.Background(), 50*time.Millisecond)
		done <- at
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("grace did not cut the stopping delay")
	}
	<-e.Exited()
}

func TestStoppingRefusesRequests(t *testing.T) {
	cfg := fastConfig()
	cfg.StoppingS = 3600
	e := start(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		_, _ = e.Stop(ctx, 0)
		close(stopped)
	}()
	for e.Phase() != simtel.PhaseStopping {
		time.Sleep(time.Millisecond)
	}
	if a := e.Activity(); a.Phase != simtel.PhaseStopping || a.MemFrac != cfg.MemFrac {
		t.Errorf("activity while stopping = %+v", a)
	}
	if code, _, _ := get(t, e.BaseURL()+"/health"); code != 503 {
		t.Errorf("health while stopping = %d", code)
	}
	resp := post(t, context.Background(), e.BaseURL()+"/v1/completions", map[string]any{"prompt": "x"})
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("completion while stopping = %d", resp.StatusCode)
	}
	cancel() // a cancelled Stop kills at once
	<-stopped
	<-e.Exited()
}

func TestCrashAfterRequests(t *testing.T) {
	cfg := fastConfig()
	cfg.CrashAfterRequests = 2
	e := start(t, cfg)
	completionTokens(t, e, "a", 3, true)
	select {
	case <-e.Exited():
		t.Fatal("exited after one request")
	default:
	}
	completionTokens(t, e, "b", 3, true)
	select {
	case <-e.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("did not crash")
	}
	if !errors.Is(e.ExitErr(), ErrCrashed) {
		t.Errorf("ExitErr = %v", e.ExitErr())
	}
	if _, err := e.Stop(context.Background(), time.Second); err != nil {
		t.Errorf("Stop after crash = %v", err)
	}
}

func TestStepTimeModel(t *testing.T) {
	c := DefaultConfig()
	c.PrefillTokPerS = 8000
	if got := c.stepSeconds(1, 0, 0); !near(got, 0.0205) {
		t.Errorf("batch 1 = %v", got)
	}
	if got := c.stepSeconds(64, 0, 0); !near(got, 0.052) {
		t.Errorf("batch 64 = %v", got)
	}
	if got := c.stepSeconds(0, 800, 0); !near(got, 0.02+0.1) {
		t.Errorf("prefill 800 = %v", got)
	}
	c.DriftPerRequest = 0.5
	if got := c.stepSeconds(1, 0, 4); !near(got, 0.0205*3) {
		t.Errorf("drift after 4 = %v", got)
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-12 && d > -1e-12 }

// With drift, identical sequential requests take longer and longer.
func TestDriftSlowsRequests(t *testing.T) {
	cfg := DefaultConfig()
	cfg.StartupS = 0
	cfg.StepBaseS = 0.01
	cfg.DriftPerRequest = 3 // request k runs 1+3k times slower
	e := start(t, cfg)
	var d []time.Duration
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		completionTokens(t, e, "same", 5, true)
		d = append(d, time.Since(t0))
	}
	if !(d[2] > d[0]) {
		t.Errorf("durations %v do not grow", d)
	}
}

func TestActivityWhileGenerating(t *testing.T) {
	cfg := DefaultConfig()
	cfg.StartupS = 0
	e := start(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := post(t, ctx, e.BaseURL()+"/v1/chat/completions", chatBody("busy", 5000, true, true))
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if a := e.Activity(); a.Running == 1 && a.Phase == simtel.PhaseReady {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Errorf("activity never showed the running request: %+v", e.Activity())
}

// The simulated GPUs follow the engine: memory held while it runs, power
// above idle while it generates.
func TestDrivesSimTelemetry(t *testing.T) {
	cfg := fastConfig()
	e := New(cfg)
	tc := simtel.DefaultConfig()
	src := simtel.New(tc, e, nil)
	r, err := src.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r[0].MemUsedBytes != tc.MemBaselineBytes {
		t.Errorf("memory before start = %d", r[0].MemUsedBytes)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitReady(context.Background(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	r, _ = src.Read(context.Background())
	if r[0].MemUsedBytes <= tc.MemBaselineBytes {
		t.Errorf("memory when ready = %d", r[0].MemUsedBytes)
	}
	if _, err := e.Stop(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
	r, _ = src.Read(context.Background())
	if r[0].MemUsedBytes != tc.MemBaselineBytes {
		t.Errorf("memory after exit = %d", r[0].MemUsedBytes)
	}
}
