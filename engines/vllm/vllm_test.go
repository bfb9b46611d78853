//go:build unix

package vllm_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/internal/enginetest"
	"github.com/joulebench/joulebench/engines/process/processtest"
	"github.com/joulebench/joulebench/engines/vllm"
)

func TestMain(m *testing.M) { enginetest.Main(m) }

// vLLM launched from its frozen command line (a fake serving recorded
// responses): argv, cache environment, readiness, identity, metrics, stop.
func TestLaunchIdentityMetrics(t *testing.T) {
	dir := t.TempDir()
	argvFile := filepath.Join(dir, "argv.json")
	k, v := processtest.Fake{
		ReadyAfter: 200 * time.Millisecond,
		ArgvFile:   argvFile,
		EnvKeys:    []string{"VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "HF_TOKEN"},
		Routes: map[string]processtest.Route{
			"/health":    {},
			"/version":   {Body: processtest.File("testdata/version.json")},
			"/v1/models": {Body: processtest.File("testdata/models.json")},
			"/metrics":   {Body: processtest.File("testdata/metrics.txt")},
		},
	}.Env()
	var log enginetest.Log
	e, err := vllm.New(vllm.Config{Common: engines.Common{
		Bin: os.Args[0], Model: "Qwen/Qwen2.5-0.5B-Instruct", TP: 2, MaxModelLen: 4096, Seed: 7,
		Revision: "main",
		Args:     []string{"--gpu-memory-utilization", "0.9"},
		Env:      map[string]string{k: v, "HF_TOKEN": "hf_secret"},
		Log:      &log,
	}, RunDir: filepath.Join(dir, "engine")})
	if err != nil {
		t.Fatal(err)
	}
	port := e.Config().Port
	wantArgv := []string{os.Args[0], "serve", "Qwen/Qwen2.5-0.5B-Instruct", "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--tensor-parallel-size", "2", "--seed", "7", "--served-model-name", "Qwen/Qwen2.5-0.5B-Instruct",
		"--max-model-len", "4096", "--revision", "main", "--gpu-memory-utilization", "0.9"}
	info := e.Info()
	if !slices.Equal(info.Command, wantArgv) {
		t.Errorf("command\n got %q\nwant %q", info.Command, wantArgv)
	}
	if info.Env["HF_TOKEN"] != "[redacted]" || info.Env["VLLM_CACHE_ROOT"] != filepath.Join(dir, "engine", "compile-cache", "vllm") {
		t.Errorf("env %v", info.Env)
	}
	enginetest.StartReady(t, e, 20*time.Second)
	ctx := context.Background()
	rec := enginetest.Launched(t, argvFile)
	if !slices.Equal(rec.Argv, wantArgv) || rec.Env["HF_TOKEN"] != "hf_secret" || rec.Env["TORCHINDUCTOR_CACHE_DIR"] == "" {
		t.Errorf("the process got argv %q env %v", rec.Argv, rec.Env)
	}
	id, err := e.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if id.Model != "Qwen/Qwen2.5-0.5B-Instruct" || id.EngineVersion != "0.8.5.post1" || id.ContextLength != 4096 || id.Raw["/version"] == nil {
		t.Errorf("identity %+v", id)
	}
	if exp := e.Expect(); exp.Model != id.Model || exp.ContextLength != 4096 || exp.TensorParallel != 0 || exp.Revision != "" {
		t.Errorf("expect %+v (vLLM reports neither revision nor TP)", exp)
	}
	got, _ := enginetest.Scrape(t, e.MetricsURL, vllm.DefaultFamilies())
	slices.Sort(got)
	if !slices.Equal(got, []string{"vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting"}) {
		t.Errorf("scraped %v", got)
	}
	at, err := e.Stop(ctx, 5*time.Second)
	if err != nil || at.IsZero() {
		t.Fatalf("stop: %v %v", at, err)
	}
	info = e.Info()
	if info.Version != "0.8.5.post1" || info.Extra["exit_status"] != "exit status 0" || info.TensorParallel != 2 {
		t.Errorf("info after stop %+v", info)
	}
	if st, err := os.Stat(filepath.Join(dir, "engine")); err != nil || !st.IsDir() {
		t.Errorf("engine run directory: %v", err)
	}
}

func TestNewNeedsModel(t *testing.T) {
	if _, err := vllm.New(vllm.Config{}); err == nil {
		t.Error("no model accepted")
	}
}
