package engines_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/internal/gguf"
)

func TestNormalizePrecision(t *testing.T) {
	for in, want := range map[string]string{
		"bfloat16": "bf16", "BF16": "bf16", "torch.bfloat16": "bf16",
		"float16": "fp16", "half": "fp16", "F16": "fp16", "fp16": "fp16",
		"float32": "fp32", "float": "fp32", "F32": "fp32",
		"auto": "", "none": "", "": "", " ": "",
		"fp8": "fp8", "AWQ": "awq", "Q4_K_M": "q4_k_m",
	} {
		if got := engines.NormalizePrecision(in); got != want {
			t.Errorf("NormalizePrecision(%q) = %q, want %q", in, got, want)
		}
	}
}

// modelDir writes a model directory: config.json and the weight files.
func modelDir(t *testing.T, config string, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	if config != "" {
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// config.json's torch_dtype (or dtype, its newer name) and
// quantization_config, hand-written as Hugging Face writes them.
func TestHFConfigPrecision(t *testing.T) {
	for _, c := range []struct {
		name, config  string
		files         []string
		label, quant  string
		format, error string
	}{
		{"bf16 safetensors", `{"architectures":["Qwen2ForCausalLM"],"torch_dtype":"bfloat16"}`, []string{"model.safetensors"}, "bf16", "bf16", "safetensors", ""},
		{"newer dtype key", `{"dtype":"float16"}`, []string{"pytorch_model.bin"}, "fp16", "fp16", "pytorch", ""},
		{"awq 4-bit", `{"torch_dtype":"float16","quantization_config":{"quant_method":"awq","bits":4,"group_size":128}}`, []string{"model.safetensors"}, "awq", "awq 4-bit", "safetensors", ""},
		{"fp8 without bits", `{"torch_dtype":"bfloat16","quantization_config":{"quant_method":"fp8","fmt":"e4m3"}}`, nil, "fp8", "fp8", "", ""},
		{"a config without its method", `{"torch_dtype":"bfloat16","quantization_config":{"bits":8}}`, nil, "quantized", "quantized 8-bit", "", ""},
		{"malformed", `{"torch_dtype":`, nil, "", "", "", "config.json: unexpected end of JSON input"},
		{"missing", "", nil, "", "", "", "config.json: no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := modelDir(t, c.config, c.files...)
			p, err := engines.HFConfigPrecision(dir)
			if c.error != "" {
				if err == nil || !strings.Contains(err.Error(), c.error) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("err %v, want one naming %s with %q", err, dir, c.error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Label() != c.label || p.Quantization() != c.quant || p.Format != c.format || p.From != "config.json" {
				t.Errorf("%+v: label %q quantization %q, want %q %q format %q", p, p.Label(), p.Quantization(), c.label, c.quant, c.format)
			}
		})
	}
}

// vLLM's and SGLang's --dtype and --quantization win over config.json;
// auto leaves it to config.json.
func TestResolvePrecision(t *testing.T) {
	bf16 := modelDir(t, `{"torch_dtype":"bfloat16"}`, "model.safetensors")
	for _, c := range []struct {
		name  string
		args  []string
		dir   string
		label string
		from  string
	}{
		{"config only", nil, bf16, "bf16", "config.json"},
		{"--dtype over config", []string{"--dtype", "float16"}, bf16, "fp16", "engine arguments and config.json"},
		{"--dtype=auto: config", []string{"--dtype=auto"}, bf16, "bf16", "config.json"},
		{"--quantization over config", []string{"--max-num-seqs", "8", "--quantization", "fp8"}, bf16, "fp8", "engine arguments and config.json"},
		{"the last one wins", []string{"--dtype", "half", "--dtype", "float32"}, "", "fp32", "engine arguments"},
		{"no directory, no options", nil, "", "", "engine arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := engines.ResolvePrecision(c.args, c.dir)
			if p.Label() != c.label || p.From != c.from {
				t.Errorf("%+v: label %q from %q, want %q from %q", p, p.Label(), p.From, c.label, c.from)
			}
		})
	}
	if p := engines.LocalModelPrecision("Qwen/Qwen3-8B"); p.Label() != "" {
		t.Errorf("a Hub id that is no local directory: %+v", p)
	}
	if p := engines.LocalModelPrecision(bf16); p.Label() != "bf16" || p.Format != "safetensors" {
		t.Errorf("local directory: %+v", p)
	}
}

// writeGGUF writes a GGUF file whose header holds kvs (no tensors).
func writeGGUF(t *testing.T, kvs ...gguf.KV) string {
	t.Helper()
	var b bytes.Buffer
	if err := gguf.Write(&b, append([]gguf.KV{{Key: "general.architecture", Value: "llama"}}, kvs...), nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A GGUF file's precision is its header's general.file_type (llama.cpp's
// llama_ftype: 1 F16, 15 Q4_K_M, 32 BF16); F16/BF16/F32 are dtypes,
// anything else a quantization.
func TestGGUFPrecision(t *testing.T) {
	for _, c := range []struct {
		fileType     any
		label, quant string
	}{
		{uint32(1), "fp16", "F16"},
		{uint32(0), "fp32", "F32"},
		{uint32(32), "bf16", "BF16"},
		{uint32(15), "q4_k_m", "Q4_K_M"},
		{uint32(7), "q8_0", "Q8_0"},
		{uint32(99), "file_type 99", "file_type 99"},
	} {
		p, err := engines.GGUFPrecision(writeGGUF(t, gguf.KV{Key: "general.file_type", Value: c.fileType}))
		if err != nil {
			t.Fatal(err)
		}
		if p.Label() != c.label || p.Quantization() != c.quant || p.Format != "gguf" {
			t.Errorf("file_type %v: %+v, label %q quantization %q; want %q %q", c.fileType, p, p.Label(), p.Quantization(), c.label, c.quant)
		}
	}
	noType := writeGGUF(t)
	if _, err := engines.GGUFPrecision(noType); err == nil || !strings.Contains(err.Error(), noType+": no general.file_type") {
		t.Errorf("no file type: %v", err)
	}
	notGGUF := filepath.Join(t.TempDir(), "x.gguf")
	_ = os.WriteFile(notGGUF, []byte("not a gguf file at all"), 0o644)
	if _, err := engines.GGUFPrecision(notGGUF); err == nil || !strings.Contains(err.Error(), notGGUF+": gguf: bad magic") {
		t.Errorf("not GGUF: %v", err)
	}
}

// Ollama's quantization_level (its /api/show details) and the run.json
// fields a precision fills.
func TestOllamaPrecisionRecord(t *testing.T) {
	var info record.EngineInfo
	engines.OllamaPrecision("Q4_K_M", "gguf").Record(&info)
	if info.Precision != "q4_k_m" || info.Quantization != "Q4_K_M" || info.ModelFormat != "gguf" {
		t.Errorf("recorded %+v", info)
	}
	info = record.EngineInfo{Precision: "kept"}
	engines.OllamaPrecision("", "").Record(&info)
	if info.Precision != "kept" || info.Quantization != "" {
		t.Errorf("an unknown precision overwrote: %+v", info)
	}
}
