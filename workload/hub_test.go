package workload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const hubCommit = "0123456789abcdef0123456789abcdef01234567"

// fakeHub answers like the Hugging Face Hub: /datasets/REPO/resolve/REV/PATH
// redirects a large file to its storage (/cdn/NAME) with X-Repo-Commit,
// X-Linked-Etag (the sha256) and X-Linked-Size, answers a small file
// directly with a git-hash ETag, and 404s the rest. Storage honours Range.
type fakeHub struct {
	files      map[string][]byte // path in repo o/n → content
	etag       map[string]string // path → X-Linked-Etag override
	truncate   atomic.Bool       // storage sends half the body and hangs up
	gets       atomic.Int32
	rangeAsked atomic.Value // last Range header
}

func newFakeHub(t *testing.T) (*fakeHub, *httptest.Server) {
	fh := &fakeHub{files: map[string][]byte{}, etag: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/datasets/o/n/resolve/{rev}/{path...}", func(w http.ResponseWriter, r *http.Request) {
		rev, path := r.PathValue("rev"), r.PathValue("path")
		data, ok := fh.files[path]
		if !ok || (rev != "main" && rev != hubCommit) {
			http.Error(w, "Entry not found", http.StatusNotFound)
			return
		}
		w.Header().Set("X-Repo-Commit", hubCommit)
		if strings.HasPrefix(path, "small") {
			w.Header().Set("ETag", `"`+strings.Repeat("ab", 20)+`"`)
			http.ServeContent(w, r, path, time.Time{}, bytes.NewReader(data))
			return
		}
		sum := sha256.Sum256(data)
		et := hex.EncodeToString(sum[:])
		if o, ok := fh.etag[path]; ok {
			et = o
		}
		w.Header().Set("X-Linked-Etag", `"`+et+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(data)))
		http.Redirect(w, r, "/cdn/"+path, http.StatusFound)
	})
	mux.HandleFunc("/cdn/{path...}", func(w http.ResponseWriter, r *http.Request) {
		data := fh.files[r.PathValue("path")]
		if r.Method == http.MethodGet {
			fh.gets.Add(1)
			fh.rangeAsked.Store(r.Header.Get("Range"))
		}
		if fh.truncate.Load() && r.Method == http.MethodGet {
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			w.WriteHeader(http.StatusOK)
			w.Write(data[:len(data)/2])
			return // the server closes the connection: a cut body
		}
		http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(data))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return fh, srv
}

func hubFor(t *testing.T, srv *httptest.Server) *Hub {
	return &Hub{Endpoint: srv.URL, Client: srv.Client(), CacheDir: t.TempDir()}
}

// cacheFiles lists the regular files under dir/datasets.
func cacheFiles(t *testing.T, dir string) []string {
	var out []string
	filepath.WalkDir(filepath.Join(dir, "datasets"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

func TestHubFetch(t *testing.T) {
	fh, srv := newFakeHub(t)
	data := []byte(shareGPTArray)
	fh.files["sub/sg.json"] = data
	h := hubFor(t, srv)
	var last, total int64
	h.Progress = func(d, tot int64) { last, total = d, tot }
	f, err := ParseHubFile("hf:o/n/sub/sg.json")
	if err != nil {
		t.Fatal(err)
	}
	path, o, err := h.Fetch(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	if o.SHA256 != want || o.Revision != hubCommit || o.Requested != "main" || o.Size != int64(len(data)) ||
		o.URL != srv.URL+"/datasets/o/n/resolve/main/sub/sg.json" || o.Repo != "o/n" || o.Path != "sub/sg.json" {
		t.Errorf("origin = %+v", o)
	}
	if last != int64(len(data)) || total != int64(len(data)) {
		t.Errorf("progress ended at %d of %d, want %d", last, total, len(data))
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Error("cached content differs")
	}
	wantPath := filepath.Join(h.CacheDir, "datasets", "o", "n", hubCommit, "sub", "sg.json")
	if path != wantPath {
		t.Errorf("path %s, want %s", path, wantPath)
	}
	// The set loaded from the cache carries the origin.
	set, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if set.Origin == nil || set.Origin.SHA256 != want {
		t.Errorf("set origin = %+v", set.Origin)
	}
	// A second fetch is served from the cache: no new GET of the body.
	gets := fh.gets.Load()
	if _, _, err := h.Fetch(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if fh.gets.Load() != gets {
		t.Error("second fetch downloaded again")
	}
	// Offline: the branch resolves through the cached ref, the commit directly.
	srv.Close()
	for _, name := range []string{"hf:o/n/sub/sg.json", "hf:o/n@" + hubCommit + "/sub/sg.json"} {
		f, _ := ParseHubFile(name)
		if p, _, err := h.Fetch(context.Background(), f); err != nil || p != wantPath {
			t.Errorf("offline %s: %v, %s", name, err, p)
		}
	}
}

func TestHubSmallFileETagIsNotSHA256(t *testing.T) {
	fh, srv := newFakeHub(t)
	fh.files["small.jsonl"] = []byte(`{"prompt":"hi"}` + "\n")
	h := hubFor(t, srv)
	f, _ := ParseHubFile("hf:o/n/small.jsonl")
	_, o, err := h.Fetch(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(fh.files["small.jsonl"])
	if o.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("sha256 %s", o.SHA256)
	}
	// A pinned checksum that does not match fails, and nothing stays.
	h2 := hubFor(t, srv)
	h2.SHA256 = strings.Repeat("0", 64)
	if _, _, err := h2.Fetch(context.Background(), f); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("pinned mismatch: %v", err)
	}
	if c := cacheFiles(t, h2.CacheDir); len(c) != 0 {
		t.Errorf("cache holds %v", c)
	}
}

func TestHubFailures(t *testing.T) {
	tests := []struct {
		name  string
		setup func(fh *fakeHub)
		file  string
		want  string
	}{
		{"404", func(*fakeHub) {}, "hf:o/n/nope.json", "not found (404)"},
		{"bad revision 404", func(fh *fakeHub) { fh.files["a.json"] = []byte("[]") }, "hf:o/n@v9/a.json", "not found (404)"},
		{"checksum mismatch", func(fh *fakeHub) {
			fh.files["a.json"] = []byte(shareGPTArray)
			fh.etag["a.json"] = strings.Repeat("1", 64)
		}, "hf:o/n/a.json", "checksum mismatch"},
		{"truncated body", func(fh *fakeHub) {
			fh.files["a.json"] = []byte(shareGPTArray)
			fh.truncate.Store(true)
		}, "hf:o/n/a.json", "resumed next time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fh, srv := newFakeHub(t)
			tt.setup(fh)
			h := hubFor(t, srv)
			f, err := ParseHubFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = h.Fetch(context.Background(), f)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if c := cacheFiles(t, h.CacheDir); len(c) != 0 {
				t.Errorf("dataset cache holds %v after a failed download", c)
			}
		})
	}
}

func TestHubNoNetwork(t *testing.T) {
	_, srv := newFakeHub(t)
	h := hubFor(t, srv)
	srv.Close() // nothing answers there any more
	f, _ := ParseHubFile("hf:o/n/a.json")
	_, _, err := h.Fetch(context.Background(), f)
	if err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("error %v", err)
	}
	if c := cacheFiles(t, h.CacheDir); len(c) != 0 {
		t.Errorf("cache holds %v", c)
	}
}

func TestHubResume(t *testing.T) {
	fh, srv := newFakeHub(t)
	data := []byte(shareGPTArray)
	fh.files["a.json"] = data
	h := hubFor(t, srv)
	f, _ := ParseHubFile("hf:o/n/a.json")
	fh.truncate.Store(true)
	if _, _, err := h.Fetch(context.Background(), f); err == nil {
		t.Fatal("cut download succeeded")
	}
	fh.truncate.Store(false)
	var first int64 = -1
	h.Progress = func(d, _ int64) {
		if first < 0 {
			first = d
		}
	}
	path, o, err := h.Fetch(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	// The first half (len/2 bytes) was kept and only the rest asked for.
	half := len(data) / 2
	if got := fh.rangeAsked.Load(); got != "bytes="+strconv.Itoa(half)+"-" {
		t.Errorf("Range %q, want bytes=%d-", got, half)
	}
	if first != int64(half) {
		t.Errorf("progress started at %d, want %d", first, half)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) || o.Size != int64(len(data)) {
		t.Error("resumed file differs")
	}
	if ents, _ := os.ReadDir(filepath.Join(h.CacheDir, "partial")); len(ents) != 0 {
		t.Errorf("partial holds %d files after success", len(ents))
	}
}

func TestParseHubFile(t *testing.T) {
	tests := []struct {
		in   string
		want HubFile
		bad  bool
	}{
		{in: "hf:o/n/f.json", want: HubFile{Repo: "o/n", Revision: "main", Path: "f.json"}},
		{in: "hf:o/n@v1.0/d/f.jsonl", want: HubFile{Repo: "o/n", Revision: "v1.0", Path: "d/f.jsonl"}},
		{in: "hf:o/n", bad: true},
		{in: "hf:o/n/../x", bad: true},
		{in: "hf:o/n@/f", bad: true},
		{in: "o/n/f", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseHubFile(tt.in)
		if (err != nil) != tt.bad || (!tt.bad && got != tt.want) {
			t.Errorf("%s: %+v, %v", tt.in, got, err)
		}
	}
	if HubName("sharegpt") == "" || HubName("chat") != "" || HubName("hf:a/b/c") != "hf:a/b/c" {
		t.Error("HubName")
	}
}
