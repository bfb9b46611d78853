package engines

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
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
	// commit the snapshot directory is named after). A local directory's
	// Revision is its git checkout's HEAD commit, else the commit its
	// files were downloaded at (huggingface_hub's --local-dir metadata,
	// .cache/huggingface/download/*.metadata), when all agree.
	Repo     string `json:"repo,omitempty"`
	Revision string `json:"revision,omitempty"`
	// RevisionFrom says where Revision was read: "hf-cache", "git" or
	// "hf-download-metadata"; RevisionNote why there is none where one
	// was looked for (files downloaded at different commits).
	RevisionFrom string `json:"revision_from,omitempty"`
	RevisionNote string `json:"revision_note,omitempty"`
	// CommitDate is when Revision was committed (RFC 3339), when known:
	// a git checkout's commit has it; the Hugging Face cache and the
	// download metadata keep none.
	CommitDate string `json:"commit_date,omitempty"`
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
		w := Weights{Source: "local-dir", Path: abs}
		localRevision(&w)
		return w, nil
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
	return Weights{Source: "hf-snapshot", Path: snap, Repo: model, Revision: commit, RevisionFrom: "hf-cache"}, nil
}

// gitTimeout bounds the git command that reads a checkout's commit.
const gitTimeout = 10 * time.Second

// localRevision fills w's revision (and commit date) for a local
// directory: a git checkout's HEAD (read with git, which knows packed
// objects), else the commit huggingface_hub downloaded its files at.
func localRevision(w *Weights) {
	if _, err := os.Stat(filepath.Join(w.Path, ".git")); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
		out, err := exec.CommandContext(ctx, "git", "-C", w.Path, "log", "-1", "--format=%H %cI").Output()
		cancel()
		if f := strings.Fields(string(out)); err == nil && len(f) == 2 && commitRE.MatchString(f[0]) {
			w.Revision, w.CommitDate, w.RevisionFrom = f[0], f[1], "git"
			return
		}
	}
	commits := map[string]bool{}
	root := filepath.Join(w.Path, ".cache", "huggingface", "download")
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".metadata") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		first, _, _ := strings.Cut(string(b), "\n")
		if c := strings.TrimSpace(first); commitRE.MatchString(c) {
			commits[c] = true
		}
		return nil
	})
	switch len(commits) {
	case 0:
	case 1:
		for c := range commits {
			w.Revision, w.RevisionFrom = c, "hf-download-metadata"
		}
	default:
		list := make([]string, 0, len(commits))
		for c := range commits {
			list = append(list, c)
		}
		sort.Strings(list)
		w.RevisionNote = "files downloaded at different commits: " + strings.Join(list, ", ")
	}
}
