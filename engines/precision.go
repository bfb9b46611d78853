package engines

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
)

// Precision is the numeric format of the weights a model is served in, as
// the engine's options, the model's files or the engine itself say.
// Label is the one name the identity check compares and run.json records
// (engine.precision); Quantization is asiai's model_quantization.
type Precision struct {
	// DType is the normalized dtype of the weights ("bf16", "fp16",
	// "fp32"; "" unknown).
	DType string
	// Quant is the quantization as its source names it ("awq", "fp8",
	// "Q4_K_M"; "" none or unknown), Bits its bits when given.
	Quant string
	Bits  int
	// Name is the precision as a GGUF file type or Ollama names it
	// ("F16", "Q4_K_M"; "" otherwise).
	Name string
	// Format is the weights' file format ("gguf", "safetensors",
	// "pytorch"; "" unknown).
	Format string
	// From says where it was read ("engine arguments", "config.json",
	// "GGUF header", ...).
	From string
}

// Label is the precision's one name: the quantization (normalized) when
// the weights are quantized, else the dtype; "" when neither is known.
func (p Precision) Label() string {
	if q := NormalizePrecision(p.Quant); q != "" {
		return q
	}
	return p.DType
}

// Quantization is the name asiai's model_quantization records: a GGUF
// file type's name ("Q4_K_M", "F16"), else the quantization as its source
// names it (with its bits when known), else the dtype.
func (p Precision) Quantization() string {
	switch {
	case p.Name != "":
		return p.Name
	case NormalizePrecision(p.Quant) != "" && p.Bits > 0:
		return fmt.Sprintf("%s %d-bit", p.Quant, p.Bits)
	case NormalizePrecision(p.Quant) != "":
		return p.Quant
	}
	return p.DType
}

// Record writes p into run.json's engine fields: precision (Label),
// model_quantization and model_format, each when known.
func (p Precision) Record(info *record.EngineInfo) {
	if l := p.Label(); l != "" {
		info.Precision = l
	}
	if q := p.Quantization(); q != "" {
		info.Quantization = q
	}
	if p.Format != "" {
		info.ModelFormat = p.Format
	}
}

// NormalizePrecision is the canonical spelling of a dtype or quantization
// name, so that the names engines, config.json and GGUF files use compare
// equal: bfloat16 → bf16, float16/half/f16 → fp16, float32/float/f32 →
// fp32; "auto", "none" and "" → ""; anything else lower-cased.
func NormalizePrecision(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	switch strings.TrimPrefix(s, "torch.") {
	case "bfloat16", "bf16":
		return "bf16"
	case "float16", "fp16", "half", "f16":
		return "fp16"
	case "float32", "fp32", "float", "f32":
		return "fp32"
	case "auto", "none", "null":
		return ""
	}
	return s
}

// SamePrecision reports whether two precision names mean the same
// (NormalizePrecision of each).
func SamePrecision(a, b string) bool { return NormalizePrecision(a) == NormalizePrecision(b) }

// ArgValue is the value of a command-line option in args ("--dtype X" or
// "--dtype=X"; the last one wins, as argparse has it), "" when absent.
func ArgValue(args []string, flag string) string {
	v := ""
	for i, a := range args {
		switch {
		case a == flag && i+1 < len(args):
			v = args[i+1]
		case strings.HasPrefix(a, flag+"="):
			v = strings.TrimPrefix(a, flag+"=")
		}
	}
	return v
}

// ArgsPrecision is the precision vLLM's and SGLang's --dtype and
// --quantization options ask for (each "" when absent or auto).
func ArgsPrecision(args []string) Precision {
	p := Precision{DType: NormalizePrecision(ArgValue(args, "--dtype")), From: "engine arguments"}
	if q := ArgValue(args, "--quantization"); NormalizePrecision(q) != "" {
		p.Quant = q
	}
	return p
}

// HFConfigPrecision reads a Hugging Face model directory's config.json:
// torch_dtype (or dtype, its newer name) and quantization_config
// (quant_method, bits); the format is safetensors when the directory
// holds *.safetensors files (else pytorch for *.bin). A missing or
// malformed config.json is an error naming the file.
func HFConfigPrecision(dir string) (Precision, error) {
	file := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(file)
	if err != nil {
		return Precision{}, fmt.Errorf("model precision: %w", err)
	}
	var cfg struct {
		TorchDType string `json:"torch_dtype"`
		DType      string `json:"dtype"`
		Quant      *struct {
			Method string `json:"quant_method"`
			Bits   any    `json:"bits"`
		} `json:"quantization_config"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return Precision{}, fmt.Errorf("model precision: %s: %w", file, err)
	}
	p := Precision{DType: NormalizePrecision(cfg.TorchDType), From: "config.json"}
	if p.DType == "" {
		p.DType = NormalizePrecision(cfg.DType)
	}
	if q := cfg.Quant; q != nil {
		p.Quant = q.Method
		if p.Quant == "" {
			p.Quant = "quantized" // a quantization_config without its method
		}
		if bits, ok := q.Bits.(float64); ok && bits > 0 && bits == float64(int(bits)) {
			p.Bits = int(bits)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.safetensors")); len(m) > 0 {
		p.Format = "safetensors"
	} else if m, _ := filepath.Glob(filepath.Join(dir, "*.bin")); len(m) > 0 {
		p.Format = "pytorch"
	}
	return p, nil
}

// ResolvePrecision is the precision vLLM or SGLang serves a model in: its
// --dtype and --quantization options where given (not auto), the model
// directory's config.json for the rest (dir "" or without a readable
// config.json: the options only).
func ResolvePrecision(args []string, dir string) Precision {
	p := ArgsPrecision(args)
	if dir == "" {
		return p
	}
	cfg, err := HFConfigPrecision(dir)
	if err != nil {
		return p
	}
	from := "config.json"
	if p.DType != "" || p.Quant != "" {
		from = "engine arguments and config.json"
	}
	if p.DType == "" {
		p.DType = cfg.DType
	}
	if p.Quant == "" {
		p.Quant, p.Bits = cfg.Quant, cfg.Bits
	}
	p.Format, p.From = cfg.Format, from
	return p
}

// LocalModelPrecision is the precision of a model served from path when
// path is a model directory on this machine (vLLM's /v1/models root,
// SGLang's model_path): its config.json; the zero Precision otherwise.
func LocalModelPrecision(path string) Precision {
	if path == "" {
		return Precision{}
	}
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return Precision{}
	}
	p, err := HFConfigPrecision(path)
	if err != nil {
		return Precision{}
	}
	return p
}

// Fill is p with what it does not know (dtype, quantization, format)
// taken from q.
func (p Precision) Fill(q Precision) Precision {
	if p.DType == "" {
		p.DType = q.DType
	}
	if p.Quant == "" && p.Name == "" {
		p.Quant, p.Bits, p.Name = q.Quant, q.Bits, q.Name
	}
	if p.Format == "" {
		p.Format = q.Format
	}
	if p.From == "" {
		p.From = q.From
	} else if q.From != "" && q.From != p.From {
		p.From += " and " + q.From
	}
	return p
}
