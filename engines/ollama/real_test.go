//go:build unix

package ollama_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/ollama"
	"github.com/joulebench/joulebench/internal/gguf"
	"github.com/joulebench/joulebench/workload"
)

// realOllama finds the ollama binary as the engine integration tests do
// (JOULEBENCH_OLLAMA_BIN, else ollama in PATH); the test skips without
// it, and fails under JOULEBENCH_REQUIRE_ENGINES=1 (CI).
func realOllama(t *testing.T) string {
	t.Helper()
	require := os.Getenv("JOULEBENCH_REQUIRE_ENGINES") == "1"
	if testing.Short() && !require {
		t.Skip("real engine test: skipped in -short mode")
	}
	p := os.Getenv("JOULEBENCH_OLLAMA_BIN")
	if p == "" {
		p, _ = exec.LookPath("ollama")
	}
	if p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if require {
		t.Fatal("ollama not installed (set JOULEBENCH_OLLAMA_BIN; .ci/install-engines.sh installs it); JOULEBENCH_REQUIRE_ENGINES=1 makes this a failure")
	}
	t.Skip("ollama not installed (set JOULEBENCH_OLLAMA_BIN or put ollama in PATH)")
	return ""
}

// TestRealOllamaTokenTimesAndCleanup: a real `ollama serve` with the tiny
// random-weight model created from a GGUF file. Over the native API, every
// request's times are in order (sent_at <= token_times[i] <=
// token_times[i+1] <= done_at; before the fix 30-35 of 208 requests had a
// token time one float64 step, 2^-22 s, before the one before it); at
// Stop the model joulebench created is removed from the model store.
func TestRealOllamaTokenTimesAndCleanup(t *testing.T) {
	bin := realOllama(t)
	dir := t.TempDir()
	models := filepath.Join(dir, "models")
	file := filepath.Join(dir, "tiny.gguf")
	if err := gguf.WriteTinyFile(file, gguf.DefaultTiny()); err != nil {
		t.Fatal(err)
	}
	e, err := ollama.New(ollama.Config{Common: engines.Common{Bin: bin, Model: "tiny", ModelFile: file, Slots: 4,
		Env: map[string]string{"OLLAMA_MODELS": models, "HOME": dir}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.Stop(ctx, 5*time.Second) })
	if err := e.WaitReady(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(models, "manifests", "registry.ollama.ai", "library", "tiny", "latest")
	if _, err := os.Stat(manifest); err != nil {
		t.Fatalf("the created model's manifest: %v", err)
	}

	c := ollama.NewClient(e.BaseURL())
	const requests, workers = 64, 4
	recs := make([]record.Request, requests)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < requests; i += workers {
				recs[i] = c.Do(ctx, workload.Request{ID: "r", Model: "tiny", Chat: i%2 == 0, MaxTokens: 48, Prompt: "Hello",
					Messages: []workload.Message{{Role: "user", Content: "Hello"}}})
			}
		}()
	}
	wg.Wait()
	for i, r := range recs {
		if !r.OK || len(r.TokenTimes) < 2 {
			t.Errorf("request %d: ok %v %q, %d token times", i, r.OK, r.Error, len(r.TokenTimes))
			continue
		}
		prev := r.SentAt
		for j, tt := range r.TokenTimes {
			if tt < prev {
				t.Errorf("request %d: token_times[%d] = %.9f is %.3g s before the time before it", i, j, tt, prev-tt)
				break
			}
			prev = tt
		}
		if r.FirstTokenAt != r.TokenTimes[0] || r.DoneAt < prev {
			t.Errorf("request %d: first %.9f done %.9f, last token %.9f", i, r.FirstTokenAt, r.DoneAt, prev)
		}
	}

	if _, err := e.Stop(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := e.Info().Extra["created_model"]; got != "removed" {
		t.Errorf("created_model %v, want removed", got)
	}
	if _, err := os.Stat(manifest); !os.IsNotExist(err) {
		t.Errorf("the created model is left behind: %s: %v", manifest, err)
	}
}
