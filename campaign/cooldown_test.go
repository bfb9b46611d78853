package campaign

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// copyRun copies archive/testdata/sample-run-ok (baseline stage [1717405200,
// 1717405204]: gpu0 at 60 W and gpu1 at 50 W on every sample, so its idle
// level is 60 + 50 = 110 W) into the campaign's runs/name, run.json edited
// by the replacements (old, new pairs; "power.csv/old" edits power.csv).
func copyRun(t *testing.T, c *Campaign, name string, edits ...string) {
	t.Helper()
	from := "../archive/testdata/sample-run-ok"
	dir := filepath.Join(c.RunsDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"run.json", "power.csv", "requests.jsonl", "engine_metrics.jsonl", "profile.yaml"} {
		b, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for i := 0; i+1 < len(edits); i += 2 {
			if f == filepath.Base(edits[i]) || (!strings.Contains(edits[i], "/") && f == "run.json") {
				s = strings.Replace(s, strings.TrimPrefix(edits[i], f+"/"), edits[i+1], 1)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A point against a running server waits for the lowest idle baseline of
// the complete earlier points against the same server: 110 W (sample-run-ok)
// rather than 130 W (a copy whose gpu0 baseline samples read 80 W: 80 + 50),
// and a managed engine, another server or no earlier point gets nothing.
func TestCooldownArgs(t *testing.T) {
	c := &Campaign{Dir: t.TempDir()}
	point := Run{Config: Config{Args: []string{"--engine-url", "http://127.0.0.1:18000", "--set", "concurrency=2"}}}
	if got := c.cooldownArgs(point); got != nil {
		t.Errorf("no earlier point: %v", got)
	}
	external := []string{`"managed": true`, `"managed": false`}
	copyRun(t, c, "a", external...)
	hot := append(slices.Clone(external), "power.csv/1717405201,gpu0,60,", "1717405201,gpu0,80,", "power.csv/1717405200,gpu0,60,", "1717405200,gpu0,80,",
		"power.csv/1717405202,gpu0,60,", "1717405202,gpu0,80,", "power.csv/1717405203,gpu0,60,", "1717405203,gpu0,80,", "power.csv/1717405204,gpu0,60,", "1717405204,gpu0,80,")
	copyRun(t, c, "b", hot...)
	copyRun(t, c, "managed") // managed: true, same URL: not a running server's point
	if w, ok := c.serverIdleW("http://127.0.0.1:18000"); !ok || w != 110 {
		t.Errorf("idle %v %v, want 110 W", w, ok)
	}
	if got := c.cooldownArgs(point); !slices.Equal(got, []string{"--cooldown-idle-w", "110.000"}) {
		t.Errorf("args %v", got)
	}
	if got := c.cooldownArgs(Run{Config: Config{Args: []string{"--engine-url=http://127.0.0.1:19000"}}}); got != nil {
		t.Errorf("another server: %v", got)
	}
	if got := c.cooldownArgs(Run{Config: Config{Args: []string{"--engine", "vllm"}}}); got != nil {
		t.Errorf("managed engine: %v", got)
	}
}

// A search with steady_requests gives each point --steady-requests, so
// that run raises its request_count to what steady state needs.
func TestPointRunSteadyRequests(t *testing.T) {
	c := &Campaign{Dir: t.TempDir()}
	base := Run{Axes: map[string]string{"engine": "sim"}, Rep: 1, TP: 1, Config: Config{Args: []string{"--engine", "sim"}}}
	l := LoadPoint{Mode: "concurrency", Concurrency: 4}
	if got := c.PointRun(base, l).Config.Args; slices.Contains(got, "--steady-requests") {
		t.Errorf("without steady_requests: %v", got)
	}
	c.Search.SteadyRequests = true
	if got := c.PointRun(base, l).Config.Args; !slices.Contains(got, "--steady-requests") {
		t.Errorf("with steady_requests: %v", got)
	}
}
