package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/telemetry/gpusettings"
)

// run --gpu-power-limit out of the simulated GPUs' range (100-450 W):
// exit 2 naming the range, no run directory; a journal left by a killed
// run stops every run (exit 2, naming it) until `joulebench restore`,
// which without NVML says so and keeps the journal; with no journal,
// restore has nothing to do.
func TestRunGPUSettingsCLI(t *testing.T) {
	state := t.TempDir()
	t.Setenv("JOULEBENCH_STATE_DIR", state)
	out := filepath.Join(t.TempDir(), "run")
	_, stderr, code := runCLI(t, "run", "benchmark-1.0", "--gpu-power-limit", "1000", "--out", out, "--no-progress")
	if code != 2 || !strings.Contains(stderr, "power limit 1000 W is outside its allowed range 100-450 W") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a run directory was created")
	}
	if stdout, _, code := runCLI(t, "restore"); code != 0 || !strings.Contains(stdout, "no GPU settings to restore") {
		t.Errorf("restore with no journal: exit %d, %q", code, stdout)
	}

	journal := filepath.Join(state, gpusettings.JournalPrefix+"GPU-x"+gpusettings.JournalSuffix)
	if err := gpusettings.WriteJournal(journal, &gpusettings.Journal{RunID: "killed-run", Controller: "nvml",
		Devices: []gpusettings.JournalDevice{{Index: 0, UUID: "GPU-x", PreviousPowerLimitW: 700}}}); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCLI(t, "run", "benchmark-1.0", "--out", out, "--no-progress")
	if code != 2 || !strings.Contains(stderr, "killed-run") || !strings.Contains(stderr, journal) || !strings.Contains(stderr, "joulebench restore") {
		t.Fatalf("run with a journal outstanding: exit %d, stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a run directory was created")
	}
	if _, stderr, code := runCLI(t, "restore"); code == 0 || !strings.Contains(stderr, "restore: nvml") {
		t.Errorf("restore without NVML: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(journal); err != nil {
		t.Errorf("journal gone after a failed restore: %v", err)
	}
}
