package runner

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/telemetry"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// gpuSource is n GPUs (gpu0, gpu1, ...) as NVML lists them, each drawing
// 100 W: a power source that does not follow the engine.
type gpuSource struct{ n int }

func (s gpuSource) Name() string { return "nvml" }
func (s gpuSource) Devices(context.Context) ([]record.Device, error) {
	out := make([]record.Device, s.n)
	for i := range out {
		out[i] = record.Device{ID: "gpu" + string(rune('0'+i)), Name: "Test GPU", PowerField: "nvmlDeviceGetPowerUsage", PowerLimitW: 400}
	}
	return out, nil
}
func (s gpuSource) Read(context.Context) ([]telemetry.Reading, error) {
	out := make([]telemetry.Reading, s.n)
	for i := range out {
		out[i] = telemetry.Reading{Device: "gpu" + string(rune('0'+i)), PowerW: 100, MemUsedBytes: -1}
	}
	return out, nil
}
func (s gpuSource) Close() error { return nil }

// openGPUs opens gpuSource{n} whatever the engine.
func openGPUs(n int) func(context.Context, TelemetryEnv) (telemetry.Source, record.TelemetryInfo, error) {
	return func(context.Context, TelemetryEnv) (telemetry.Source, record.TelemetryInfo, error) {
		return gpuSource{n}, record.TelemetryInfo{Source: "nvml"}, nil
	}
}

// refusedNoDirectory runs s and wants it refused as invalid input before
// anything was measured, with each of want in the error, and no run
// directory left.
func refusedNoDirectory(t *testing.T, s Spec, msgs *syncBuffer, want ...string) {
	t.Helper()
	res, err := Run(context.Background(), s)
	if err == nil || CodeOf(err) != CodeInvalid {
		t.Fatalf("run: %v (code %d), want invalid input\n%s", err, CodeOf(err), msgs.String())
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if _, serr := os.Stat(s.Out); !errors.Is(serr, fs.ErrNotExist) {
		t.Errorf("the refused run left %s (%v)", s.Out, serr)
	}
	if res == nil || len(res.Dirs) != 1 || res.Dirs[0] != "" {
		t.Errorf("result %+v: a run without a directory names none", res)
	}
}

// A --deployment part that lists a device the power source does not
// have (a typo: gpu7 on a two-GPU machine) is refused when the power
// source opens, before anything is measured: exit 2, the part, the device
// and the devices found named, no run directory (the reader would refuse
// the archive of the whole run).
func TestRunDeploymentDeviceMissingRefused(t *testing.T) {
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	s.OpenTelemetry = openGPUs(2)
	s.Deployment = writeDeployment(t, "entry: one\nparts:\n  - {name: one, role: replica, kind: sim, devices: [gpu0]}\n  - {name: two, role: replica, kind: sim, devices: [gpu7]}\n")
	refusedNoDirectory(t, s, &msgs, `part "two" owns device "gpu7"`, "(gpu0, gpu1)")
}

// The same deployment with the devices the source has runs to an archive
// the reader loads, each device with its part's role.
func TestRunDeploymentDevicesMeasured(t *testing.T) {
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	s.OpenTelemetry = openGPUs(2)
	s.Deployment = writeDeployment(t, "entry: one\nparts:\n  - {name: one, role: replica, kind: sim, devices: [gpu0]}\n  - {name: two, role: replica, kind: sim, devices: [gpu1]}\n")
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatalf("run: %v\n%s", err, msgs.String())
	}
	run, err := archive.Load(s.Out)
	if err != nil {
		t.Fatal(err)
	}
	if devs := run.Meta.Hardware.Devices; len(devs) != 2 || devs[0].Role != record.RoleReplica || devs[1].Role != record.RoleReplica {
		t.Errorf("devices %+v", devs)
	}
}

// The simulator reports tensor parallel 2 (engines/sim's default);
// measured by its own GPUs limited to one (as NVML with --gpus 0 under
// vLLM --tp 2), the run is refused when the power source opens: exit 2,
// the parallelism and the one device named, no run directory.
func TestRunParallelismOverFewerGPUsRefused(t *testing.T) {
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	s.OpenTelemetry = func(_ context.Context, env TelemetryEnv) (telemetry.Source, record.TelemetryInfo, error) {
		cfg := env.Sim.Config
		cfg.Devices = 1
		return simtel.New(cfg, env.Sim.Load, env.Clock.Now), record.TelemetryInfo{Source: "sim", Simulated: true}, nil
	}
	refusedNoDirectory(t, s, &msgs, "engine.tensor_parallel is 2", "1 GPU device(s) (sim0)")
}

// lateTP is an engine that says its tensor parallel only once started
// (a server started without --tp, whose identity reports it): 0 before
// Start, tp after.
type lateTP struct {
	engines.Engine
	tp      int
	started atomic.Bool
}

func (e *lateTP) Kind() string    { return "latetp" }
func (e *lateTP) Simulated() bool { return false }
func (e *lateTP) Start(ctx context.Context) error {
	e.started.Store(true)
	return e.Engine.Start(ctx)
}
func (e *lateTP) Info() record.EngineInfo {
	info := e.Engine.Info()
	info.Kind, info.TensorParallel = e.Kind(), 0
	if e.started.Load() {
		info.TensorParallel = e.tp
	}
	return info
}
func (e *lateTP) Identity(ctx context.Context) (engines.Identity, error) {
	id, err := e.Engine.Identity(ctx)
	id.TensorParallel = e.tp
	return id, err
}

// An engine whose tensor parallel (4) is known only once it runs, over
// the two GPUs measured, fails the run as soon as it says so: status
// failed with the reason, raw data kept, never an archive the reader
// refuses.
func TestRunParallelismKnownAtStartupFails(t *testing.T) {
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	s.OpenTelemetry = openGPUs(2)
	reg := all.Registry()
	sim, _ := reg.Lookup("sim")
	err := reg.Register(engines.Descriptor{Kind: "latetp", API: engines.APIOpenAI, Start: func(o engines.Options) (engines.Engine, error) {
		eng, err := sim.Start(o)
		return &lateTP{Engine: eng, tp: 4}, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.Registry, s.Engines = reg, []string{"latetp"}
	_, err = Run(context.Background(), s)
	want := "engine.tensor_parallel is 4 but hardware.devices has 2 GPU device(s) (gpu0, gpu1)"
	if err == nil || CodeOf(err) != CodeFailure || !strings.Contains(err.Error(), want) {
		t.Fatalf("run: %v (code %d), want a failure saying %q\n%s", err, CodeOf(err), want, msgs.String())
	}
	run, lerr := archive.Load(s.Out)
	if lerr != nil {
		t.Fatalf("the failed run's archive: %v", lerr)
	}
	if run.Meta.Status != record.StatusFailed || !strings.Contains(run.Meta.Reason, want) {
		t.Errorf("status %s, reason %q", run.Meta.Status, run.Meta.Reason)
	}
}
