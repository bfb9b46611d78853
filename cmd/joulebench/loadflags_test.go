package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestMapLoadFlags: each of vLLM bench serve's load flags becomes its
// profile parameter; the mode follows the rate unless --set gives it.
func TestMapLoadFlags(t *testing.T) {
	all := func(string) bool { return true }
	for _, tc := range []struct {
		name string
		sets []string
		v    loadFlagValues
		want []string
	}{
		{"rate is poisson", nil, loadFlagValues{rate: 4, rateSet: true}, []string{"rate=4", "mode=poisson"}},
		{"rate and burstiness is gamma", nil, loadFlagValues{rate: 4, rateSet: true, burstiness: 0.5, burstSet: true},
			[]string{"rate=4", "mode=gamma", "burstiness=0.5"}},
		{"burstiness 1 is poisson", nil, loadFlagValues{rate: 4, rateSet: true, burstiness: 1, burstSet: true},
			[]string{"rate=4", "mode=poisson", "burstiness=1"}},
		{"a mode given wins", []string{"mode=constant"}, loadFlagValues{rate: 2.5, rateSet: true}, []string{"mode=constant", "rate=2.5"}},
		{"inf is unlimited", nil, loadFlagValues{rate: math.Inf(1), rateSet: true}, []string{"mode=unlimited"}},
		{"max concurrency alone", nil, loadFlagValues{maxConcurrency: 16, maxSet: true}, []string{"max_concurrency=16"}},
		{"num prompts", []string{"x=1"}, loadFlagValues{numPrompts: 200, numSet: true}, []string{"x=1", "request_count=200"}},
		{"the same --set", []string{"rate=4"}, loadFlagValues{rate: 4, rateSet: true}, []string{"rate=4", "mode=poisson"}},
	} {
		got, err := mapLoadFlags(tc.sets, tc.v, "p", all)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name     string
		sets     []string
		v        loadFlagValues
		declared []string
		want     string
	}{
		{"no such parameter", nil, loadFlagValues{rate: 4, rateSet: true}, []string{"mode"},
			"--request-rate: profile p has no parameter rate, so it cannot take this flag"},
		{"no max_concurrency", nil, loadFlagValues{maxConcurrency: 4, maxSet: true}, []string{"rate"},
			"--max-concurrency: profile p has no parameter max_concurrency"},
		{"no request_count", nil, loadFlagValues{numPrompts: 4, numSet: true}, nil, "--num-prompts: profile p has no parameter request_count"},
		{"disagrees with --set", []string{"rate=5"}, loadFlagValues{rate: 4, rateSet: true}, []string{"rate", "mode"},
			"--request-rate 4 and --set rate=5 disagree: give one"},
		{"zero rate", nil, loadFlagValues{rate: 0, rateSet: true}, []string{"rate"}, "--request-rate 0: must be > 0"},
		{"burstiness alone", nil, loadFlagValues{burstiness: 0.5, burstSet: true}, []string{"burstiness"}, "--burstiness applies to a finite --request-rate"},
		{"burstiness 0", nil, loadFlagValues{rate: 1, rateSet: true, burstiness: 0, burstSet: true}, []string{"rate", "burstiness"}, "--burstiness 0: must be a finite number > 0"},
		{"max concurrency 0", nil, loadFlagValues{maxSet: true}, []string{"max_concurrency"}, "--max-concurrency 0: at least 1"},
		{"num prompts 0", nil, loadFlagValues{numSet: true}, []string{"request_count"}, "--num-prompts 0: at least 1"},
	} {
		declared := func(p string) bool {
			for _, d := range tc.declared {
				if d == p {
					return true
				}
			}
			return false
		}
		_, err := mapLoadFlags(tc.sets, tc.v, "p", declared)
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitCode(err) != exitInvalid {
			t.Errorf("%s: error %v (exit %d), want %q (exit %d)", tc.name, err, exitCode(err), tc.want, exitInvalid)
		}
	}
}

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
