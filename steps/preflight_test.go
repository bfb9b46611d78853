package steps

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/process"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/workflow"
)

// fakeEngine is a managed engine that has not started, at a fixed URL.
type fakeEngine struct{ url string }

func (f fakeEngine) Kind() string                                   { return "fake" }
func (f fakeEngine) Simulated() bool                                { return false }
func (f fakeEngine) Start(context.Context) error                    { return nil }
func (f fakeEngine) WaitReady(context.Context, time.Duration) error { return nil }
func (f fakeEngine) Identity(context.Context) (engines.Identity, error) {
	return engines.Identity{}, nil
}
func (f fakeEngine) BaseURL() string { return f.url }
func (f fakeEngine) API() string     { return engines.APIOpenAI }
func (f fakeEngine) Stop(context.Context, time.Duration) (time.Time, error) {
	return time.Now(), nil
}
func (f fakeEngine) Exited() <-chan struct{} { return nil }
func (f fakeEngine) Info() record.EngineInfo { return record.EngineInfo{Kind: "fake"} }

// fakeSource reports fixed memory use.
type fakeSource struct{ mem []int64 }

func (s fakeSource) Name() string                                     { return "fake" }
func (s fakeSource) Devices(context.Context) ([]record.Device, error) { return nil, nil }
func (s fakeSource) Read(context.Context) ([]telemetry.Reading, error) {
	var out []telemetry.Reading
	for i, m := range s.mem {
		out = append(out, telemetry.Reading{Device: "gpu" + string(rune('0'+i)), MemUsedBytes: m})
	}
	return out, nil
}
func (s fakeSource) Close() error { return nil }

func newRC(t *testing.T) *workflow.RunContext {
	t.Helper()
	w, err := archive.Create(filepath.Join(t.TempDir(), "run"), record.Meta{RunID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &workflow.RunContext{Clock: workflow.NewClock(), Out: w, Log: zerolog.Nop()}
}

func TestPreflight(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	go func() {
		for {
			c, err := busy.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	freeURL := "http://" + free.Addr().String()
	free.Close() // nothing listens there now

	cfg := &PreflightConfig{Check: []string{"engine", "model", "gpus", "processes", "disk"}, MaxGPUMemUsedMB: 4096}
	cases := []struct {
		name string
		deps *Deps
		want []string // empty: passes
	}{
		{"all clear", &Deps{Engine: fakeEngine{freeURL}, Model: "m", Source: fakeSource{mem: []int64{500 << 20, 600 << 20}}}, nil},
		{"port taken by a leftover server", &Deps{Engine: fakeEngine{"http://" + busy.Addr().String()}, Model: "m"},
			[]string{busy.Addr().String(), "already in use"}},
		{"GPU memory held", &Deps{Engine: fakeEngine{freeURL}, Model: "m", Source: fakeSource{mem: []int64{500 << 20, 70 << 30}}},
			[]string{"device gpu1 already has 71680 MB", "limit 4096 MB"}},
		{"external engine: its port is expected to answer", &Deps{Engine: fakeEngine{"http://" + busy.Addr().String()}, Model: "m", External: true}, nil},
		// A running server holds its GPUs' memory already: that is the
		// engine under test, not a leftover.
		{"external engine: its GPUs' memory is expected to be held", &Deps{Engine: fakeEngine{freeURL}, Model: "m", External: true,
			Source: fakeSource{mem: []int64{500 << 20, 70 << 30}}}, nil},
		{"no engine, no model", &Deps{}, []string{"no engine configured", "no model requested"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := runPreflight(context.Background(), newRC(t), c.deps, cfg)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error with %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// weightsEngine is a fake engine that can check its weights.
type weightsEngine struct {
	fakeEngine
	err    error
	called *int
}

func (w weightsEngine) CheckWeights(context.Context) (engines.Weights, error) {
	*w.called++
	return engines.Weights{Source: "gguf", SHA256: "ab"}, w.err
}

// The model check asks a managed engine to confirm its weights are on
// this machine before the baseline; a missing model fails the preflight
// with the engine's reason; an external engine is not asked.
func TestPreflightWeights(t *testing.T) {
	cfg := &PreflightConfig{Check: []string{"model"}}
	for _, c := range []struct {
		name     string
		err      error
		external bool
		calls    int
		want     string
	}{
		{"weights present", nil, false, 1, ""},
		{"weights missing", errors.New("vllm: model org/m is not in the Hugging Face cache"), false, 1, "not in the Hugging Face cache"},
		{"external engine", errors.New("never asked"), true, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			d := &Deps{Engine: weightsEngine{fakeEngine: fakeEngine{"http://127.0.0.1:1"}, err: c.err, called: &calls}, Model: "m", External: c.external}
			err := runPreflight(context.Background(), newRC(t), d, cfg)
			if calls != c.calls {
				t.Errorf("CheckWeights called %d times, want %d", calls, c.calls)
			}
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

// The server of --engine-url is the server under test: the process that
// listens on its port and the processes of its group are not "another
// inference server"; every other process found is.
func TestSplitUnderTest(t *testing.T) {
	serve := process.ProcInfo{PID: 100, PGID: 100, Name: "ollama", Args: []string{"ollama", "serve"}}
	runner := process.ProcInfo{PID: 101, PGID: 100, Name: "ollama", Args: []string{"ollama", "runner"}}
	other := process.ProcInfo{PID: 200, PGID: 200, Name: "llama-server"}
	servers := []process.ProcInfo{serve, runner, other}
	for _, c := range []struct {
		name          string
		listeners     []int
		target, other []int
	}{
		{"managed or remote: no listener known", nil, nil, []int{100, 101, 200}},
		{"ollama serve listens: it and its runner", []int{100}, []int{100, 101}, []int{200}},
		{"the listener is not among the servers (a container's proxy)", []int{999}, nil, []int{100, 101, 200}},
	} {
		t.Run(c.name, func(t *testing.T) {
			target, others := process.SplitUnderTest(servers, c.listeners)
			pids := func(ps []process.ProcInfo) []int {
				var out []int
				for _, p := range ps {
					out = append(out, p.PID)
				}
				return out
			}
			if !slices.Equal(pids(target), c.target) || !slices.Equal(pids(others), c.other) {
				t.Errorf("target %v others %v, want %v and %v", pids(target), pids(others), c.target, c.other)
			}
		})
	}
}
