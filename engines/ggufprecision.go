package engines

import (
	"fmt"
	"os"

	"github.com/joulebench/joulebench/internal/gguf"
)

// ggufFileTypes are the names of llama.cpp's llama_ftype values (GGUF
// general.file_type), as llama.cpp and Ollama print them.
var ggufFileTypes = map[uint32]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
	10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
	16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
	22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
	28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
	37: "TQ2_0", 38: "MXFP4_MOE",
}

// GGUFFileTypeName is the name of a GGUF general.file_type value
// ("file_type N" for one this table does not know).
func GGUFFileTypeName(ft uint32) string {
	if n, ok := ggufFileTypes[ft]; ok {
		return n
	}
	return fmt.Sprintf("file_type %d", ft)
}

// GGUFPrecision reads a GGUF file's header: its general.file_type, the
// precision of the whole file (F16, BF16 and F32 files are unquantized:
// that dtype; any other type is the quantization, e.g. Q4_K_M). A file
// that is not GGUF, or has no file type, is an error naming the file.
func GGUFPrecision(path string) (Precision, error) {
	f, err := os.Open(path)
	if err != nil {
		return Precision{}, fmt.Errorf("model precision: %w", err)
	}
	defer f.Close()
	h, err := gguf.ReadHeader(f)
	if err != nil {
		return Precision{}, fmt.Errorf("model precision: %s: %w", path, err)
	}
	var ft uint32
	switch v := h.Metadata["general.file_type"].(type) {
	case uint32:
		ft = v
	case int32:
		ft = uint32(v)
	case uint64:
		ft = uint32(v)
	default:
		return Precision{}, fmt.Errorf("model precision: %s: no general.file_type in its GGUF header", path)
	}
	return ggufTypePrecision(GGUFFileTypeName(ft), "GGUF header"), nil
}

// OllamaPrecision is the precision of Ollama's quantization_level (from
// /api/show or /api/tags details: "Q4_K_M", "F16") and format ("gguf").
func OllamaPrecision(level, format string) Precision {
	if level == "" {
		return Precision{}
	}
	p := ggufTypePrecision(level, "Ollama quantization_level")
	if format != "" {
		p.Format = format
	}
	return p
}

// ggufTypePrecision is the precision of a GGUF file type name: F32, F16
// and BF16 are dtypes, any other a quantization.
func ggufTypePrecision(name, from string) Precision {
	p := Precision{Name: name, Format: "gguf", From: from}
	switch d := NormalizePrecision(name); d {
	case "fp32", "fp16", "bf16":
		p.DType = d
	default:
		p.Quant = name
	}
	return p
}
