package gguf

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// Token types of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
const (
	TokenNormal      int32 = 1
	TokenUnknown     int32 = 2
	TokenControl     int32 = 3
	TokenUserDefined int32 = 4
	TokenUnused      int32 = 5
	TokenByte        int32 = 6
)

// Special token ids of the tiny vocabulary.
const (
	TokenIDUnk      = 0
	TokenIDBOS      = 1
	TokenIDEOS      = 2
	TokenIDImStart  = 3
	TokenIDImEnd    = 4
	firstByteToken  = 5
	spaceMarker     = "\u2581" // SentencePiece's "▁", a space
	disallowedLogit = -100
)

// ChatTemplate is the tiny model's tokenizer.chat_template: ChatML, which
// llama.cpp recognises without --jinja.
const ChatTemplate = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

// OllamaTemplate is the same ChatML template as an Ollama (Go) template,
// for an Ollama model created from the tiny GGUF.
const OllamaTemplate = "{{- if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}" +
	"{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n"

// StopString ends a ChatML turn. The tiny model cannot generate it: its
// output tokens hold no '<' or '|'.
const StopString = "<|im_end|>"

// TinyConfig sizes the tiny llama model.
type TinyConfig struct {
	// Name is general.name.
	Name string
	// Seed makes the weights reproducible.
	Seed uint64
	// Embd, FF, Layers, Heads and HeadsKV are the transformer's sizes
	// (Embd divisible by Heads, Heads by HeadsKV).
	Embd, FF, Layers, Heads, HeadsKV int
	// Context is llama.context_length.
	Context int
	// F32 writes the matrices as F32 instead of F16 (twice the size).
	F32 bool
}

// DefaultTiny is a model of about 3 MB (F16) with about 1.6 M parameters.
func DefaultTiny() TinyConfig {
	return TinyConfig{Name: "joulebench-tiny-llama", Seed: 1, Embd: 256, FF: 512, Layers: 2, Heads: 4, HeadsKV: 4, Context: 4096}
}

func (c TinyConfig) validate() error {
	switch {
	case c.Embd < 8 || c.FF < 1 || c.Layers < 1 || c.Heads < 1 || c.HeadsKV < 1 || c.Context < 16:
		return fmt.Errorf("gguf: tiny model: sizes too small: %+v", c)
	case c.Embd%c.Heads != 0 || (c.Embd/c.Heads)%2 != 0:
		return fmt.Errorf("gguf: tiny model: embd %d must be a multiple of heads %d with an even head size", c.Embd, c.Heads)
	case c.Heads%c.HeadsKV != 0:
		return fmt.Errorf("gguf: tiny model: heads %d must be a multiple of kv heads %d", c.Heads, c.HeadsKV)
	}
	return nil
}

// words are the multi-character pieces of the tiny vocabulary (each with a
// leading space marker), all lower-case ASCII.
var words = strings.Fields(`the of and to in is was that for on are with as it be at by this had not
but from or have an they which one you were her all she there would their we him been has when who will
more no if out so said what up its about into than them can only other new some could time these two may
then do first any my now such like our over man me even most made after also did many before must through
back years where much your way well down should because each just those people how too little state good
very make world still own see men work long get here between both life being under never day same another
know while last might us great old year off come since against go came right used take three energy power
token light river stone green water field small house bright quiet morning table window garden paper music
number answer simple measure engine model signal memory clock value`)

// punctuation pieces the model may generate (none of them can form a stop
// string or a special token).
var punctuation = []string{".", ",", "!", "?", "'", "-", ":", ";"}

// Vocab is the tiny vocabulary in id order: unk, bos, eos, <|im_start|>,
// <|im_end|>, the 256 byte tokens <0x00>..<0xFF>, "▁", the printable
// letters and digits, punctuation, then "▁word" pieces.
type Vocab struct {
	Tokens []string
	Scores []float32
	Types  []int32
	// Allowed marks the tokens the model may generate (plain ASCII pieces).
	Allowed []bool
}

// TinyVocab returns the tiny model's vocabulary.
func TinyVocab() Vocab {
	var v Vocab
	add := func(tok string, typ int32, allowed bool) {
		v.Tokens = append(v.Tokens, tok)
		v.Scores = append(v.Scores, -float32(len(v.Scores)))
		v.Types = append(v.Types, typ)
		v.Allowed = append(v.Allowed, allowed)
	}
	add("<unk>", TokenUnknown, false)
	add("<s>", TokenControl, false)
	add("</s>", TokenControl, false)
	add("<|im_start|>", TokenControl, false)
	add(StopString, TokenControl, false)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), TokenByte, false)
	}
	add(spaceMarker, TokenNormal, true)
	for c := 'a'; c <= 'z'; c++ {
		add(string(c), TokenNormal, true)
	}
	for c := 'A'; c <= 'Z'; c++ {
		add(string(c), TokenNormal, true)
	}
	for c := '0'; c <= '9'; c++ {
		add(string(c), TokenNormal, true)
	}
	for _, p := range punctuation {
		add(p, TokenNormal, true)
	}
	seen := map[string]bool{}
	for _, w := range words {
		if !seen[w] {
			seen[w] = true
			add(spaceMarker+w, TokenNormal, true)
		}
	}
	return v
}

// Tiny builds the metadata and tensors of a random-weight llama model.
//
// Generation never ends on its own and its text is plain ASCII: every
// token embedding holds the constant 1 in residual dimension 0, and no
// layer writes that dimension (row 0 of every attention output and FFN
// down projection is zero), so after the final RMS norm it is always
// clearly positive; the output weight of that dimension is -100 for the
// special, control and byte tokens and 0 for the ASCII pieces, which keeps
// EOS (and anything non-ASCII) out of reach: a request runs to its
// max_tokens.
func Tiny(c TinyConfig) ([]KV, []Tensor, error) {
	if err := c.validate(); err != nil {
		return nil, nil, err
	}
	v := TinyVocab()
	nv := len(v.Tokens)
	headDim := c.Embd / c.Heads
	kvDim := headDim * c.HeadsKV
	mtype := GGMLTypeF16
	fileType := uint32(1) // MOSTLY_F16
	if c.F32 {
		mtype, fileType = GGMLTypeF32, 0
	}
	kvs := []KV{
		{"general.architecture", "llama"},
		{"general.name", c.Name},
		{"general.file_type", fileType},
		{"general.alignment", uint32(Alignment)},
		{"llama.vocab_size", uint32(nv)},
		{"llama.context_length", uint32(c.Context)},
		{"llama.embedding_length", uint32(c.Embd)},
		{"llama.block_count", uint32(c.Layers)},
		{"llama.feed_forward_length", uint32(c.FF)},
		{"llama.attention.head_count", uint32(c.Heads)},
		{"llama.attention.head_count_kv", uint32(c.HeadsKV)},
		{"llama.rope.dimension_count", uint32(headDim)},
		{"llama.rope.freq_base", float32(10000)},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", v.Tokens},
		{"tokenizer.ggml.scores", v.Scores},
		{"tokenizer.ggml.token_type", v.Types},
		{"tokenizer.ggml.unknown_token_id", uint32(TokenIDUnk)},
		{"tokenizer.ggml.bos_token_id", uint32(TokenIDBOS)},
		{"tokenizer.ggml.eos_token_id", uint32(TokenIDEOS)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
		{"tokenizer.chat_template", ChatTemplate},
	}

	rng := rand.New(rand.NewPCG(c.Seed, 0x6a6f756c6562656e)) // "joulebenc"
	uniform := func(n int, a float64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32((rng.Float64()*2 - 1) * a)
		}
		return out
	}
	ones := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	// fan-in scaled: uniform(-a, a) has std a/sqrt(3).
	scaled := func(rows, cols int, gain float64) []float32 {
		return uniform(rows*cols, gain*math.Sqrt(3/float64(cols)))
	}
	d := func(dims ...int) []uint64 {
		out := make([]uint64, len(dims))
		for i, x := range dims {
			out[i] = uint64(x)
		}
		return out
	}

	embd := uniform(nv*c.Embd, 0.25)
	out := uniform(nv*c.Embd, 0.3)
	for t := 0; t < nv; t++ {
		embd[t*c.Embd] = 1
		out[t*c.Embd] = 0
		if !v.Allowed[t] {
			out[t*c.Embd] = disallowedLogit
		}
	}
	tensors := []Tensor{
		{Name: "token_embd.weight", Dims: d(c.Embd, nv), Type: mtype, Data: embd},
		{Name: "output_norm.weight", Dims: d(c.Embd), Type: GGMLTypeF32, Data: ones(c.Embd)},
		{Name: "output.weight", Dims: d(c.Embd, nv), Type: mtype, Data: out},
	}
	for i := 0; i < c.Layers; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		wo := scaled(c.Embd, c.Embd, 0.5)
		clear(wo[:c.Embd]) // output row 0: nothing writes residual dimension 0
		down := scaled(c.Embd, c.FF, 0.5)
		clear(down[:c.FF])
		tensors = append(tensors,
			Tensor{Name: p + "attn_norm.weight", Dims: d(c.Embd), Type: GGMLTypeF32, Data: ones(c.Embd)},
			Tensor{Name: p + "attn_q.weight", Dims: d(c.Embd, c.Embd), Type: mtype, Data: scaled(c.Embd, c.Embd, 1)},
			Tensor{Name: p + "attn_k.weight", Dims: d(c.Embd, kvDim), Type: mtype, Data: scaled(kvDim, c.Embd, 1)},
			Tensor{Name: p + "attn_v.weight", Dims: d(c.Embd, kvDim), Type: mtype, Data: scaled(kvDim, c.Embd, 1)},
			Tensor{Name: p + "attn_output.weight", Dims: d(c.Embd, c.Embd), Type: mtype, Data: wo},
			Tensor{Name: p + "ffn_norm.weight", Dims: d(c.Embd), Type: GGMLTypeF32, Data: ones(c.Embd)},
			Tensor{Name: p + "ffn_gate.weight", Dims: d(c.Embd, c.FF), Type: mtype, Data: scaled(c.FF, c.Embd, 1)},
			Tensor{Name: p + "ffn_up.weight", Dims: d(c.Embd, c.FF), Type: mtype, Data: scaled(c.FF, c.Embd, 1)},
			Tensor{Name: p + "ffn_down.weight", Dims: d(c.FF, c.Embd), Type: mtype, Data: down},
		)
	}
	return kvs, tensors, nil
}

// WriteTiny writes the tiny model to w.
func WriteTiny(w io.Writer, c TinyConfig) error {
	kvs, tensors, err := Tiny(c)
	if err != nil {
		return err
	}
	return Write(w, kvs, tensors)
}

// WriteTinyFile writes the tiny model to path (through a temporary file
// renamed into place; an existing file is replaced).
func WriteTinyFile(path string, c TinyConfig) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".tiny-*.gguf")
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err = WriteTiny(f, c); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	if err = os.Chmod(f.Name(), 0o644); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	return nil
}
