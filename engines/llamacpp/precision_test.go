//go:build unix

package llamacpp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/internal/enginetest"
	"github.com/joulebench/joulebench/engines/llamacpp"
	"github.com/joulebench/joulebench/engines/process/processtest"
	"github.com/joulebench/joulebench/internal/gguf"
)

// ggufOfType writes a GGUF header with general.file_type ft (no tensors).
func ggufOfType(t *testing.T, name string, ft uint32) string {
	t.Helper()
	var b bytes.Buffer
	if err := gguf.Write(&b, []gguf.KV{{Key: "general.architecture", Value: "llama"}, {Key: "general.file_type", Value: ft}}, nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The precision asked for is the --model-file's GGUF file type; the one
// served, that of the file /props names as model_path. Here the server
// loaded a Q4_K_M file (15) while an F16 one (1) was asked for: the
// identity shows the difference, run.json records what was served.
func TestPrecisionFromGGUF(t *testing.T) {
	asked := ggufOfType(t, "tiny-f16.gguf", 1)
	served := ggufOfType(t, "tiny-q4.gguf", 15)
	props, _ := json.Marshal(map[string]any{"model_path": served, "build_info": "b1", "default_generation_settings": map[string]any{"n_ctx": 1024}})
	k, v := processtest.Fake{Routes: map[string]processtest.Route{
		"/health":    {},
		"/props":     {Body: string(props)},
		"/v1/models": {Body: processtest.File("testdata/models.json")},
	}}.Env()
	e, err := llamacpp.New(llamacpp.Config{Common: engines.Common{Bin: os.Args[0], ModelFile: asked, Model: "tiny", Env: map[string]string{k: v}}})
	if err != nil {
		t.Fatal(err)
	}
	if info := e.Info(); info.Precision != "fp16" || info.Quantization != "F16" || info.ModelFormat != "gguf" {
		t.Errorf("info before the identity: %+v", info)
	}
	if p := e.Expect().Precision; p.Label() != "fp16" {
		t.Errorf("expected precision %+v, want fp16", p)
	}
	enginetest.StartReady(t, e, 20*time.Second)
	id, err := e.Identity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if id.Precision.Label() != "q4_k_m" || id.Precision.From != "GGUF header" {
		t.Errorf("served precision %+v, want q4_k_m from the GGUF header", id.Precision)
	}
	if info := e.Info(); info.Precision != "q4_k_m" || info.Quantization != "Q4_K_M" || info.ModelFormat != "gguf" {
		t.Errorf("info after the identity: %+v", info)
	}
}
