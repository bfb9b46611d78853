package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/telemetry"
)

// devicesCLI runs `joulebench devices args...`, registering the command
// when app.go does not (yet).
func devicesCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := newApp(&out, &errOut)
	if c, _, err := a.root.Find([]string{"devices"}); err != nil || c == a.root {
		a.root.AddCommand(a.devicesCmd())
	}
	err := a.execute(context.Background(), append([]string{"devices"}, args...))
	code := 0
	if err != nil {
		code = exitCode(err)
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

func TestDevicesDCGM(t *testing.T) {
	url := dcgmServer(t)
	out, errOut, code := devicesCLI(t, "--telemetry", "dcgm", "--dcgm-url", url)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"source: dcgm",
		"ID", "ENERGY", "POWER FIELD", "MEMORY",
		"node7/gpu0  gpu     NVIDIA H100 80GB HBM3  GPU-aaaa  counter",
		"node7/gpu1  gpu     NVIDIA H100 80GB HBM3  GPU-bbbb  power only (integrated)",
		"DCGM_FI_DEV_POWER_USAGE  yes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// --dcgm-url alone (auto) and JSON.
	out, _, code = devicesCLI(t, "--dcgm-url", url, "--format", "json")
	var rep telemetry.Listing
	if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("exit %d, output %s", code, out)
	}
	if rep.Source != "dcgm" || len(rep.Devices) != 2 || rep.Devices[1].Energy != "power" || rep.Devices[0].Host != "node7" || rep.Devices[0].Memory != "yes" {
		t.Errorf("json = %+v", rep)
	}
}

func TestDevicesSimAndReplayAndNone(t *testing.T) {
	out, _, code := devicesCLI(t, "--telemetry", "sim")
	if code != exitOK || !strings.Contains(out, "sim1") || !strings.Contains(out, "[SIMULATED]") || !strings.Contains(out, "counter") {
		t.Errorf("sim: exit %d\n%s", code, out)
	}
	out, _, code = devicesCLI(t, "--telemetry", "replay", "--replay", smallRun)
	if code != exitOK || !strings.Contains(out, "source: replay") || !strings.Contains(out, "gpu0") {
		t.Errorf("replay: exit %d\n%s", code, out)
	}
	out, _, code = devicesCLI(t, "--telemetry", "none")
	if code != exitOK || !strings.Contains(out, "nothing is measured") {
		t.Errorf("none: exit %d\n%s", code, out)
	}
	_, errOut, code := devicesCLI(t, "--telemetry", "bogus")
	if code != exitInvalid || !strings.Contains(errOut, "valid are") {
		t.Errorf("bogus: exit %d %s", code, errOut)
	}
	_, errOut, code = devicesCLI(t, "--format", "yaml")
	if code != exitInvalid {
		t.Errorf("--format yaml: exit %d %s", code, errOut)
	}
}

// On this machine: the NVIDIA GPUs, or (no driver, not macOS) why there is
// none, with exit status 1.
func TestDevicesAuto(t *testing.T) {
	out, errOut, code := devicesCLI(t)
	if code == exitOK {
		if !strings.Contains(out, "source: nvml") && !strings.Contains(out, "source: powermetrics") {
			t.Errorf("auto listed:\n%s", out)
		}
		return
	}
	if code != exitFailure {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"no GPU telemetry on this machine", "Why:", "nvml:", "powermetrics: macOS only", "--dcgm-url http://HOST:9400/metrics"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	_, errOut, code = devicesCLI(t, "--telemetry", "nvml")
	if code != exitFailure || !strings.Contains(errOut, "NVML unavailable") {
		t.Errorf("--telemetry nvml: exit %d %s", code, errOut)
	}
}

// devices lists the RAPL zones with their domains; it takes one source.
func TestDevicesRAPL(t *testing.T) {
	root := fakePowercap(t, "5")
	out, errOut, code := devicesCLI(t, "--telemetry", "rapl", "--rapl-root", root)
	if code != exitOK || !strings.Contains(out, "cpu0   cpu") || !strings.Contains(out, "dram0  dram") || !strings.Contains(out, "counter") {
		t.Errorf("rapl: exit %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = devicesCLI(t, "--telemetry", "sim", "--telemetry", "rapl", "--rapl-root", root)
	if code != exitInvalid || !strings.Contains(errOut, "devices lists one power source at a time") {
		t.Errorf("two sources: exit %d %s", code, errOut)
	}
}

// devices --sim lists the simulator's hardware presets with their sources
// and what a steady load gives on each (table), and as JSON the presets'
// constants.
func TestDevicesSimPresets(t *testing.T) {
	out, _, code := devicesCLI(t, "--sim")
	for _, want := range []string{"h100-sxm", "b200", "llama-3.1-70b", "mixtral-8x7b", "SIMULATED", "datasheet", "arXiv 2501.08219", "toy"} {
		if !strings.Contains(out, want) {
			t.Errorf("devices --sim lacks %q:\n%s", want, out)
		}
	}
	if code != exitOK {
		t.Errorf("exit %d", code)
	}
	out, _, code = devicesCLI(t, "--sim", "--format", "json")
	var got struct {
		GPUs []struct {
			Name         string
			MemBandwidth float64
			TDPW         float64
		} `json:"gpus"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitOK {
		t.Fatalf("json: exit %d, %v\n%s", code, err, out)
	}
	if len(got.GPUs) != 4 || got.GPUs[0].Name != "h100-sxm" || got.GPUs[0].MemBandwidth != 3.35e12 || got.GPUs[0].TDPW != 700 {
		t.Errorf("json gpus = %+v", got.GPUs)
	}
}
