package runner

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/all"
)

// A running server process is found by its name, with its pid; the
// process itself is never listed.
func TestOtherEngineProcesses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1)")
	}
	cmd := exec.Command(sleep, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	want := "sleep (pid " + strconv.Itoa(cmd.Process.Pid) + ")"
	if got := (systemHost{}).EngineProcesses([]string{"sleep"}, nil); !strings.Contains(got, want) {
		t.Errorf("got %q, want it to list %q", got, want)
	}
	// The server under test (listening on --engine-url's port) is not
	// another engine: asiai's no_other_engine gate must not name it.
	if got := (systemHost{}).EngineProcesses([]string{"sleep"}, []int{cmd.Process.Pid}); strings.Contains(got, want) {
		t.Errorf("got %q, want the server under test left out", got)
	}
	self := filepath.Base(os.Args[0])
	if got := otherEngineProcesses([]string{self}, nil); strings.Contains(got, "pid "+strconv.Itoa(os.Getpid())+")") {
		t.Errorf("lists this process: %q", got)
	}
	// Swap in use is "" or N MiB.
	if s := (systemHost{}).SwapUsed(); s != "" && !regexp.MustCompile(`^\d+ MiB$`).MatchString(s) {
		t.Errorf("swap %q", s)
	}
	if h := hostInfo(); h.OS != runtime.GOOS || h.CPUs < 1 {
		t.Errorf("host %+v", h)
	}
}

// The cooldown parameters are read from the resolved profile parameters
// (durations in seconds, any number type); without cooldown_max_wait
// there is no cooldown. The poll is a quarter of the hold, at most 0.5 s.
func TestCooldownParamsOf(t *testing.T) {
	for _, tc := range []struct {
		params map[string]any
		want   cooldownParams
	}{
		{map[string]any{}, cooldownParams{Tolerance: 0.10, IdleS: 5, HoldS: 5, MaxWaitS: 120, Poll: 0.5}},
		{map[string]any{"cooldown_max_wait": 10.0, "cooldown_hold": 1, "cooldown_idle": int64(2), "cooldown_tolerance": 0.2},
			cooldownParams{Enabled: true, Tolerance: 0.2, IdleS: 2, HoldS: 1, MaxWaitS: 10, Poll: 0.25}},
	} {
		if got := cooldownParamsOf(tc.params, false); got != tc.want {
			t.Errorf("%v: %+v, want %+v", tc.params, got, tc.want)
		}
	}
}

// Between points against a running server, a benchmark profile (no
// cooldown_* parameters) waits as its release does: release_tolerance,
// release_hold, at most release_max_wait; a managed engine's release
// already waited, so it gets none.
func TestCooldownParamsOfRelease(t *testing.T) {
	params := map[string]any{"release_tolerance": 0.05, "release_hold": 30.0, "release_max_wait": 600.0}
	want := cooldownParams{Enabled: true, Tolerance: 0.05, IdleS: 5, HoldS: 30, MaxWaitS: 600, Poll: 0.5}
	if got := cooldownParamsOf(params, true); got != want {
		t.Errorf("external: %+v, want %+v", got, want)
	}
	if got := cooldownParamsOf(params, false); got.Enabled {
		t.Errorf("managed: %+v, want no cooldown", got)
	}
}

// Between runs, a server joulebench did not start is asked to unload the
// previous run's model (Ollama: keep_alive 0); a managed engine, a run
// without an archive or a kind without an unload API is left alone.
func TestUnloadModel(t *testing.T) {
	var mu sync.Mutex
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/api/generate" {
			_ = json.NewDecoder(r.Body).Decode(&got)
		}
	}))
	defer srv.Close()
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	ctx, reg := context.Background(), all.Registry()
	if msg, err := unloadModel(ctx, reg, srv.Client(), s.Out); msg != "" || err != nil {
		t.Errorf("managed simulator: %q %v", msg, err)
	}
	if msg, err := unloadModel(ctx, reg, srv.Client(), filepath.Join(s.Out, "none")); msg != "" || err != nil {
		t.Errorf("no archive: %q %v", msg, err)
	}
	setEngine(t, s.Out, record.EngineInfo{Kind: "ollama", URL: srv.URL, Model: "tiny"})
	msg, err := unloadModel(ctx, reg, srv.Client(), s.Out)
	mu.Lock()
	defer mu.Unlock()
	if err != nil || !strings.Contains(msg, "unloaded tiny") || got["model"] != "tiny" || got["keep_alive"] != 0.0 {
		t.Errorf("ollama: %q %v, request %v", msg, err, got)
	}
}

// setEngine replaces the engine of the archive at dir's run.json.
func setEngine(t *testing.T, dir string, e record.EngineInfo) {
	t.Helper()
	path := filepath.Join(dir, "run.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	eb, _ := json.Marshal(e)
	var em map[string]any
	_ = json.Unmarshal(eb, &em)
	m["engine"] = em
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The load options become --set values of the parameters the profile
// declares (benchmark-1.5 has them all); 9 prompts, fewer than the 2
// windows of 100 that steady state needs, run without it
// (accept_unsteady=true).
func TestApplyLoad(t *testing.T) {
	r, err := New(Spec{FindProfile: testSpec(t, nil).FindProfile, Load: LoadOptions{Rate: 2, RateSet: true, NumPrompts: 9, NumPromptsSet: true}})
	if err != nil {
		t.Fatal(err)
	}
	sets, err := r.applyLoad("benchmark-1.5", []string{"x=1"})
	if err != nil || strings.Join(sets, " ") != "x=1 rate=2 mode=poisson request_count=9 accept_unsteady=true" {
		t.Errorf("sets %v, %v", sets, err)
	}
}

// A random dataset takes the --random-* lengths.
func TestResolveRandomDataset(t *testing.T) {
	r, err := New(Spec{FindProfile: testSpec(t, nil).FindProfile,
		Dataset: DatasetOptions{Name: "random", RandomInputLen: 64, RandomOutputLen: 8, RandomRangeRatio: 0.5, RandomRangeRatioSet: true}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.resolveDataset(context.Background())
	if err != nil || !strings.Contains(got, "64") || !strings.Contains(got, "8") || !strings.Contains(got, "0.5") {
		t.Errorf("dataset %q, %v", got, err)
	}
	r.s.Dataset = DatasetOptions{Name: "chat"}
	if got, err := r.resolveDataset(context.Background()); got != "chat" || err != nil {
		t.Errorf("built-in: %q %v", got, err)
	}
}
