package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// A profile without the parameter refuses the flag before anything runs.
func TestLoadFlagRefusedByProfile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	_, errOut, code := runCLI(t, "run", "asiai", "--out", out, "--no-progress", "--request-rate", "4")
	if code != exitInvalid || !strings.Contains(errOut, "--request-rate: profile asiai has no parameter rate") {
		t.Fatalf("exit %d, want %d with the flag named\n%s", code, exitInvalid, errOut)
	}
}

// vLLM's flags run one load point on the simulator, and run.json records
// its shape with only the parameters it uses; --set mode=concurrency is
// another.
func TestLoadFlagsRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"vllm flags", []string{"--request-rate", "200", "--burstiness", "0.5", "--max-concurrency", "4", "--num-prompts", "12"},
			`{"mode":"gamma","rate":200,"burstiness":0.5,"max_concurrency":4}`},
		{"concurrency", []string{"--set", "mode=concurrency", "--set", "concurrency=3", "--set", "request_count=12"},
			`{"mode":"concurrency","concurrency":3}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			args := append([]string{"run", "benchmark-1.0", "--out", out, "--no-progress", "--telemetry", "none",
				"--set", "baseline=1s", "--set", "warmup_requests=1", "--set", "accept_unsteady=true", "--set", "max_tokens=8"}, tc.args...)
			_, errOut, code := runCLI(t, args...)
			if code != exitOK && code != exitChecks {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			run := loadRun(t, out)
			if b, _ := json.Marshal(run.Meta.Load); string(b) != tc.want {
				t.Errorf("load %s, want %s", b, tc.want)
			}
			formal := 0
			for _, r := range run.Requests {
				if r.Phase == "formal" && r.OK {
					formal++
				}
			}
			if formal != 12 {
				t.Errorf("%d formal requests succeeded, want 12", formal)
			}
		})
	}
}
