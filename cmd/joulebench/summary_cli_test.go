package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// formal_j_per_token is reported whether or not steady state was reached
// (run-small's 4 requests never reach it), in benchmark-1.0 and 1.5.
func TestFormalJPerToken(t *testing.T) {
	for _, profile := range []string{"benchmark-1.0", "benchmark-1.5"} {
		out, errOut, _ := runCLI(t, "analyze", smallRun, "--profile", profile, "--format", "json")
		var res map[string]record.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%s: %v\n%s\n%s", profile, err, out, errOut)
		}
		// Formal stage [10, 20] s at 100 W: 1,000 J over 50+50+100+100 =
		// 300 output tokens = 3.3333 J/token.
		v, ok := res["formal_j_per_token"].Value.(float64)
		if !ok || v < 3.33333 || v > 3.33334 || res["formal_j_per_token"].Unit != "J/token" {
			t.Errorf("%s: formal_j_per_token = %+v, want 1000/300 = 3.3333 J/token", profile, res["formal_j_per_token"])
		}
		if s := res["steady_state_j_per_token"]; s.Value != nil {
			t.Errorf("%s: steady state reached on 4 requests? %+v", profile, s)
		}
	}
}

// analyze prints the summary by default (headline metrics, failed checks)
// and every value with --all; both fit 100 columns in the summary.
func TestAnalyzeSummaryAndAll(t *testing.T) {
	out, errOut, code := runCLI(t, "analyze", smallRun, "--set", "release_hold=5s")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) > 25 || !strings.Contains(out, "formal_j_per_token") || strings.Contains(out, "steady_window_start") || strings.Contains(out, "ttft_p90_ms") {
		t.Errorf("summary (%d lines):\n%s", len(lines), out)
	}
	for _, l := range lines {
		if len([]rune(l)) > 100 {
			t.Errorf("line over 100 columns: %q", l)
		}
	}
	all, _, _ := runCLI(t, "analyze", smallRun, "--set", "release_hold=5s", "--all")
	for _, want := range []string{"steady_window_start", "ttft_p90_ms", "formal_tokens", "first_token_times_exact"} {
		if !strings.Contains(all, want) {
			t.Errorf("--all lacks %s:\n%s", want, all)
		}
	}
}
