package gguf_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/internal/gguf"
)

func TestFloat16(t *testing.T) {
	cases := []struct {
		f    float32
		want uint16
	}{
		{0, 0x0000}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800}, {65504, 0x7bff}, {1e6, 0x7c00},
		{-100, 0xd640}, {float32(math.Inf(-1)), 0xfc00}, {6.103515625e-05, 0x0400}, // smallest normal
		{5.960464477539063e-08, 0x0001}, // smallest subnormal
		{1e-9, 0x0000},                  // underflow
		{1.0009765625, 0x3c01},          // 1 + 2^-10
		{1.00048828125, 0x3c00},         // halfway, rounds to even
	}
	for _, c := range cases {
		if got := gguf.Float16(c.f); got != c.want {
			t.Errorf("Float16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	if got := gguf.Float16(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("NaN = %#04x", got)
	}
}

// The writer's output reads back: header, metadata in order, tensor
// infos at aligned offsets, and the data where the offsets say.
func TestWriteReadBack(t *testing.T) {
	var buf bytes.Buffer
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "a.u32", Value: uint32(7)},
		{Key: "a.f32", Value: float32(1.5)},
		{Key: "a.bool", Value: true},
		{Key: "a.strs", Value: []string{"x", "yz"}},
		{Key: "a.i32s", Value: []int32{-1, 2}},
	}
	tensors := []gguf.Tensor{
		{Name: "t1", Dims: []uint64{3}, Type: gguf.GGMLTypeF32, Data: []float32{1, 2, 3}},
		{Name: "t2", Dims: []uint64{2, 2}, Type: gguf.GGMLTypeF16, Data: []float32{1, -2, 0.5, 0}},
	}
	if err := gguf.Write(&buf, kvs, tensors); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if string(b[:4]) != "GGUF" || binary.LittleEndian.Uint32(b[4:]) != 3 {
		t.Fatalf("header % x", b[:8])
	}
	h, err := gguf.ReadHeader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(h.Keys, ",") != "general.architecture,a.u32,a.f32,a.bool,a.strs,a.i32s" {
		t.Errorf("keys %v", h.Keys)
	}
	if h.Metadata["a.u32"] != uint32(7) || h.Metadata["a.f32"] != float32(1.5) || h.Metadata["a.bool"] != true {
		t.Errorf("metadata %v", h.Metadata)
	}
	if s := h.Metadata["a.strs"].([]any); len(s) != 2 || s[1] != "yz" {
		t.Errorf("strings %v", s)
	}
	if len(h.Tensors) != 2 || h.Tensors[0].Offset != 0 || h.Tensors[1].Offset != 32 || h.DataOffset%32 != 0 {
		t.Fatalf("tensors %+v data at %d", h.Tensors, h.DataOffset)
	}
	d := b[h.DataOffset:]
	if math.Float32frombits(binary.LittleEndian.Uint32(d[8:])) != 3 {
		t.Error("t1[2] != 3")
	}
	if binary.LittleEndian.Uint16(d[32+2:]) != 0xc000 {
		t.Error("t2[1] != -2 in F16")
	}
	if uint64(len(b)) != h.DataOffset+64 {
		t.Errorf("file %d bytes, want %d", len(b), h.DataOffset+64)
	}
	if err := gguf.Write(&buf, nil, []gguf.Tensor{{Name: "bad", Dims: []uint64{2}, Data: []float32{1}}}); err == nil {
		t.Error("a tensor with the wrong element count was written")
	}
}

// The tiny model has the keys llama.cpp requires, the vocabulary layout
// (unk, bos, eos, ChatML markers, 256 byte tokens, ASCII pieces), and the
// construction that keeps generation going: residual dimension 0 is
// constant in every embedding, written by no layer, and carries a large
// negative output weight for every token that is not a plain ASCII piece.
func TestTinyModel(t *testing.T) {
	c := gguf.DefaultTiny()
	kvs, tensors, err := gguf.Tiny(c)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{}
	for _, kv := range kvs {
		meta[kv.Key] = kv.Value
	}
	for _, k := range []string{"general.architecture", "llama.context_length", "llama.embedding_length", "llama.block_count",
		"llama.feed_forward_length", "llama.attention.head_count", "llama.attention.head_count_kv", "llama.attention.layer_norm_rms_epsilon",
		"tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
		"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id", "tokenizer.chat_template"} {
		if _, ok := meta[k]; !ok {
			t.Errorf("missing %s", k)
		}
	}
	v := gguf.TinyVocab()
	if v.Tokens[0] != "<unk>" || v.Tokens[1] != "<s>" || v.Tokens[2] != "</s>" || v.Tokens[4] != "<|im_end|>" ||
		v.Tokens[5] != "<0x00>" || v.Tokens[5+255] != "<0xFF>" || v.Types[5+10] != gguf.TokenByte {
		t.Errorf("vocabulary layout: %q", v.Tokens[:8])
	}
	nv := len(v.Tokens)
	for i, tok := range v.Tokens {
		if v.Allowed[i] {
			txt := strings.ReplaceAll(tok, "\u2581", " ")
			for _, r := range txt {
				if r > 126 || r < 32 || strings.ContainsRune("<>|[]{}", r) {
					t.Errorf("allowed token %q holds %q", tok, r)
				}
			}
		}
	}
	byName := map[string]gguf.Tensor{}
	for _, tn := range tensors {
		byName[tn.Name] = tn
	}
	emb, out := byName["token_embd.weight"], byName["output.weight"]
	if len(emb.Dims) != 2 || emb.Dims[0] != uint64(c.Embd) || emb.Dims[1] != uint64(nv) {
		t.Fatalf("token_embd dims %v", emb.Dims)
	}
	for tok := 0; tok < nv; tok++ {
		if emb.Data[tok*c.Embd] != 1 {
			t.Fatalf("token %d: embedding dim 0 = %v", tok, emb.Data[tok*c.Embd])
		}
		want := float32(0)
		if !v.Allowed[tok] {
			want = -100
		}
		if out.Data[tok*c.Embd] != want {
			t.Errorf("token %q: output weight of dim 0 = %v, want %v", v.Tokens[tok], out.Data[tok*c.Embd], want)
		}
	}
	for l := 0; l < c.Layers; l++ {
		wo := byName["blk."+strconv.Itoa(l)+".attn_output.weight"]
		down := byName["blk."+strconv.Itoa(l)+".ffn_down.weight"]
		for i := 0; i < c.Embd; i++ {
			if wo.Data[i] != 0 {
				t.Fatalf("layer %d attn_output writes dim 0", l)
			}
		}
		for i := 0; i < c.FF; i++ {
			if down.Data[i] != 0 {
				t.Fatalf("layer %d ffn_down writes dim 0", l)
			}
		}
		if down.Dims[0] != uint64(c.FF) || down.Dims[1] != uint64(c.Embd) {
			t.Errorf("ffn_down dims %v", down.Dims)
		}
	}
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := gguf.WriteTinyFile(path, c); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() > 4<<20 || st.Size() < 1<<20 {
		t.Errorf("file size %v %v", st.Size(), err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	h, err := gguf.ReadHeader(f)
	if err != nil || len(h.Tensors) != 3+9*c.Layers || h.Metadata["tokenizer.ggml.model"] != "llama" {
		t.Errorf("read back: %v tensors %d", err, len(h.Tensors))
	}
	// Same seed, same bytes.
	var a, b bytes.Buffer
	_ = gguf.WriteTiny(&a, c)
	_ = gguf.WriteTiny(&b, c)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("the tiny model is not reproducible")
	}
	if _, _, err := gguf.Tiny(gguf.TinyConfig{Embd: 30, FF: 8, Layers: 1, Heads: 4, HeadsKV: 4, Context: 64}); err == nil {
		t.Error("embd not divisible by heads accepted")
	}
}
