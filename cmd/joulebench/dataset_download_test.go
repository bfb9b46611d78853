package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A ShareGPT-layout file of two conversations: what the fake Hub serves.
const hubShareGPT = `[{"id":"a","conversations":[{"from":"human","value":"Say hello."},{"from":"gpt","value":"Hello there, friend."}]},
{"id":"b","conversations":[{"from":"human","value":"Count to three."},{"from":"gpt","value":"One, two, three."}]}]`

const hubTestCommit = "89abcdef0123456789abcdef0123456789abcdef"

// hubServer answers like the Hugging Face Hub for the dataset repo o/n:
// /datasets/o/n/resolve/REV/sg.json redirects to its storage with
// X-Repo-Commit, X-Linked-Etag (sha256, or etag when set) and
// X-Linked-Size; any other file is 404. With truncate the storage sends
// half of the body and hangs up.
func hubServer(t *testing.T, etag string, truncate bool) *httptest.Server {
	t.Helper()
	data := []byte(hubShareGPT)
	sum := sha256.Sum256(data)
	if etag == "" {
		etag = hex.EncodeToString(sum[:])
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/datasets/o/n/resolve/{rev}/{path...}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("path") != "sg.json" {
			http.Error(w, "Entry not found", http.StatusNotFound)
			return
		}
		w.Header().Set("X-Repo-Commit", hubTestCommit)
		w.Header().Set("X-Linked-Etag", `"`+etag+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(data)))
		http.Redirect(w, r, "/cdn/sg.json", http.StatusFound)
	})
	mux.HandleFunc("/cdn/sg.json", func(w http.ResponseWriter, r *http.Request) {
		if truncate && r.Method == http.MethodGet {
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(data[:len(data)/2])
			return
		}
		http.ServeContent(w, r, "sg.json", time.Time{}, bytes.NewReader(data))
	})
	srv := httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(srv.Close)
	return srv
}

// A bad download ends the run command with exit 2 before anything
// starts: no run directory, and nothing in the dataset cache
// ($XDG_CACHE_HOME/joulebench/datasets). A cut body leaves only its
// resumable .part under joulebench/partial, which the next download
// continues (the issue asks for resumable downloads); every other failure
// leaves no file at all.
func TestRunBadDownloadExit2(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		etag     string
		truncate bool
		closed   bool
		extra    []string
		want     string
	}{
		{name: "404", file: "hf:o/n/absent.json", want: "not found (404)"},
		{name: "truncated body", file: "hf:o/n/sg.json", truncate: true, want: "dataset hf:o/n/sg.json"},
		{name: "checksum mismatch (Hub ETag)", file: "hf:o/n/sg.json", etag: strings.Repeat("1", 64), want: "checksum mismatch"},
		{name: "checksum mismatch (--dataset-sha256)", file: "hf:o/n/sg.json", extra: []string{"--dataset-sha256", strings.Repeat("2", 64)}, want: "mismatch"},
		{name: "no network", file: "hf:o/n/sg.json", closed: true, want: "cannot reach"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := t.TempDir()
			t.Setenv("XDG_CACHE_HOME", cache)
			t.Setenv("HF_TOKEN", "")
			srv := hubServer(t, tt.etag, tt.truncate)
			if tt.closed {
				srv.Close() // nothing answers there any more
			}
			out := filepath.Join(t.TempDir(), "run")
			args := append([]string{"run", "benchmark-1.5", "--out", out, "--no-progress", "--set", "accept_unsteady=true",
				"--dataset", tt.file, "--hf-endpoint", srv.URL}, tt.extra...)
			_, stderr, code := runCLI(t, args...)
			if code != exitInvalid || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s", code, exitInvalid, tt.want, stderr)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("run directory %s exists after a bad download (%v)", out, err)
			}
			var left []string
			_ = filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(cache, p)
					left = append(left, filepath.ToSlash(rel))
				}
				return nil
			})
			for _, f := range left {
				resumable := tt.truncate && strings.HasPrefix(f, "joulebench/partial/") && strings.HasSuffix(f, ".part")
				if !resumable {
					t.Errorf("dataset cache holds %s after a bad download", f)
				}
			}
		})
	}
}

// The same server with the right file: the run gets past the download
// (the test above fails for the download, not for the command line).
func TestRunGoodDownloadCached(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	srv := hubServer(t, "", false)
	out := filepath.Join(t.TempDir(), "run")
	_, stderr, code := runCLI(t, "run", "benchmark-1.5", "--out", out, "--no-progress", "--dataset", "hf:o/n/sg.json",
		"--hf-endpoint", srv.URL, "--set", "request_count=4", "--set", "accept_unsteady=true", "--set", "warmup_requests=1",
		"--set", "baseline=1s", "--set", "release_hold=1s", "--set", "max_tokens=8")
	if code != exitOK && code != exitChecks {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "sha256") {
		t.Errorf("the download is not reported:\n%s", stderr)
	}
	run := loadRun(t, out)
	if o := run.Meta.RequestSet.Origin; o == nil || o.Revision != hubTestCommit {
		t.Errorf("request set origin %+v", run.Meta.RequestSet.Origin)
	}
}
