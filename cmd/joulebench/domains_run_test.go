package main

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
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
	var gpuRows, cpuRows []record.PowerSample
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
	// CPU/DRAM: the RAPL rows of power.csv over the formal stage (counter,
	// as "auto" picks for RAPL), over the formal tokens; and about 48 W
	// (the counters advance every 5 ms on a shared machine: loosely).
	cpu, err := measure.NewPowerData(cpuRows)
	if err != nil {
		t.Fatal(err)
	}
	cpuJ, err := cpu.Energy(formal.Start, formal.End, "counter")
	if err != nil {
		t.Fatal(err)
	}
	tokens := res.Values["formal_output_tokens"].Value.(float64)
	got, ok := res.Values["cpu_dram_j_per_token"].Value.(float64)
	if !ok || res.Values["cpu_dram_j_per_token"].Boundary != "cpu+dram" || math.Abs(got-cpuJ/tokens) > 1e-9*got {
		t.Errorf("cpu_dram_j_per_token = %+v, want %g (%g J of cpu0 + dram0 / %g tokens)", res.Values["cpu_dram_j_per_token"], cpuJ/tokens, cpuJ, tokens)
	}
	if w, _ := res.Values["avg_cpu_dram_power_w"].Value.(float64); w < 24 || w > 96 {
		t.Errorf("avg_cpu_dram_power_w = %v, want about 48", res.Values["avg_cpu_dram_power_w"].Value)
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

// A run measured by a BMC alone (--telemetry redfish, the simulated
// engine): the archive holds node power only, so the GPU figures are not
// applicable and the node's are given under node headings; the password
// (JOULEBENCH_REDFISH_PASSWORD) is written nowhere.
func TestRunNodePowerOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for several seconds")
	}
	const pw = "Redf1sh-s3cret"
	docs := map[string]string{
		"/redfish/v1/Chassis":                       `{"Members": [{"@odata.id": "/redfish/v1/Chassis/1U"}]}`,
		"/redfish/v1/Chassis/1U":                    `{"Id": "1U", "Manufacturer": "Contoso", "Model": "3500RX", "EnvironmentMetrics": {"@odata.id": "/redfish/v1/Chassis/1U/EnvironmentMetrics"}}`,
		"/redfish/v1/Chassis/1U/EnvironmentMetrics": `{"PowerWatts": {"Reading": 374, "DataSourceUri": "/redfish/v1/Chassis/1U/Sensors/TotalPower"}}`,
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "admin" || p != pw {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(doc))
	}))
	defer srv.Close()
	t.Setenv("JOULEBENCH_REDFISH_PASSWORD", pw)
	dir := filepath.Join(t.TempDir(), "run")
	out, errOut, code := runCLI(t, "run", "benchmark-1.5", "--out", dir, "--no-progress", "--telemetry", "redfish",
		"--redfish-url", srv.URL, "--redfish-user", "admin", "--redfish-insecure",
		"--set", "baseline=1s", "--set", "release_hold=1s", "--set", "release_max_wait=3s",
		"--set", "sample_interval=100ms", "--set", "request_count=12", "--set", "accept_unsteady=true", "--set", "warmup_requests=2", "--set", "max_tokens=32")
	t.Logf("exit %d\n%s", code, errOut)
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, errOut)
	}
	if devs := run.Meta.Hardware.Devices; len(devs) != 1 || devs[0].Domain != "node" || devs[0].ID != "redfish0" {
		t.Fatalf("devices %+v", devs)
	}
	res, err := archive.ReadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	// 374 W flat over the formal stage, over its tokens.
	formal, _ := run.Meta.StageByName("formal")
	tokens := res.Values["formal_output_tokens"].Value.(float64)
	want := 374 * (formal.End - formal.Start) / tokens
	if n := res.Values["node_j_per_token"]; n.Boundary != "node" || n.Value == nil || math.Abs(n.Value.(float64)-want) > 1e-6*want {
		t.Errorf("node_j_per_token = %+v, want %g (374 W × %g s / %g tokens)", n, want, formal.End-formal.Start, tokens)
	}
	for _, name := range []string{"avg_gpu_power_w", "formal_energy_j", "full_lifecycle_j_per_token"} {
		if v := res.Values[name]; v.Value != nil {
			t.Errorf("%s = %v from node power: want not applicable", name, v.Value)
		}
	}
	if v := res.Values["avg_node_power_w"]; v.Value == nil || math.Abs(v.Value.(float64)-374) > 1e-6 {
		t.Errorf("avg_node_power_w = %+v, want 374", v)
	}
	texts := map[string]string{"stdout": out, "stderr": errOut}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			texts[e.Name()] = string(b)
		}
	}
	for name, text := range texts {
		if strings.Contains(text, pw) {
			t.Errorf("%s holds the Redfish password", name)
		}
	}
	if !strings.Contains(texts["run.json"], "basic authentication, TLS NOT verified (--redfish-insecure)") {
		t.Errorf("run.json's telemetry note does not say how the BMC was read")
	}
}
