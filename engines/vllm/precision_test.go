//go:build unix

package vllm_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/internal/enginetest"
	"github.com/joulebench/joulebench/engines/process/processtest"
	"github.com/joulebench/joulebench/engines/vllm"
)

// vLLM does not report its dtype: the precision is its --dtype (here
// float16, given with --engine-arg) over the model directory's
// config.json (bfloat16), asked and served alike; the format is the
// directory's safetensors.
func TestPrecisionFromArgsAndConfig(t *testing.T) {
	model := t.TempDir()
	if err := os.WriteFile(filepath.Join(model, "config.json"), []byte(`{"torch_dtype":"bfloat16"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(model, "model.safetensors"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	k, v := processtest.Fake{Routes: map[string]processtest.Route{
		"/health":    {},
		"/version":   {Body: `{"version":"0.9.1"}`},
		"/v1/models": {Body: `{"data":[{"id":"m","root":"` + model + `","max_model_len":4096}]}`},
	}}.Env()
	e, err := vllm.New(vllm.Config{Common: engines.Common{Bin: os.Args[0], Model: model, Args: []string{"--dtype", "float16"}, Env: map[string]string{k: v}}, ServedName: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if p := e.Expect().Precision; p.Label() != "fp16" || p.From != "engine arguments" {
		t.Errorf("expected %+v, want fp16 from the engine arguments", p)
	}
	if info := e.Info(); info.Precision != "fp16" || info.ModelFormat != "safetensors" {
		t.Errorf("info before the identity: %+v", info)
	}
	enginetest.StartReady(t, e, 20*time.Second)
	id, err := e.Identity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p := id.Precision; p.Label() != "fp16" || p.From != "engine arguments and config.json" || p.Format != "safetensors" {
		t.Errorf("served %+v", p)
	}
	// An already running vLLM: the root /v1/models names, config.json only.
	if p := engines.LocalModelPrecision(model); p.Label() != "bf16" {
		t.Errorf("root's precision %+v", p)
	}
}
