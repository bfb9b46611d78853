package engines

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The Hugging Face cache layout: models--ORG--NAME/refs/main holds the
// commit; snapshots/COMMIT holds the files.
func TestLocalHFWeights(t *testing.T) {
	cache := t.TempDir()
	const commit = "0123456789abcdef0123456789abcdef01234567"
	const other = "fedcba9876543210fedcba9876543210fedcba98"
	repo := filepath.Join(cache, "models--org--m")
	write(t, filepath.Join(repo, "refs", "main"), commit+"\n")
	write(t, filepath.Join(repo, "snapshots", commit, "config.json"), "{}")
	write(t, filepath.Join(repo, "refs", "v2"), other)
	local := t.TempDir()
	tests := []struct {
		model, rev string
		want       Weights
		err        string
	}{
		{"org/m", "", Weights{Source: "hf-snapshot", Path: filepath.Join(repo, "snapshots", commit), Repo: "org/m", Revision: commit, RevisionFrom: "hf-cache"}, ""},
		{"org/m", "main", Weights{Source: "hf-snapshot", Path: filepath.Join(repo, "snapshots", commit), Repo: "org/m", Revision: commit, RevisionFrom: "hf-cache"}, ""},
		{"org/m", commit, Weights{Source: "hf-snapshot", Path: filepath.Join(repo, "snapshots", commit), Repo: "org/m", Revision: commit, RevisionFrom: "hf-cache"}, ""},
		{"org/m", "v2", Weights{}, "no snapshot " + other},
		{"org/m", other, Weights{}, "no snapshot " + other},
		{"org/m", "v9", Weights{}, "no refs/v9"},
		{"org/absent", "", Weights{}, "huggingface-cli download org/absent"},
		{"a/b/c", "", Weights{}, "neither a local directory nor a Hugging Face id"},
		{local, "", Weights{Source: "local-dir", Path: local}, ""},
	}
	for _, tt := range tests {
		got, err := LocalHFWeights(tt.model, tt.rev, cache)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "never downloaded") && !strings.Contains(tt.err, "neither") {
				t.Errorf("%s@%s: error %v, want %q", tt.model, tt.rev, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s@%s = %+v, %v; want %+v", tt.model, tt.rev, got, err, tt.want)
		}
	}
}

func TestHFCacheDir(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HF_HUB_CACHE": "/a", "HF_HOME": "/b"}, "/a"},
		{map[string]string{"HF_HOME": "/b", "XDG_CACHE_HOME": "/c"}, "/b/hub"},
		{map[string]string{"XDG_CACHE_HOME": "/c"}, "/c/huggingface/hub"},
	} {
		if got := HFCacheDir(env(tt.env)); got != filepath.FromSlash(tt.want) {
			t.Errorf("%v: %s, want %s", tt.env, got, tt.want)
		}
	}
	if got := EnvLookup(map[string]string{"HF_HOME": "/x"})("HF_HOME"); got != "/x" {
		t.Errorf("EnvLookup override: %s", got)
	}
}

// sha256("abc") is the FIPS 180-2 example value.
func TestGGUFWeights(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.gguf")
	write(t, p, "abc")
	w, err := GGUFWeights(context.Background(), p)
	want := Weights{Source: "gguf", Path: p, SHA256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}
	if err != nil || w != want {
		t.Errorf("%+v, %v; want %+v", w, err, want)
	}
	if _, err := GGUFWeights(context.Background(), p+".absent"); err == nil {
		t.Error("a missing file hashed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := GGUFWeights(ctx, p); err == nil {
		t.Error("hashing ignores a cancelled context")
	}
}

// A local model directory's revision: a git checkout's HEAD commit and
// its commit date, else the one commit huggingface_hub's --local-dir
// download metadata names (first line of each .metadata file), else none
// (with a note when the files came from different commits).
func TestLocalDirRevision(t *testing.T) {
	const c1 = "11c5a3d5811f50298f278a704980280950aedb10"
	const c2 = "22c5a3d5811f50298f278a704980280950aedb10"
	meta := func(commit string) string {
		return commit + "\na16a55fda99d2f2e7b69cce5cf93ff4ad3049930\n1712656091.123\n"
	}
	dl := filepath.Join(".cache", "huggingface", "download")
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  Weights // Path filled in
	}{
		{"plain directory", map[string]string{"config.json": "{}"}, Weights{Source: "local-dir"}},
		{"downloaded at one commit", map[string]string{"config.json": "{}", filepath.Join(dl, "config.json.metadata"): meta(c1),
			filepath.Join(dl, "sub", "model.safetensors.metadata"): meta(c1)},
			Weights{Source: "local-dir", Revision: c1, RevisionFrom: "hf-download-metadata"}},
		{"downloaded at two commits", map[string]string{filepath.Join(dl, "a.metadata"): meta(c2), filepath.Join(dl, "b.metadata"): meta(c1)},
			Weights{Source: "local-dir", RevisionNote: "files downloaded at different commits: " + c1 + ", " + c2}},
		{"bad metadata is no revision", map[string]string{filepath.Join(dl, "a.metadata"): "not a commit\n"}, Weights{Source: "local-dir"}},
	} {
		dir := t.TempDir()
		for name, content := range tc.files {
			write(t, filepath.Join(dir, name), content)
		}
		tc.want.Path = dir
		got, err := LocalHFWeights(dir, "", t.TempDir())
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// A git checkout: HEAD's commit and its committer date, as git writes it
// (%cI, strict ISO 8601: the date given to the commit below).
func TestLocalDirRevisionGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "config.json"), "{}")
	env := append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a",
		"GIT_COMMITTER_EMAIL=a@example.com", "GIT_AUTHOR_DATE=2024-09-25T14:31:57+00:00", "GIT_COMMITTER_DATE=2024-09-25T14:31:57+00:00",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	for _, args := range [][]string{{"init", "-q"}, {"add", "config.json"}, {"commit", "-q", "-m", "weights"}} {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	cmd := exec.Command("git", "-C", dir, "rev-parse", "HEAD")
	cmd.Env = env
	head, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got, err := LocalHFWeights(dir, "", t.TempDir())
	want := Weights{Source: "local-dir", Path: dir, Revision: strings.TrimSpace(string(head)), RevisionFrom: "git", CommitDate: "2024-09-25T14:31:57+00:00"}
	if err != nil || got != want {
		t.Errorf("%+v, %v; want %+v", got, err, want)
	}
}
