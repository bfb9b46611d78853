package engines

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Weights is the identity of the model weights an engine loads, recorded
// in run.json (engine.extra.weights). Startup energy counts loading these
// weights from local disk, never downloading them: an engine that can
// check (WeightsChecker) does so before the idle baseline.
type Weights struct {
	// Source is "gguf" (a GGUF file), "hf-snapshot" (a snapshot in the
	// Hugging Face cache) or "local-dir" (a model directory).
	Source string `json:"source"`
	Path   string `json:"path,omitempty"`
	// SHA256 is the GGUF file's sha256.
	SHA256 string `json:"sha256,omitempty"`
	// Repo and Revision name a Hugging Face snapshot (Revision is the
	// commit the snapshot directory is named after).
	Repo     string `json:"repo,omitempty"`
	Revision string `json:"revision,omitempty"`
}

// WeightsChecker is an engine that confirms, before the baseline stage,
// that its weights are on this machine (so that nothing is downloaded
// during startup) and says which they are.
type WeightsChecker interface {
	CheckWeights(ctx context.Context) (Weights, error)
}

// FileSHA256 is the hex sha256 of a file's content.
func FileSHA256(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("weights: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx: ctx, r: f}); err != nil {
		return "", fmt.Errorf("weights: hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ctxReader stops a long read (a GGUF file of many GB) when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// GGUFWeights is the identity of a GGUF file: its path and sha256.
func GGUFWeights(ctx context.Context, path string) (Weights, error) {
	sum, err := FileSHA256(ctx, path)
	if err != nil {
		return Weights{}, err
	}
	return Weights{Source: "gguf", Path: path, SHA256: sum}, nil
}

// HFCacheDir is the Hugging Face hub cache as huggingface_hub finds it:
// HF_HUB_CACHE, else HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
// else ~/.cache/huggingface/hub. getenv looks a variable up (the engine's
// environment overrides first, then the process's).
func HFCacheDir(getenv func(string) string) string {
	if d := getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := getenv("HF_HOME"); d != "" {
		return filepath.Join(d, "hub")
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "huggingface", "hub")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "huggingface", "hub")
}

// EnvLookup looks a variable up in env first, then in the process's
// environment.
func EnvLookup(env map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
}

var commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// LocalHFWeights finds the weights of model (vLLM's and SGLang's --model:
// a local directory or a Hugging Face id) on this machine: the directory
// itself, or the snapshot of revision ("" = main) in the Hugging Face
// cache (models--ORG--NAME/snapshots/COMMIT, a branch or tag resolved
// through refs/NAME). Not there is an error that says to download the
// model first: joulebench never lets an engine download weights inside
// the startup stage.
func LocalHFWeights(model, revision, cacheDir string) (Weights, error) {
	if st, err := os.Stat(model); err == nil && st.IsDir() {
		abs, err := filepath.Abs(model)
		if err != nil {
			abs = model
		}
		return Weights{Source: "local-dir", Path: abs}, nil
	}
	hint := fmt.Sprintf("download it before the run (e.g. `huggingface-cli download %s", model)
	if revision != "" {
		hint += " --revision " + revision
	}
	hint += "`) or give a local directory: weights are loaded, never downloaded, inside the startup stage"
	if strings.Count(model, "/") != 1 || strings.HasPrefix(model, ".") || strings.HasPrefix(model, "/") {
		return Weights{}, fmt.Errorf("model %q is neither a local directory nor a Hugging Face id (ORG/NAME)", model)
	}
	repoDir := filepath.Join(cacheDir, "models--"+strings.ReplaceAll(model, "/", "--"))
	rev := revision
	if rev == "" {
		rev = "main"
	}
	commit := rev
	if !commitRE.MatchString(rev) {
		b, err := os.ReadFile(filepath.Join(repoDir, "refs", rev))
		if err != nil {
			return Weights{}, fmt.Errorf("model %s revision %s is not in the Hugging Face cache %s (no refs/%s): %s", model, rev, cacheDir, rev, hint)
		}
		commit = strings.TrimSpace(string(b))
	}
	snap := filepath.Join(repoDir, "snapshots", commit)
	entries, err := os.ReadDir(snap)
	if err != nil || len(entries) == 0 {
		return Weights{}, fmt.Errorf("model %s revision %s is not in the Hugging Face cache %s (no snapshot %s): %s", model, rev, cacheDir, commit, hint)
	}
	return Weights{Source: "hf-snapshot", Path: snap, Repo: model, Revision: commit}, nil
}
