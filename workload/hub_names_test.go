package workload

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/joulebench/joulebench/internal/safename"
)

// Every part of hf:OWNER/NAME[@REVISION]/PATH becomes a URL segment and a
// cache path segment: each is checked over the categories of a hostile
// name (before, hf:../..@main/x.jsonl wrote $XDG_CACHE_HOME/main/x.jsonl
// and asked for /datasets/../../).
func TestParseHubFileSegments(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"hf:o/n/x.jsonl", true},
		{"hf:o/n@main/sub/x.jsonl", true},
		{"hf:anon8231489123/ShareGPT_Vicuna_unfiltered/ShareGPT_V3_unfiltered_cleaned_split.json", true},
		{"hf:o/n@" + hubCommit + "/x.json", true},
		{"hf:o/n/données/é.json", true}, // a unicode file name is a file name
		{"hf:../..@main/x.jsonl", false},
		{"hf:../n/x.jsonl", false},
		{"hf:o/..@main/x.jsonl", false},
		{"hf:./n/x", false},
		{"hf:o/./x", false},
		{"hf:o/n..x/y", false},
		{"hf:.o/n/x", false},
		{"hf:-o/n/x", false},
		{"hf:o/n@../x", false},
		{"hf:o/n@./x", false},
		{"hf:o/n@/x", false},
		{"hf:o/n@a\\b/x", false},
		{"hf:o/n/../x", false},
		{"hf:o/n/a/../../x", false},
		{"hf:o/n/./x", false},
		{"hf:o/n/a//x", false},
		{"hf:o/n/a/", false},
		{"hf:/etc/passwd", false},
		{"hf:o//etc/passwd", false},
		{"hf:o/n//etc/passwd", false},
		{"hf:o\\..\\n/x", false},
		{"hf:o/n/..\\..\\x", false},
		{"hf:o/n/a\x00b", false},
		{"hf:o\x00/n/x", false},
		{"hf:o/n/a\nb", false},
		{"hf:o/n@ma\x7fin/x", false},
		{"hf:ö/n/x", false},
		{"hf:o/n\u2215x/y", false},
		{"hf:o/n/\xff", false},
		{"hf:" + strings.Repeat("o", 97) + "/n/x", false},
		{"hf:o/n/" + strings.Repeat("x", 256), false},
		{"hf:", false},
		{"hf:o/n", false},
		{"hf:o/n/", false},
		{"hf://n/x", false},
	}
	for _, c := range cases {
		f, err := ParseHubFile(c.name)
		if (err == nil) != c.ok {
			t.Errorf("ParseHubFile(%q) = %+v, %v; want ok=%v", c.name, f, err, c.ok)
		}
	}
}

// Whatever ParseHubFile accepts stays inside the dataset cache and asks
// for a URL under /datasets/OWNER/NAME/resolve/ with no dot segments.
func FuzzParseHubFile(f *testing.F) {
	for _, s := range []string{"hf:o/n/x.jsonl", "hf:../..@main/x.jsonl", "hf:o/n@v1/a/b.json", "hf:o/n/a\\b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		hf, err := ParseHubFile(name)
		if err != nil {
			return
		}
		cache := filepath.Join("cache", "joulebench")
		h := &Hub{Endpoint: "http://127.0.0.1:1", CacheDir: cache}
		for _, p := range []string{h.filePath(hf, hf.Revision), h.refPath(hf), h.filePath(hf, hubCommit)} {
			if err := safename.Within(filepath.Join(cache, "datasets"), p); err != nil {
				t.Fatalf("%q: %v", name, err)
			}
		}
		u, err := url.Parse(h.resolveURL(hf))
		if err != nil {
			t.Fatalf("%q: resolve URL: %v", name, err)
		}
		if !strings.HasPrefix(u.Path, "/datasets/"+hf.Repo+"/resolve/") || strings.Contains(u.Path, "/../") || strings.Contains(u.Path, "/./") {
			t.Fatalf("%q: resolve URL path %q", name, u.Path)
		}
	})
}

// A HubFile with a bad part that did not come through ParseHubFile is
// refused by Fetch before any request is sent or file written.
func TestHubFetchRefusesBadParts(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Error(w, "no", http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	h := &Hub{Endpoint: srv.URL, Client: srv.Client(), CacheDir: t.TempDir()}
	for _, f := range []HubFile{
		{Repo: "../..", Revision: "main", Path: "x.jsonl"},
		{Repo: "o/n", Revision: "..", Path: "x.jsonl"},
		{Repo: "o/n", Revision: "main", Path: "../../x.jsonl"},
		{Repo: "o/n/../../..", Revision: "main", Path: "x"},
	} {
		if _, _, err := h.Fetch(context.Background(), f); err == nil {
			t.Errorf("Fetch(%+v): no error", f)
		}
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("%d requests sent for bad names", n)
	}
	if c := cacheFiles(t, h.CacheDir); len(c) != 0 {
		t.Errorf("cache holds %v", c)
	}
}

// --hf-endpoint's credentials and query values appear in no error, nor in
// the Origin recorded in run.json and the cache.
func TestHubEndpointSecretsHidden(t *testing.T) {
	const pw, q = "hUbPaSs", "hUbQuErY"
	withSecrets := func(base string) string {
		return strings.Replace(base, "http://", "http://u:"+pw+"@", 1) + "/?tok=" + q
	}
	fails := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "teapot", http.StatusTeapot)
	}))
	t.Cleanup(fails.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := withSecrets(closed.URL)
	closed.Close()
	fh, good := newFakeHub(t)
	fh.files["small.json"] = []byte(shareGPTArray)
	f, err := ParseHubFile("hf:o/n/small.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, endpoint, want string }{
		{"unreachable", closedURL, "cannot reach http://u:[redacted]@127.0.0.1"},
		{"http error", withSecrets(fails.URL), "418"},
	} {
		h := &Hub{Endpoint: c.endpoint, CacheDir: t.TempDir(), HeaderTimeout: 5e9}
		_, _, err := h.Fetch(context.Background(), f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), q) {
			t.Errorf("%s: error shows a secret: %v", c.name, err)
		}
	}
	// The fake Hub ignores the query; the user info is only sent.
	h := &Hub{Endpoint: strings.Replace(good.URL, "http://", "http://u:"+pw+"@", 1), Client: good.Client(), CacheDir: t.TempDir()}
	_, o, err := h.Fetch(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(o.URL, pw) || !strings.Contains(o.URL, "/datasets/o/n/resolve/") {
		t.Errorf("Origin.URL = %q", o.URL)
	}
}
