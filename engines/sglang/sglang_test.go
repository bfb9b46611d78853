//go:build unix

package sglang_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/internal/enginetest"
	"github.com/joulebench/joulebench/engines/process/processtest"
	"github.com/joulebench/joulebench/engines/sglang"
)

func TestMain(m *testing.M) { enginetest.Main(m) }

func routes() map[string]processtest.Route {
	return map[string]processtest.Route{
		"/health":          {},
		"/health_generate": {},
		"/get_server_info": {Body: processtest.File("testdata/get_server_info.json")},
		"/get_model_info":  {Body: processtest.File("testdata/get_model_info.json")},
		"/v1/models":       {Body: processtest.File("testdata/models.json")},
		"/metrics":         {Body: processtest.File("testdata/metrics.txt")},
	}
}

// SGLang launched from its frozen command line (a fake serving recorded
// responses): argv, readiness with /health_generate, identity with the
// API key redacted, metrics, stop.
func TestLaunchIdentityMetrics(t *testing.T) {
	dir := t.TempDir()
	argvFile := filepath.Join(dir, "argv.json")
	k, v := processtest.Fake{ReadyAfter: 150 * time.Millisecond, ArgvFile: argvFile, Routes: routes()}.Env()
	e, err := sglang.New(sglang.Config{Common: engines.Common{
		Bin: os.Args[0], Model: "Qwen/Qwen2.5-0.5B-Instruct", TP: 1, MaxModelLen: 4096, Seed: 1,
		Revision: "7ae557604adf67be50417f59c2c2f167def9a775",
		Args:     []string{"--api-key", "sk-local-secret"},
		Env:      map[string]string{k: v},
	}, HealthGenerate: true, RunDir: filepath.Join(dir, "engine")})
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(e.Config().Port)
	want := []string{os.Args[0], "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen2.5-0.5B-Instruct", "--host", "127.0.0.1", "--port", port,
		"--tp", "1", "--random-seed", "1", "--enable-metrics", "--served-model-name", "Qwen/Qwen2.5-0.5B-Instruct",
		"--context-length", "4096", "--revision", "7ae557604adf67be50417f59c2c2f167def9a775", "--api-key", "sk-local-secret"}
	enginetest.StartReady(t, e, 20*time.Second)
	ctx := context.Background()
	rec := enginetest.Launched(t, argvFile)
	if !slices.Equal(rec.Argv, want) {
		t.Errorf("argv\n got %q\nwant %q", rec.Argv, want)
	}
	if cmd := strings.Join(e.Info().Command, " "); strings.Contains(cmd, "sk-local-secret") || !strings.Contains(cmd, "--api-key [redacted]") {
		t.Errorf("run.json command not redacted: %s", cmd)
	}
	id, err := e.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exp := e.Expect()
	if id.Model != exp.Model || id.Revision != exp.Revision || id.ContextLength != exp.ContextLength || id.TensorParallel != exp.TensorParallel || id.EngineVersion != "0.4.6.post4" {
		t.Errorf("identity %+v, expect %+v", id, exp)
	}
	si := id.Raw["/get_server_info"].(map[string]any)
	if si["api_key"] != "[redacted]" {
		t.Errorf("server info api_key = %v", si["api_key"])
	}
	names, _ := enginetest.Scrape(t, e.MetricsURL, sglang.DefaultFamilies())
	if !slices.Equal(names, []string{"sglang:num_queue_reqs", "sglang:num_running_reqs", "sglang:token_usage"}) {
		t.Errorf("scraped %v", names)
	}
	if _, err := e.Stop(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// Readiness waits for /health_generate when asked.
func TestHealthGenerateGates(t *testing.T) {
	r := routes()
	r["/health_generate"] = processtest.Route{Status: 503}
	k, v := processtest.Fake{Routes: r}.Env()
	e, err := sglang.New(sglang.Config{Common: engines.Common{Bin: os.Args[0], Model: "m", Env: map[string]string{k: v}}, HealthGenerate: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer e.Stop(ctx, 2*time.Second)
	err = e.WaitReady(ctx, time.Second)
	if err == nil || !strings.Contains(err.Error(), "/health") {
		t.Fatalf("err = %v", err)
	}
}

// TestHealthGenerateSetting: the descriptor reads its own setting,
// health-generate, from the options' settings.
func TestHealthGenerateSetting(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  bool
	}{{"true", true}, {"false", false}, {"", false}} {
		e, err := sglang.Descriptor().Start(engines.Options{Common: engines.Common{Bin: os.Args[0], Model: "m"},
			Settings: engines.Settings{sglang.FlagHealthGenerate: tc.value}})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Info().Extra["health_generate"]; got != tc.want {
			t.Errorf("health-generate %q: recorded %v, want %v", tc.value, got, tc.want)
		}
	}
}
