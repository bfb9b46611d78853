// Command mkgguf writes joulebench's tiny random-weight llama test model
// (GGUF v3), which llama-server and Ollama load with no download:
//
//	go run ./internal/gguf/cmd/mkgguf -o tiny.gguf
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/joulebench/joulebench/internal/gguf"
)

func main() {
	c := gguf.DefaultTiny()
	out := flag.String("o", "tiny.gguf", "output file")
	flag.StringVar(&c.Name, "name", c.Name, "general.name")
	flag.Uint64Var(&c.Seed, "seed", c.Seed, "weight seed")
	flag.IntVar(&c.Embd, "embd", c.Embd, "embedding length")
	flag.IntVar(&c.FF, "ff", c.FF, "feed-forward length")
	flag.IntVar(&c.Layers, "layers", c.Layers, "blocks")
	flag.IntVar(&c.Heads, "heads", c.Heads, "attention heads")
	flag.IntVar(&c.HeadsKV, "heads-kv", c.HeadsKV, "key/value heads")
	flag.IntVar(&c.Context, "context", c.Context, "llama.context_length")
	flag.BoolVar(&c.F32, "f32", c.F32, "write matrices as F32 instead of F16")
	flag.Parse()
	if err := gguf.WriteTinyFile(*out, c); err != nil {
		fmt.Fprintln(os.Stderr, "mkgguf:", err)
		os.Exit(1)
	}
	st, err := os.Stat(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkgguf:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %d bytes\n", *out, st.Size())
}
