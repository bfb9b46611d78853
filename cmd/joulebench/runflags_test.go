package main

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// Every flag is checked before a run directory is created: a bad engine,
// a flag that does not apply to the engine, a bad power source all exit
// with invalid input and leave nothing behind (before, --engine bogus left
// a "failed" directory while the exit code said nothing was run).
func TestRunFlagsCheckedBeforeDirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--engine", "bogus"}, `--engine "bogus": want one of`},
		{[]string{"--engine", "sim", "--engine", "bogus"}, `engine bogus: --engine "bogus"`},
		{[]string{"--tp", "2"}, "--tp does not apply to --engine sim (its engine-specific flags: --model, --sim-preset, --sim-gpu, --sim-model)"},
		{[]string{"--engine-bin", "x", "--port", "8000"}, "--engine-bin, --port do not apply to --engine sim"},
		{[]string{"--engine", "ollama", "--model", "m", "--tp", "2", "--health-generate"}, "--health-generate, --tp do not apply to --engine ollama"},
		{[]string{"--engine", "vllm", "--model", "m", "--slots", "4"}, "--slots does not apply to --engine vllm"},
		{[]string{"--engine", "llamacpp", "--model-file", "m.gguf", "--revision", "abc"}, "--revision does not apply to --engine llamacpp"},
		{[]string{"--engine", "vllm", "--engine-url", "http://127.0.0.1:1", "--tp", "2", "--port", "8000"}, "--tp, --port do not apply to --engine vllm with --engine-url"},
		{[]string{"--sim-preset", "bogus"}, "--sim-preset"},
		{[]string{"--engine", "vllm"}, "needs --model"},
		{[]string{"--telemetry", "bogus"}, "--telemetry"},
		{[]string{"--engine", "llamacpp", "--model-file", "m.gguf", "--image-digest", "latest"}, "--image-digest \"latest\": want sha256:"},
		{[]string{"--image-digest", testDigest}, "--image-digest does not apply to --engine sim"},
		// Several engines: a flag must apply to one of them at least.
		{[]string{"--engine", "sim", "--engine", "llamacpp", "--model-file", "m.gguf", "--tp", "2"}, "engine sim: --model-file, --tp do not apply to --engine sim"},
		{[]string{"--engine", "vllm", "--model", "m", "--telemetry", "sim"}, "--telemetry sim"},
	} {
		for _, out := range []string{"", "explicit"} {
			args := append([]string{"run", "benchmark-1.5", "--no-progress"}, tc.args...)
			if out != "" {
				args = append(args, "--out", out)
			}
			_, errOut, code := runCLI(t, args...)
			if code != exitInvalid || !strings.Contains(errOut, tc.want) {
				t.Errorf("%v: exit %d, want %d with %q:\n%s", args, code, exitInvalid, tc.want, errOut)
			}
			for _, d := range []string{"runs", "explicit"} {
				if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%v: %s was created", args, d)
				}
			}
		}
	}
}
