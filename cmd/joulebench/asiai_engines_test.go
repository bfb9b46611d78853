package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The asiai workflow against Ollama and llama.cpp in one command (real
// servers, the tiny model): the winner table with its deltas and the
// gates. Both executables are found through PATH (--engine-bin is one
// value for every engine).
func TestAsiaiOllamaLlamaCpp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two engines")
	}
	ollama, llama := ollamaBin(t), llamaServer(t)
	t.Setenv("PATH", filepath.Dir(ollama)+string(os.PathListSeparator)+filepath.Dir(llama)+string(os.PathListSeparator)+os.Getenv("PATH"))
	tmp := t.TempDir()
	home := t.TempDir()
	parent := filepath.Join(tmp, "asiai")
	out, errOut, code := runCLI(t, "run", "asiai", "--out", parent, "--no-progress", "--telemetry", "none",
		"--engine", "ollama", "--engine", "llamacpp", "--model", "tiny", "--model-file", tinyModel(t, tmp),
		"--max-model-len", "1024", "--slots", "2",
		"--engine-env", "OLLAMA_MODELS="+filepath.Join(home, "models"), "--engine-env", "HOME="+home,
		"--set", "request_count=2", "--set", "runs=2", "--set", "max_tokens=32")
	if code != exitOK && code != exitChecks {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"engines side by side", "ollama", "llamacpp", "Winner by median tok/s", "vs winner", "gates failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("%s", out[strings.Index(out, "engines side by side"):])
}
