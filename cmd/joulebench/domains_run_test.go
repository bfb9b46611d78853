package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/measure"
)

// raplCounters advances the fake powercap tree's counters as a CPU package
// drawing cpuW and its DRAM drawing dramW would, until ctx ends: each write
// goes to a temporary file renamed over energy_uj, so a read never sees a
// half-written value.
func raplCounters(ctx context.Context, t *testing.T, root string, cpuW, dramW float64) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	start := time.Now()
	write := func(dir string, w, s float64) {
		p := filepath.Join(root, dir, "energy_uj")
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, []byte(strconv.FormatUint(1000+uint64(w*s*1e6), 10)+"\n"), 0o644); err == nil {
			_ = os.Rename(tmp, p)
		}
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			s := time.Since(start).Seconds()
			write("intel-rapl:0", cpuW, s)
			write("intel-rapl:0:0", dramW, s)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return done
}

// The run: --telemetry sim --telemetry rapl, RAPL from a fake
// sysfs root. Both domains are archived; the GPU figures are the
// simulator's GPUs alone, the CPU/DRAM figure is RAPL's, and the tables
// name each boundary.
func TestRunSimAndRAPL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for several seconds")
	}
	root := fakePowercap(t, "1000")
	ctx, cancel := context.WithCancel(context.Background())
	done := raplCounters(ctx, t, root, 40, 8)
	defer func() { cancel(); <-done }()
	dir := filepath.Join(t.TempDir(), "run")
	t.Setenv("JOULEBENCH_RAPL_ROOT", root) // the environment names the root
	args := []string{"run", "benchmark-1.5", "--out", dir, "--telemetry", "sim", "--telemetry", "rapl", "--no-progress",
		"--set", "baseline=1s", "--set", "release_hold=1s", "--set", "release_max_wait=5s",
		"--set", "sample_interval=100ms", "--set", "request_count=12", "--set", "accept_unsteady=true", "--set", "warmup_requests=2", "--set", "max_tokens=32"}
	out, errOut, code := runCLI(t, args...)
	t.Logf("exit %d\n%s", code, errOut)
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, errOut)
	}
	if run.Meta.Telemetry.Source != "sim+rapl" {
		t.Errorf("telemetry source %q, want sim+rapl", run.Meta.Telemetry.Source)
	}
	domains := map[string]string{}
	for _, d := range run.Meta.Hardware.Devices {
		domains[d.ID] = d.DomainOrGPU()
	}
	if domains["sim0"] != "gpu" || domains["sim1"] != "gpu" || domains["cpu0"] != "cpu" || domains["dram0"] != "dram" {
		t.Fatalf("devices' domains %v", domains)
	}
	res, err := archive.ReadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	formal, ok := run.Meta.StageByName("formal")
	if !ok {
		t.Fatal("no formal stage")
	}
	// The GPU figure is the GPUs' energy alone: recompute it from the sim
	// rows of power.csv.
	var gpuRows, cpuRows []archive.PowerSample
	for _, p := range run.Power {
		if domains[p.Device] == "gpu" {
			gpuRows = append(gpuRows, p)
		} else {
			cpuRows = append(cpuRows, p)
		}
	}
	gpu, err := measure.NewPowerData(gpuRows)
	if err != nil {
		t.Fatal(err)
	}
	wantGPU, err := gpu.Energy(formal.Start, formal.End, "auto")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Values["formal_energy_j"]; got.Boundary != "gpu" || math.Abs(got.Value.(float64)-wantGPU) > 1e-9*wantGPU {
		t.Errorf("formal_energy_j = %+v, want %g J of the GPUs alone", got, wantGPU)
	}
	// CPU/DRAM: 48 W over the formal stage, over its tokens (the counters
	// advance every 5 ms: a few ms of 48 W at each end at most).
	tokens := res.Values["formal_output_tokens"].Value.(float64)
	want := 48 * (formal.End - formal.Start) / tokens
	got, ok := res.Values["cpu_dram_j_per_token"].Value.(float64)
	if !ok || res.Values["cpu_dram_j_per_token"].Boundary != "cpu+dram" || math.Abs(got-want) > 0.05*want {
		t.Errorf("cpu_dram_j_per_token = %+v, want about %g (48 W × %g s / %g tokens)", res.Values["cpu_dram_j_per_token"], want, formal.End-formal.Start, tokens)
	}
	if len(cpuRows) == 0 {
		t.Error("no CPU/DRAM rows in power.csv")
	}
	if n := res.Values["node_j_per_token"]; n.Value != nil || !strings.Contains(n.Note, "no node power") {
		t.Errorf("node_j_per_token = %+v, want not applicable", n)
	}
	// The results table printed by the run names the boundaries.
	for _, w := range []string{"boundary", "CPU/DRAM", "GPU"} {
		if !strings.Contains(out, w) {
			t.Errorf("results table lacks %q:\n%s", w, out)
		}
	}
}
