//go:build unix

package sglang_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/internal/enginetest"
	"github.com/joulebench/joulebench/engines/process/processtest"
	"github.com/joulebench/joulebench/engines/sglang"
)

// SGLang reports its server arguments: quantization "fp8" wins over the
// model directory's config.json (bfloat16), dtype "auto" leaves the dtype
// to it.
func TestPrecisionFromServerInfo(t *testing.T) {
	model := t.TempDir()
	if err := os.WriteFile(filepath.Join(model, "config.json"), []byte(`{"torch_dtype":"bfloat16"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"model_path": model, "tp_size": 1, "version": "0.4.6", "dtype": "auto", "quantization": "fp8"})
	modelInfo, _ := json.Marshal(map[string]any{"model_path": model})
	r := routes()
	r["/get_server_info"] = processtest.Route{Body: string(info)}
	r["/get_model_info"] = processtest.Route{Body: string(modelInfo)}
	k, v := processtest.Fake{Routes: r}.Env()
	e, err := sglang.New(sglang.Config{Common: engines.Common{Bin: os.Args[0], Model: model, Args: []string{"--quantization", "fp8"}, Env: map[string]string{k: v}}})
	if err != nil {
		t.Fatal(err)
	}
	if p := e.Expect().Precision; p.Label() != "fp8" {
		t.Errorf("expected %+v, want fp8", p)
	}
	enginetest.StartReady(t, e, 20*time.Second)
	id, err := e.Identity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p := id.Precision; p.Label() != "fp8" || p.DType != "bf16" || p.Quantization() != "fp8" {
		t.Errorf("served %+v, label %q", p, p.Label())
	}
	if info := e.Info(); info.Precision != "fp8" || info.Quantization != "fp8" {
		t.Errorf("info %+v", info)
	}
}
