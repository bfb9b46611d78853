package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/runner"
	"github.com/joulebench/joulebench/telemetry"
	nvmltel "github.com/joulebench/joulebench/telemetry/nvml"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
	"github.com/joulebench/joulebench/workflow"
)

// dcgmText is a small dcgm-exporter exposition: two H100s on host node7,
// gpu1 without the energy counter series.
const dcgmText = `# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node7"} 101.5
DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node7"} 99.0
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node7"} 123456789
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node7"} 1024
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node7"} 1024
`

// dcgmServer serves dcgmText on 127.0.0.1 (httptest's default) and returns
// its /metrics URL.
func dcgmServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(dcgmText))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// telemetryApp is an app whose viper holds the telemetry flags parsed from
// args; the log goes to logBuf.
func telemetryApp(t *testing.T, logBuf *bytes.Buffer, args ...string) *app {
	t.Helper()
	a := newApp(&bytes.Buffer{}, &bytes.Buffer{})
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	telemetryFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := a.v.BindPFlags(fs); err != nil {
		t.Fatal(err)
	}
	a.log = zerolog.New(logBuf)
	return a
}

type offLoad struct{}

func (offLoad) Activity() simtel.Activity { return simtel.Activity{Phase: simtel.PhaseOff} }

// engineSetup is the engine of a run as the power source sees it (its
// simulated GPU).
type engineSetup = runner.EngineSetup

func simSetup() *engineSetup {
	return &engineSetup{Kind: "sim", Simulated: true, SimLoad: offLoad{}, SimTelemetry: simtel.DefaultConfig()}
}

func realSetup() *engineSetup { return &engineSetup{Kind: "vllm"} }

// setupTelemetry opens the power source of a run of es's engine as the
// run command's hook does (runner.Telemetry.Open).
func (a *app) setupTelemetry(es *engineSetup, clock *workflow.Clock) (telemetry.Source, record.TelemetryInfo, error) {
	env := runner.TelemetryEnv{Clock: clock}
	if es.SimLoad != nil {
		env.Sim = &runner.SimGPU{Load: es.SimLoad, Config: es.SimTelemetry}
	}
	return a.telemetry().Open(context.Background(), env)
}

// fakePowercap writes a powercap sysfs tree with one package (cpu0) and
// its dram zone (dram0), both counters at uj, and returns its root. (Made
// at test time: a ':' in a file name is not allowed in a Go module.)
func fakePowercap(t *testing.T, uj string) string {
	t.Helper()
	root := t.TempDir()
	for dir, name := range map[string]string{"intel-rapl:0": "package-0", "intel-rapl:0:0": "dram"} {
		d := filepath.Join(root, dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for f, v := range map[string]string{"name": name, "max_energy_range_uj": "262143328850", "energy_uj": uj} {
			if err := os.WriteFile(filepath.Join(d, f), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

func TestSetupTelemetryChoices(t *testing.T) {
	url := dcgmServer(t)
	raplFixture := fakePowercap(t, "1000")
	fakeIPMI, _ := filepath.Abs("../../telemetry/ipmi/testdata/fake-ipmitool")
	ipmiOut, _ := filepath.Abs("../../telemetry/ipmi/testdata/activated.txt")
	t.Setenv("FAKE_IPMITOOL_OUT", ipmiOut)
	for _, tc := range []struct {
		name    string
		es      *engineSetup
		args    []string
		source  string // "" : an error is expected
		sim     bool
		note    []string
		errCode int
		errMsg  string
	}{
		{name: "auto with the simulator", es: simSetup(), source: "sim", sim: true,
			note: []string{"auto (the simulated engine runs)", "sim0 counter, sim1 counter"}},
		{name: "sim", es: simSetup(), args: []string{"--telemetry", "sim"}, source: "sim", sim: true},
		{name: "sim needs the simulated engine", es: realSetup(), args: []string{"--telemetry", "sim"}, errCode: exitInvalid, errMsg: "--engine sim"},
		{name: "none", es: realSetup(), args: []string{"--telemetry", "none"}, source: "none", note: []string{"not applicable"}},
		{name: "dcgm", es: realSetup(), args: []string{"--telemetry", "dcgm", "--dcgm-url", url}, source: "dcgm",
			note: []string{url, "node7/gpu0 counter, node7/gpu1 power"}},
		{name: "auto with --dcgm-url, even with the simulator", es: simSetup(), args: []string{"--dcgm-url", url}, source: "dcgm",
			note: []string{"auto (--dcgm-url given)"}},
		{name: "replay", es: realSetup(), args: []string{"--telemetry", "replay", "--replay", smallRun}, source: "replay", sim: true,
			note: []string{"REPLAYED", "run-small", "gpu0 counter"}},
		{name: "dcgm without url", es: realSetup(), args: []string{"--telemetry", "dcgm"}, errCode: exitInvalid, errMsg: "needs at least one --dcgm-url"},
		{name: "replay without file", es: realSetup(), args: []string{"--telemetry", "replay"}, errCode: exitInvalid, errMsg: "--replay FILE"},
		{name: "unknown", es: realSetup(), args: []string{"--telemetry", "bogus"}, errCode: exitInvalid, errMsg: "valid are auto, nvml, powermetrics, dcgm, sim, replay, none, prometheus, rapl"},
		{name: "sim and rapl side by side", es: simSetup(), args: []string{"--telemetry", "sim", "--telemetry", "rapl", "--rapl-root", raplFixture}, source: "sim+rapl", sim: true,
			note: []string{"side by side", "sim: simulated GPU power", "rapl: RAPL energy counters", "cpu0 counter, dram0 counter"}},
		{name: "rapl from JOULEBENCH_TELEMETRY's list", es: simSetup(), args: []string{"--telemetry", "sim,rapl", "--rapl-root", raplFixture}, source: "sim+rapl", sim: true},
		{name: "rapl without zones", es: realSetup(), args: []string{"--telemetry", "rapl", "--rapl-root", "testdata"}, errCode: exitInvalid, errMsg: "no intel-rapl:* zone under testdata"},
		{name: "rapl twice", es: realSetup(), args: []string{"--telemetry", "rapl", "--telemetry", "rapl"}, errCode: exitInvalid, errMsg: "--telemetry rapl is given twice"},
		{name: "none with another", es: realSetup(), args: []string{"--telemetry", "none", "--telemetry", "rapl"}, errCode: exitInvalid, errMsg: "--telemetry none cannot be combined"},
		{name: "redfish without url", es: realSetup(), args: []string{"--telemetry", "redfish"}, errCode: exitInvalid, errMsg: "--telemetry redfish needs --redfish-url"},
		{name: "redfish flag without redfish", es: realSetup(), args: []string{"--telemetry", "none", "--redfish-insecure"}, errCode: exitInvalid, errMsg: "--redfish-* flags are for --telemetry redfish"},
		{name: "redfish session without user", es: realSetup(), args: []string{"--telemetry", "redfish", "--redfish-url", "https://127.0.0.1:1", "--redfish-session"}, errCode: exitInvalid, errMsg: "--redfish-session needs --redfish-user"},
		{name: "ipmi-arg without ipmi", es: realSetup(), args: []string{"--telemetry", "none", "--ipmi-arg=-E"}, errCode: exitInvalid, errMsg: "--ipmitool and --ipmi-arg are for --telemetry ipmi"},
		{name: "sim and ipmi", es: simSetup(), args: []string{"--telemetry", "sim", "--telemetry", "ipmi", "--ipmitool", fakeIPMI}, source: "sim+ipmi", sim: true,
			note: []string{"ipmi: IPMI DCMI", "whole-node power (domain node)", "ipmi0 power"}},
		{name: "rapl-root without rapl", es: realSetup(), args: []string{"--telemetry", "none", "--rapl-root", "x"}, errCode: exitInvalid, errMsg: "--rapl-root is for --telemetry rapl"},
		{name: "gpus with dcgm", es: realSetup(), args: []string{"--telemetry", "dcgm", "--dcgm-url", url, "--gpus", "0"}, errCode: exitInvalid, errMsg: "--gpus selects NVML GPUs"},
		{name: "bad gpus", es: realSetup(), args: []string{"--gpus", "0,zero"}, errCode: exitInvalid, errMsg: "neither an index nor a UUID"},
		{name: "dcgm-url with nvml", es: realSetup(), args: []string{"--telemetry", "nvml", "--dcgm-url", url}, errCode: exitInvalid, errMsg: "--dcgm-url is for --telemetry dcgm"},
		{name: "unreachable dcgm", es: realSetup(), args: []string{"--telemetry", "dcgm", "--dcgm-url", "http://127.0.0.1:1/metrics"}, errCode: exitInvalid, errMsg: "127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logBuf bytes.Buffer
			a := telemetryApp(t, &logBuf, tc.args...)
			src, info, err := a.setupTelemetry(tc.es, workflow.NewClock())
			if src != nil {
				defer src.Close()
			}
			if tc.source == "" {
				if err == nil || exitCode(err) != tc.errCode || !strings.Contains(err.Error(), tc.errMsg) {
					t.Fatalf("err = %v (code %d), want code %d with %q", err, exitCode(err), tc.errCode, tc.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.Source != tc.source || info.Simulated != tc.sim {
				t.Errorf("info = %+v, want source %s simulated %v", info, tc.source, tc.sim)
			}
			for _, n := range tc.note {
				if !strings.Contains(info.Note, n) {
					t.Errorf("note %q lacks %q", info.Note, n)
				}
			}
			if (src == nil) != (tc.source == "none") {
				t.Errorf("source = %v for %s", src, tc.source)
			}
		})
	}
}

// auto without the simulator: NVML when there is a GPU; on a machine
// without one (and not macOS), none with a warning that says why.
func TestSetupTelemetryAutoOnThisMachine(t *testing.T) {
	var logBuf bytes.Buffer
	a := telemetryApp(t, &logBuf)
	src, info, err := a.setupTelemetry(realSetup(), workflow.NewClock())
	if err != nil {
		t.Fatal(err)
	}
	if src != nil {
		defer src.Close()
		if info.Source != "nvml" && info.Source != "powermetrics" {
			t.Errorf("auto picked %+v", info)
		}
		return
	}
	for _, want := range []string{"no power source found", "nvml:", "powermetrics: macOS only", "--telemetry dcgm"} {
		if !strings.Contains(info.Note, want) || !strings.Contains(logBuf.String(), want) {
			t.Errorf("note %q / log %q lack %q", info.Note, logBuf.String(), want)
		}
	}
	if info.Source != "none" {
		t.Errorf("source = %q", info.Source)
	}
	// Asked again (the next engine of an asiai run, its cooldown): the
	// note says it again, the log does not (it said it three times).
	for range 2 {
		if _, info2, err := a.setupTelemetry(realSetup(), workflow.NewClock()); err != nil || !strings.Contains(info2.Note, "no power source found") {
			t.Errorf("second setup: %+v, %v", info2, err)
		}
	}
	if n := strings.Count(logBuf.String(), "no power source found"); n != 1 {
		t.Errorf("the warning was logged %d times, want once: %s", n, logBuf.String())
	}
	// Asking for NVML explicitly is an error that says what to do.
	a = telemetryApp(t, &logBuf, "--telemetry", "nvml")
	_, _, err = a.setupTelemetry(realSetup(), workflow.NewClock())
	if err == nil || !errors.Is(err, nvmltel.ErrUnavailable) || exitCode(err) != exitInvalid || !strings.Contains(err.Error(), "--telemetry none") {
		t.Errorf("--telemetry nvml: %v", err)
	}
}

// The replay source re-stamps the recording on the run clock.
func TestSetupTelemetryReplayReads(t *testing.T) {
	var logBuf bytes.Buffer
	a := telemetryApp(t, &logBuf, "--telemetry", "replay", "--replay", filepath.Join(smallRun, archive.PowerFile))
	src, _, err := a.setupTelemetry(realSetup(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	rs, err := src.Read(context.Background())
	if err != nil || len(rs) != 1 || rs[0].Device != "gpu0" || rs[0].PowerW != 100 {
		t.Fatalf("first read = %+v, %v", rs, err)
	}
	if rs[0].T < telemetry.WallClock()-60 {
		t.Errorf("reading not re-stamped on the run clock: t=%v", rs[0].T)
	}
}

// A run measured through dcgm-exporter: run.json says which source and
// each device's method.
func TestRunWithDCGMTelemetry(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for several seconds")
	}
	url := dcgmServer(t)
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"run", "benchmark-1.5", "--out", dir, "--telemetry", "dcgm", "--dcgm-url", url, "--no-progress",
		"--set", "baseline=1s", "--set", "release_hold=1s", "--set", "release_max_wait=5s",
		"--set", "sample_interval=100ms", "--set", "request_count=12", "--set", "accept_unsteady=true", "--set", "warmup_requests=2", "--set", "max_tokens=32"}
	_, errOut, code := runCLI(t, args...)
	t.Logf("exit %d\n%s", code, errOut)
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, errOut)
	}
	if run.Meta.Telemetry.Source != "dcgm" || !strings.Contains(run.Meta.Telemetry.Note, "node7/gpu1 power") {
		t.Errorf("telemetry = %+v", run.Meta.Telemetry)
	}
	devs := run.Meta.Hardware.Devices
	if len(devs) != 2 || devs[0].ID != "node7/gpu0" || devs[0].Method != "counter" || devs[0].Host != "node7" || devs[1].Method != "power" {
		t.Errorf("hardware devices = %+v", devs)
	}
	n := 0
	for _, p := range run.Power {
		if p.Device == "node7/gpu0" && p.HasEnergy && p.EnergyJ == 123456.789 && p.MemUsedBytes == 1<<30 {
			n++
		}
	}
	if n == 0 {
		t.Errorf("no node7/gpu0 rows with the scraped values in power.csv (%d rows)", len(run.Power))
	}
}
