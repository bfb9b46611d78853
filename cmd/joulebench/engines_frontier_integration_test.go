package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A 3-point concurrency sweep (a campaign's load axis: concurrency 1, 2
// and 4) on the real llama-server with the tiny model: the sweep's
// comparison has the energy–latency frontier table, and compare's JSON
// frontier has the 3 load points of the one configuration, each with its
// TPOT p50 (J/token is not applicable: no power source on CI).
func TestEnginesLlamaCppFrontierSweep(t *testing.T) {
	bin := llamaServer(t)
	dir := t.TempDir()
	model := tinyModel(t, dir)
	src := fmt.Sprintf(`name: llama-frontier
profile: benchmark-1.5
out: out
matrix:
  engine: [{kind: llamacpp, args: [--engine-bin, %q, --model-file, %q, --max-model-len, "1024", --slots, "4"]}]
  load:
    - {name: c1, set: {mode: concurrency, concurrency: "1"}}
    - {name: c2, set: {mode: concurrency, concurrency: "2"}}
    - {name: c4, set: {mode: concurrency, concurrency: "4"}}
args: [--telemetry, none, --set, baseline=1s, --set, request_count=8, --set, window=2, --set, max_tokens=16,
  --set, warmup_requests=1, --set, release_hold=1s, --set, release_max_wait=5s]
`, bin, model)
	if err := os.WriteFile(filepath.Join(dir, "campaign.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "sweep", "campaign.yaml", "--joulebench-bin", os.Args[0])
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "JOULEBENCH_TEST_AS_MAIN=1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sweep: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), "Energy–latency frontier") {
		t.Errorf("no frontier table in the sweep's comparison:\n%s", b)
	}
	t.Logf("sweep:\n%s", b)
	pts := frontierOf(t, filepath.Join(dir, "out", "runs"))
	if len(pts) != 3 {
		t.Fatalf("%d frontier points, want 3: %+v", len(pts), pts)
	}
	seen := map[float64]bool{}
	for _, p := range pts {
		c, _ := p.Load["concurrency"].(float64)
		seen[c] = true
		if p.Engine != "llamacpp" || p.Latency == nil || *p.Latency <= 0 || p.LatencyMetric != "tpot_p50_ms" {
			t.Errorf("point %+v", p)
		}
	}
	if !seen[1] || !seen[2] || !seen[4] {
		t.Errorf("loads %v, want concurrency 1, 2 and 4", seen)
	}
}
