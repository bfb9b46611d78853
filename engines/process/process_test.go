//go:build unix

package process_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines/process"
	"github.com/joulebench/joulebench/engines/process/processtest"
	"github.com/joulebench/joulebench/internal/syncbuf"
)

func TestMain(m *testing.M) {
	processtest.MaybeRunFake()
	maybeRunParent()
	os.Exit(m.Run())
}

// syncBuffer is a log safe for the copier goroutine and the test.
type syncBuffer = syncbuf.Buffer

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		i := bytes.LastIndexByte(b, ')')
		return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
	}
	return syscall.Kill(pid, 0) == nil
}

// A stop ends the whole process group (the shell and its child), records
// the exit, and says so in the log.
func TestStopEndsProcessGroup(t *testing.T) {
	var log syncBuffer
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	p, err := process.Start(process.Spec{Name: "sh", Argv: []string{"sh", "-c", "sleep 60 & echo $! > " + pidFile + "; echo started; wait"}, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	var child int
	for i := 0; i < 200 && child == 0; i++ {
		if b, err := os.ReadFile(pidFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			child = atoi(t, string(bytes.TrimSpace(b)))
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if child == 0 {
		t.Fatal("child never started")
	}
	at, err := p.Stop(context.Background(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if at.IsZero() || at.Before(p.StartedAt()) {
		t.Errorf("exit time %v before start %v", at, p.StartedAt())
	}
	if alive(child) {
		t.Errorf("child %d of the process group still alive after Stop", child)
	}
	select {
	case <-p.Exited():
	default:
		t.Error("Exited not closed after Stop")
	}
	if p.ExitError() != nil {
		t.Errorf("a stopped process has no exit error, got %v", p.ExitError())
	}
	for _, want := range []string{"joulebench: ", "started pid", "SIGTERM to process group", "started\n", "gone"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
	again, err := p.Stop(context.Background(), time.Second)
	if err != nil || !again.Equal(at) {
		t.Errorf("second Stop: %v %v, want %v", again, err, at)
	}
}

// A process that ignores SIGTERM is killed when the grace period is over.
func TestStopKillsAfterGrace(t *testing.T) {
	var log syncBuffer
	p, err := process.Start(process.Spec{Argv: []string{"sh", "-c", `trap "" TERM; echo R$((1+1))R; while :; do sleep 0.05; done`}, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(log.String(), "R2R") })
	start := time.Now()
	if _, err := p.Stop(context.Background(), 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("stopped after %s, before the grace period", d)
	}
	if !strings.Contains(log.String(), "SIGKILL") {
		t.Errorf("log does not mention SIGKILL:\n%s", log.String())
	}
}

// An exit on its own is an ExitError with the status and the log's tail.
func TestExitOnItsOwn(t *testing.T) {
	var log syncBuffer
	p, err := process.Start(process.Spec{Name: "crasher", Argv: []string{"sh", "-c", "echo line one; echo 'fatal: out of memory' >&2; exit 3"}, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("no exit")
	}
	err = p.ExitError()
	var ee *process.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("ExitError = %v", err)
	}
	for _, want := range []string{"crasher exited on its own", "exit status 3", "fatal: out of memory", "line one"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	waitFor(t, func() bool { return strings.Contains(log.String(), "exited on its own: exit status 3") })
	at, err := p.Stop(context.Background(), time.Second)
	if err != nil || !at.Equal(p.ExitedAt()) {
		t.Errorf("Stop after a crash: %v %v, want the exit time %v", at, err, p.ExitedAt())
	}
	if p.ExitError() == nil {
		t.Error("a Stop after the crash hid the exit error")
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := process.Start(process.Spec{}); err == nil {
		t.Error("empty argv accepted")
	}
	_, err := process.Start(process.Spec{Name: "x", Argv: []string{"/nonexistent/engine-binary"}})
	if err == nil || !strings.Contains(err.Error(), "x:") {
		t.Errorf("missing binary: %v", err)
	}
}

// Environment overrides reach the process; the working directory is made.
func TestEnvAndDir(t *testing.T) {
	var log syncBuffer
	dir := filepath.Join(t.TempDir(), "engine", "run")
	p, err := process.Start(process.Spec{Argv: []string{"sh", "-c", `echo "v=$JB_TEST_VAR"; pwd`}, Env: map[string]string{"JB_TEST_VAR": "42"}, Dir: dir, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	waitFor(t, func() bool { return strings.Contains(log.String(), dir) })
	if !strings.Contains(log.String(), "v=42") {
		t.Errorf("log:\n%s", log.String())
	}
}

func TestRedact(t *testing.T) {
	cases := []struct{ in, want []string }{
		{[]string{"vllm", "serve", "m", "--api-key", "sk-1", "--port", "8000"}, []string{"vllm", "serve", "m", "--api-key", "[redacted]", "--port", "8000"}},
		{[]string{"llama-server", "--api-key=abc", "--hf-token", "hf_x", "-m", "f.gguf"}, []string{"llama-server", "--api-key=[redacted]", "--hf-token", "[redacted]", "-m", "f.gguf"}},
		{[]string{"x", "--max-num-batched-tokens", "8192", "--tokenizer", "t", "--max-tokens", "5"}, []string{"x", "--max-num-batched-tokens", "8192", "--tokenizer", "t", "--max-tokens", "5"}},
		{[]string{"x", "--url", "http://user:pw@host:1/v1"}, []string{"x", "--url", "http://user:[redacted]@host:1/v1"}},
	}
	for _, c := range cases {
		if got := process.Redact(c.in); strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	env := process.RedactEnv(map[string]string{"HF_TOKEN": "hf_x", "OLLAMA_HOST": "127.0.0.1:1", "OPENAI_API_KEY": "k", "HTTP_PROXY": "http://u:p@proxy:3128", "VLLM_CACHE_ROOT": "/c"})
	want := map[string]string{"HF_TOKEN": "[redacted]", "OLLAMA_HOST": "127.0.0.1:1", "OPENAI_API_KEY": "[redacted]", "HTTP_PROXY": "http://u:[redacted]@proxy:3128", "VLLM_CACHE_ROOT": "/c"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("RedactEnv[%s] = %q, want %q", k, env[k], v)
		}
	}
	v := process.RedactValue(map[string]any{"api_key": "s3cret", "tp_size": 2.0, "nested": []any{map[string]any{"hf_token": "x"}}, "max_total_tokens": "9"})
	m := v.(map[string]any)
	if m["api_key"] != "[redacted]" || m["tp_size"] != 2.0 || m["max_total_tokens"] != "9" ||
		m["nested"].([]any)[0].(map[string]any)["hf_token"] != "[redacted]" {
		t.Errorf("RedactValue = %v", v)
	}
}

// Environment overrides archived in run.json: every name that looks secret
// (key, token, secret, passw(or)d, pass, pwd, credential) has its value
// hidden; others keep theirs.
func TestRedactEnvSecretNames(t *testing.T) {
	cases := []struct {
		name, value, want string
	}{
		{"OPENAI_KEY", "sk-1", "[redacted]"},
		{"DB_PASS", "hunter2", "[redacted]"},
		{"MYSQL_PWD", "pw", "[redacted]"},
		{"PGPASSWORD", "pw", "[redacted]"},
		{"REDIS_PASSWD", "pw", "[redacted]"},
		{"AWS_SECRET_ACCESS_KEY", "abc", "[redacted]"},
		{"GOOGLE_APPLICATION_CREDENTIALS", "/k.json", "[redacted]"},
		{"HF_TOKEN", "hf_x", "[redacted]"},
		{"VLLM_API_KEY", "k", "[redacted]"},
		{"CUDA_VISIBLE_DEVICES", "0,1", "0,1"},
		{"VLLM_MAX_TOKENS", "8", "8"},
		{"OLLAMA_HOST", "127.0.0.1:1", "127.0.0.1:1"},
		{"PROXY", "http://u:pw@p:3128/?token=t", "http://u:[redacted]@p:3128/?token=[redacted]"},
	}
	for _, c := range cases {
		if got := process.RedactEnv(map[string]string{c.name: c.value})[c.name]; got != c.want {
			t.Errorf("RedactEnv %s=%q: %q, want %q", c.name, c.value, got, c.want)
		}
	}
}

func fakeServer(t *testing.T, f processtest.Fake) (*process.Server, *syncBuffer) {
	t.Helper()
	port, err := process.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	k, v := f.Env()
	var log syncBuffer
	srv := process.NewServer(process.Spec{Name: "fake", Argv: []string{os.Args[0], "--port", strconv.Itoa(port)}, Env: map[string]string{k: v}, Log: &log},
		process.LoopbackURL(port), "/health")
	srv.Poll = 20 * time.Millisecond
	t.Cleanup(func() { _, _ = srv.Stop(context.Background(), 2*time.Second) })
	return srv, &log
}

// Ready once /health answers 200; JSON queries work; Stop ends it.
func TestServerReady(t *testing.T) {
	srv, log := fakeServer(t, processtest.Fake{ReadyAfter: 300 * time.Millisecond, Routes: map[string]processtest.Route{
		"/health":    {Body: `{"status":"ok"}`},
		"/v1/models": {Body: `{"data":[{"id":"m"}]}`},
	}})
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitReady(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Data []struct{ ID string } `json:"data"`
	}
	if _, err := srv.GetJSON(context.Background(), "/v1/models", &v); err != nil || len(v.Data) != 1 || v.Data[0].ID != "m" {
		t.Fatalf("GetJSON: %v %+v", err, v)
	}
	if _, err := srv.GetJSON(context.Background(), "/nope", nil); !process.IsStatus(err, 404) {
		t.Errorf("missing route: %v", err)
	}
	if _, err := srv.Stop(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "got terminated") {
		t.Errorf("the fake did not see SIGTERM:\n%s", log.String())
	}
}

// An engine that never answers: the error names the health URL.
func TestServerNeverReady(t *testing.T) {
	srv, _ := fakeServer(t, processtest.Fake{NeverListen: true})
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := srv.WaitReady(context.Background(), 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), srv.HealthURL()) || !strings.Contains(err.Error(), "not ready after 500ms") {
		t.Fatalf("err = %v", err)
	}
}

// An engine whose health endpoint answers 401 refused the credentials: the
// wait ends at once, saying so (before, it waited out the timeout as for
// a loading engine).
func TestServerCredentialsRefused(t *testing.T) {
	srv, _ := fakeServer(t, processtest.Fake{Routes: map[string]processtest.Route{
		"/health": {Status: 401, Body: `{"error":"unauthorized"}`},
	}})
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := srv.WaitReady(context.Background(), 20*time.Second)
	if err == nil || !strings.Contains(err.Error(), "the server refused the credentials") || !strings.Contains(err.Error(), "status 401") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s to say so", d)
	}
}

// An engine that dies while loading: the error has its status and log.
func TestServerExitsBeforeReady(t *testing.T) {
	srv, _ := fakeServer(t, processtest.Fake{NeverListen: true, ExitAfter: 200 * time.Millisecond})
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := srv.WaitReady(context.Background(), 20*time.Second)
	if err == nil || !strings.Contains(err.Error(), "exit status 7") || !strings.Contains(err.Error(), "simulated engine crash") {
		t.Fatalf("err = %v", err)
	}
	if srv.ExitError() == nil {
		t.Error("ExitError nil after a crash")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met in 5 s")
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://h:1/v1", "http://h:1/v1"},
		{"http://user:pw@h:1/v1", "http://user:[redacted]@h:1/v1"},
		{"https://tok3n@h/v1", "https://[redacted]@h/v1"},
		{"http://h:1/v1?key=s3cret&x=1", "http://h:1/v1?key=[redacted]&x=[redacted]"},
		{"http://u:p@h:1?key=s3cret", "http://u:[redacted]@h:1?key=[redacted]"},
		{"not a url", "not a url"},
	} {
		got := process.RedactURL(tc.in)
		if got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for _, secret := range []string{"pw", "tok3n", "s3cret"} {
			if strings.Contains(tc.in, secret) && strings.Contains(got, secret) {
				t.Errorf("RedactURL(%q) keeps %q", tc.in, secret)
			}
		}
	}
}
