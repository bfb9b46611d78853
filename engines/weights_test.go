package engines

import (
	"context"
	"os"
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
		{"org/m", "", Weights{Source: "hf-snapshot", Path: filepath.Join(repo, "snapshots", commit), Repo: "org/m", Revision: commit}, ""},
		{"org/m", "main", Weights{Source: "hf-snapshot", Path: filepath.Join(repo, "snapshots", commit), Repo: "org/m", Revision: commit}, ""},
		{"org/m", commit, Weights{Source: "hf-snapshot", Path: filepath.Join(repo, "snapshots", commit), Repo: "org/m", Revision: commit}, ""},
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
