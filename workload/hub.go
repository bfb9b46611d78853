package workload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/joulebench/joulebench/internal/redact"
	"github.com/joulebench/joulebench/internal/safename"
)

// HubPrefix starts a Hugging Face Hub dataset file's name:
// hf:OWNER/NAME[@REVISION]/PATH.
const HubPrefix = "hf:"

// DefaultHubEndpoint is the Hub's address; HF_ENDPOINT replaces it.
const DefaultHubEndpoint = "https://huggingface.co"

// Named maps the datasets known by name to their Hub files.
var named = map[string]string{
	// The ShareGPT set of vLLM's and SGLang's serving benchmarks.
	"sharegpt": "hf:anon8231489123/ShareGPT_Vicuna_unfiltered/ShareGPT_V3_unfiltered_cleaned_split.json",
}

// HubName returns the Hub file a dataset name stands for: the name itself
// when it starts with hf:, the Hub file of a named dataset (sharegpt), or
// "" for anything else (a built-in set, random, a file path).
func HubName(name string) string {
	if strings.HasPrefix(name, HubPrefix) {
		return name
	}
	return named[name]
}

// HubFile is one file of a Hub dataset repository.
type HubFile struct {
	Repo     string // owner/name
	Revision string // branch, tag or commit; "main" when not given
	Path     string // path inside the repository
}

// ParseHubFile reads hf:OWNER/NAME[@REVISION]/PATH. Every part becomes a
// segment of the request URL and of a path in the cache, so each is
// checked: OWNER and NAME are Hub names (letters, digits, '.', '_', '-',
// not starting with '.' or '-', at most 96 bytes); REVISION a branch, tag
// or commit; PATH segments neither empty, "." nor "..", without
// backslashes or control characters.
func ParseHubFile(name string) (HubFile, error) {
	rest, ok := strings.CutPrefix(name, HubPrefix)
	if !ok {
		return HubFile{}, fmt.Errorf("hub dataset %q: want hf:OWNER/NAME[@REVISION]/PATH", name)
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return HubFile{}, fmt.Errorf("hub dataset %q: want hf:OWNER/NAME[@REVISION]/PATH", name)
	}
	f := HubFile{Repo: parts[0] + "/" + parts[1], Revision: "main", Path: parts[2]}
	repoName := parts[1]
	if n, rev, ok := strings.Cut(parts[1], "@"); ok {
		repoName, f.Revision = n, rev
		f.Repo = parts[0] + "/" + n
	}
	for _, p := range []struct{ what, v string }{{"owner", parts[0]}, {"name", repoName}} {
		if !hubNameRE.MatchString(p.v) || strings.Contains(p.v, "..") {
			return HubFile{}, fmt.Errorf("hub dataset %q: bad repository %s %q: want letters, digits, '.', '_' or '-', not starting with '.' or '-', at most 96", name, p.what, p.v)
		}
	}
	if err := checkSegments(f.Revision); err != nil {
		return HubFile{}, fmt.Errorf("hub dataset %q: bad revision %q", name, f.Revision)
	}
	if err := checkSegments(f.Path); err != nil {
		return HubFile{}, fmt.Errorf("hub dataset %q: bad path %q: %w", name, f.Path, err)
	}
	return f, nil
}

// hubNameRE is a Hub owner or repository name.
var hubNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)

// checkSegments refuses a slash-separated path that could leave its
// directory or confuse a file system: empty, "." or ".." segments, a
// backslash, control characters (NUL included), invalid UTF-8, a segment
// over 255 bytes.
func checkSegments(p string) error {
	if !utf8.ValidString(p) {
		return errors.New("not valid UTF-8")
	}
	for _, seg := range strings.Split(p, "/") {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return fmt.Errorf("segment %q", seg)
		case len(seg) > 255:
			return fmt.Errorf("segment of %d bytes", len(seg))
		case strings.ContainsRune(seg, '\\'):
			return fmt.Errorf("backslash in %q", seg)
		}
		for _, r := range seg {
			if unicode.IsControl(r) {
				return fmt.Errorf("control character %U in %q", r, seg)
			}
		}
	}
	return nil
}

func (f HubFile) String() string {
	return HubPrefix + f.Repo + "@" + f.Revision + "/" + f.Path
}

// Origin says where a downloaded dataset file came from; it is recorded in
// run.json.
type Origin struct {
	// URL is the resolve URL the file was asked for.
	URL  string `json:"url"`
	Repo string `json:"repo"`
	// Revision is the commit the Hub resolved the requested revision to
	// (X-Repo-Commit), or the requested revision when the Hub gave none.
	Revision  string `json:"revision"`
	Requested string `json:"requested_revision,omitempty"`
	Path      string `json:"path"`
	SHA256    string `json:"sha256"`
	Size      int64  `json:"size"`
}

// Hub downloads dataset files from the Hugging Face Hub (or anything that
// answers like it) into a local cache: CacheDir/datasets/OWNER/NAME/COMMIT/PATH,
// with an ORIGIN file beside each (PATH.origin.json) that marks it complete
// and verified. A download in progress lives in CacheDir/partial, never in
// the dataset cache; an interrupted one (lost connection, truncated body) is
// resumed with a Range request the next time, a bad one (checksum mismatch,
// 404) is removed.
type Hub struct {
	// Endpoint is the Hub's base URL (DefaultHubEndpoint when empty).
	Endpoint string
	// Client sends the requests (http.DefaultClient when nil); redirects
	// are followed.
	Client *http.Client
	// CacheDir is joulebench's cache directory (see CacheDir).
	CacheDir string
	// Token, when set, is sent as a bearer token to the endpoint (gated and
	// private datasets).
	Token string
	// Progress, when set, is told the bytes written so far and the total
	// (-1 when unknown), including a resumed part.
	Progress func(done, total int64)
	// SHA256, when set, pins the file's expected hex sha256; otherwise the
	// Hub's ETag is the expected sha256 when it is one (large files).
	SHA256 string
	// ConnectTimeout bounds a connection's set-up, TLS included, of the
	// client built when Client is nil (DefaultConnectTimeout when 0).
	ConnectTimeout time.Duration
	// HeaderTimeout bounds the wait for a response's headers, connecting
	// included, whatever the client (DefaultHeaderTimeout when 0).
	HeaderTimeout time.Duration
	// IdleTimeout ends a download whose body sends nothing for that long
	// (DefaultIdleTimeout when 0); what came is kept and resumed.
	IdleTimeout time.Duration
	// Attempts is how many times a download cut short (a stall, a lost
	// connection, a truncated body) is tried in one Fetch, each resuming
	// where the last stopped (DefaultAttempts when 0).
	Attempts int
	// Note, when set, is told of each attempt that resumes a download cut
	// short, and why (with --no-progress a stall is otherwise silent).
	Note func(msg string)

	clientOnce sync.Once
	dflt       *http.Client
}

// Defaults of the Hub's timeouts and attempts.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultHeaderTimeout  = 60 * time.Second
	DefaultIdleTimeout    = 60 * time.Second
	DefaultAttempts       = 3
)

func orDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// CacheDir returns joulebench's cache directory: $XDG_CACHE_HOME/joulebench,
// else the user cache directory's joulebench (os.UserCacheDir).
func CacheDir() (string, error) {
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "joulebench"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache directory: %w", err)
	}
	return filepath.Join(d, "joulebench"), nil
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)
var commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// hubMeta is what the Hub says about a file before it is fetched.
type hubMeta struct {
	commit string
	etag   string // without quotes and W/
	size   int64  // -1 when unknown
	url    string // where to GET it (after the Hub's redirects)
}

// Fetch returns the local path of f, downloading it when the cache does not
// hold it, and where it came from. A revision that is a full commit hash
// already in the cache needs no network; a branch or tag is resolved by the
// Hub each time, and when the Hub cannot be reached the last commit it
// resolved to is used from the cache if there.
func (h *Hub) Fetch(ctx context.Context, f HubFile) (string, *Origin, error) {
	if h.CacheDir == "" {
		return "", nil, fmt.Errorf("hub %s: no cache directory", f)
	}
	// ParseHubFile checked every part; a HubFile built otherwise is
	// checked here, before any request or file.
	if _, err := ParseHubFile(f.String()); err != nil {
		return "", nil, err
	}
	if err := safename.Within(filepath.Join(h.CacheDir, "datasets"), h.filePath(f, f.Revision)); err != nil {
		return "", nil, fmt.Errorf("hub %s: %w", f, err)
	}
	if commitRE.MatchString(f.Revision) {
		if p, o, ok := h.cached(f, f.Revision); ok {
			return p, o, nil
		}
	}
	meta, err := h.head(ctx, f)
	if err != nil {
		var ne *netError
		if errors.As(err, &ne) {
			if commit, rerr := os.ReadFile(h.refPath(f)); rerr == nil {
				if p, o, ok := h.cached(f, strings.TrimSpace(string(commit))); ok {
					return p, o, nil
				}
			}
		}
		return "", nil, err
	}
	if p, o, ok := h.cached(f, meta.commit); ok {
		return p, o, h.writeRef(f, meta.commit)
	}
	want := strings.ToLower(h.SHA256)
	if want == "" && sha256RE.MatchString(meta.etag) {
		want = meta.etag
	}
	if want != "" && !sha256RE.MatchString(want) {
		return "", nil, fmt.Errorf("hub %s: expected sha256 %q is not 64 hex digits", f, h.SHA256)
	}
	part, sum, n, err := h.downloadResuming(ctx, f, meta, want)
	if err != nil {
		return "", nil, err
	}
	final := h.filePath(f, meta.commit)
	o := &Origin{URL: redact.URL(h.resolveURL(f)), Repo: f.Repo, Revision: meta.commit, Path: f.Path, SHA256: sum, Size: n}
	if meta.commit != f.Revision {
		o.Requested = f.Revision
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", nil, fmt.Errorf("hub %s: cache: %w", f, err)
	}
	if err := os.Rename(part, final); err != nil {
		os.Remove(part)
		return "", nil, fmt.Errorf("hub %s: cache: %w", f, err)
	}
	ob, _ := json.MarshalIndent(o, "", "  ")
	if err := writeAtomic(final+OriginSuffix, ob); err != nil {
		os.Remove(final)
		return "", nil, fmt.Errorf("hub %s: cache: %w", f, err)
	}
	return final, o, h.writeRef(f, meta.commit)
}

// OriginSuffix names the file beside a cached dataset that records where it
// came from.
const OriginSuffix = ".origin.json"

func (h *Hub) endpoint() string {
	if h.Endpoint != "" {
		return strings.TrimRight(h.Endpoint, "/")
	}
	return DefaultHubEndpoint
}

// client is Client, or one whose connections time out (http.DefaultClient
// has no timeout at all: a Hub that stops answering hung forever).
func (h *Hub) client() *http.Client {
	if h.Client != nil {
		return h.Client
	}
	h.clientOnce.Do(func() {
		connect := orDuration(h.ConnectTimeout, DefaultConnectTimeout)
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext
		tr.TLSHandshakeTimeout = connect
		tr.ResponseHeaderTimeout = orDuration(h.HeaderTimeout, DefaultHeaderTimeout)
		h.dflt = &http.Client{Transport: tr}
	})
	return h.dflt
}

// send sends req with c, giving up when no response headers arrive within
// the header timeout. The request lives in a context of its own; cancel
// ends it (with a cause) and must be called once the body is done with.
func (h *Hub) send(ctx context.Context, c *http.Client, req *http.Request) (*http.Response, context.Context, context.CancelCauseFunc, error) {
	rctx, cancel := context.WithCancelCause(ctx)
	ht := orDuration(h.HeaderTimeout, DefaultHeaderTimeout)
	timer := time.AfterFunc(ht, func() { cancel(&timeoutError{fmt.Sprintf("no response headers within %s", ht)}) })
	resp, err := c.Do(req.WithContext(rctx))
	timer.Stop()
	if err != nil {
		if cause := context.Cause(rctx); cause != nil && ctx.Err() == nil {
			err = cause
		}
		cancel(nil)
		return nil, nil, nil, err
	}
	return resp, rctx, cancel, nil
}

// unwrapURL drops the *url.Error around a client's error: its text
// repeats the URL with its query and the endpoint's credentials.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// timeoutError is a request that a timeout of the Hub's ended.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return e.msg }

// idleReader restarts its timer at every read that returns data; the
// timer cancels the request when the body stalls.
type idleReader struct {
	r     io.Reader
	timer *time.Timer
	idle  time.Duration
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.timer.Reset(ir.idle)
	}
	return n, err
}

// cutError is a download cut short with its partial file kept: Fetch
// tries again from where it stopped.
type cutError struct{ err error }

func (e *cutError) Error() string { return e.err.Error() }
func (e *cutError) Unwrap() error { return e.err }

// resolveURL is the Hub's address of the file at the requested revision:
// the endpoint's path followed by the file's, the endpoint's query (a
// signed mirror's) after the whole path, not before it.
func (h *Hub) resolveURL(f HubFile) string {
	segs := strings.Split(f.Path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	rest := "/datasets/" + f.Repo + "/resolve/" + url.PathEscape(f.Revision) + "/" + strings.Join(segs, "/")
	u, err := url.Parse(h.endpoint())
	if err != nil {
		// The request is refused with the parse error.
		return h.endpoint() + rest
	}
	p := strings.TrimRight(u.EscapedPath(), "/") + rest
	u.Path, err = url.PathUnescape(p)
	if err != nil {
		return h.endpoint() + rest
	}
	u.RawPath = p
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

func (h *Hub) repoDir(f HubFile) string {
	return filepath.Join(h.CacheDir, "datasets", filepath.FromSlash(f.Repo))
}

func (h *Hub) filePath(f HubFile, commit string) string {
	return filepath.Join(h.repoDir(f), commit, filepath.FromSlash(f.Path))
}

func (h *Hub) refPath(f HubFile) string {
	return filepath.Join(h.repoDir(f), "refs", url.PathEscape(f.Revision))
}

func (h *Hub) writeRef(f HubFile, commit string) error {
	if commit == f.Revision {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(h.refPath(f)), 0o755); err != nil {
		return fmt.Errorf("hub %s: cache: %w", f, err)
	}
	if err := writeAtomic(h.refPath(f), []byte(commit+"\n")); err != nil {
		return fmt.Errorf("hub %s: cache: %w", f, err)
	}
	return nil
}

// cached returns the cached file of f at commit when it is complete.
func (h *Hub) cached(f HubFile, commit string) (string, *Origin, bool) {
	p := h.filePath(f, commit)
	o, err := readOrigin(p)
	if err != nil {
		return "", nil, false
	}
	if st, err := os.Stat(p); err != nil || st.Size() != o.Size {
		return "", nil, false
	}
	return p, o, true
}

// netError marks a failure to reach the Hub at all.
type netError struct{ err error }

func (e *netError) Error() string { return e.err.Error() }
func (e *netError) Unwrap() error { return e.err }

func (h *Hub) newRequest(ctx context.Context, method, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, unwrapURL(err)
	}
	req.Header.Set("User-Agent", "joulebench")
	if h.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.Token)
	}
	return req, nil
}

// head asks the Hub about the file. The Hub answers a large file with a
// redirect to its storage carrying X-Repo-Commit, X-Linked-Etag (the
// sha256) and X-Linked-Size, and a small one directly with ETag (a git
// hash) and Content-Length; a renamed repository answers with a relative
// redirect first. The headers are read from the Hub's own answers.
func (h *Hub) head(ctx context.Context, f HubFile) (*hubMeta, error) {
	u := h.resolveURL(f)
	meta := &hubMeta{size: -1}
	take := func(hd http.Header) {
		if c := hd.Get("X-Repo-Commit"); c != "" {
			meta.commit = c
		}
		if e := hd.Get("X-Linked-Etag"); e != "" {
			meta.etag = cleanETag(e)
		} else if e := hd.Get("ETag"); e != "" && meta.etag == "" {
			meta.etag = cleanETag(e)
		}
		if s, err := strconv.ParseInt(hd.Get("X-Linked-Size"), 10, 64); err == nil {
			meta.size = s
		}
	}
	c := *h.client()
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if req.Response != nil {
			take(req.Response.Header)
		}
		return nil
	}
	req, err := h.newRequest(ctx, http.MethodHead, u)
	if err != nil {
		return nil, fmt.Errorf("hub %s: %w", f, unwrapURL(err))
	}
	// The connection is not kept for another request: a server that
	// answers HEAD with a body leaves it on the idle connection, and
	// net/http logs it ("Unsolicited response received on idle HTTP
	// channel"), request and token echoed included.
	req.Close = true
	resp, _, cancel, err := h.send(ctx, &c, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("hub %s: %w", f, ctx.Err())
		}
		return nil, &netError{fmt.Errorf("hub %s: cannot reach %s (no network? use a file path on a machine without internet): %w", f, redact.URL(h.endpoint()), unwrapURL(err))}
	}
	resp.Body.Close()
	cancel(nil)
	if err := statusError(f, resp); err != nil {
		return nil, err
	}
	take(resp.Header)
	if meta.size < 0 && resp.ContentLength >= 0 {
		meta.size = resp.ContentLength
	}
	meta.url = resp.Request.URL.String()
	if meta.commit == "" {
		meta.commit = f.Revision
	}
	if !commitRE.MatchString(meta.commit) && meta.commit != f.Revision {
		return nil, fmt.Errorf("hub %s: X-Repo-Commit %q is not a commit hash", f, meta.commit)
	}
	return meta, nil
}

func cleanETag(e string) string {
	return strings.ToLower(strings.Trim(strings.TrimPrefix(e, "W/"), `"`))
}

func statusError(f HubFile, resp *http.Response) error {
	switch {
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent:
		return nil
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("hub %s: not found (404): check the repository, revision and path", f)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("hub %s: access denied (%d): a gated or private dataset needs HF_TOKEN", f, resp.StatusCode)
	default:
		return fmt.Errorf("hub %s: %s from %s", f, resp.Status, redact.URL(resp.Request.URL.String()))
	}
}

// partialPath is where a download of f in the state meta describes lives
// until it is complete and verified.
func (h *Hub) partialPath(f HubFile, meta *hubMeta) string {
	k := sha256.Sum256([]byte(f.Repo + "\x00" + meta.commit + "\x00" + f.Path + "\x00" + meta.etag))
	return filepath.Join(h.CacheDir, "partial", hex.EncodeToString(k[:16])+".part")
}

// downloadResuming calls download until the file is complete, at most
// Attempts times while a download is cut short; each attempt resumes from
// the bytes the last one kept. The last error says how many were tried.
func (h *Hub) downloadResuming(ctx context.Context, f HubFile, meta *hubMeta, want string) (string, string, int64, error) {
	attempts := h.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	for i := 1; ; i++ {
		part, sum, n, err := h.download(ctx, f, meta, want)
		var cut *cutError
		if err == nil || !errors.As(err, &cut) || ctx.Err() != nil {
			return part, sum, n, err
		}
		if i >= attempts {
			return "", "", 0, fmt.Errorf("%w (%d attempts)", err, i)
		}
		if h.Note != nil {
			h.Note(fmt.Sprintf("%v; resuming (attempt %d of %d)", err, i+1, attempts))
		}
	}
}

// download fetches the file into its partial path, resuming what is there,
// and verifies it. It returns the partial path, the sha256 and the size.
func (h *Hub) download(ctx context.Context, f HubFile, meta *hubMeta, want string) (string, string, int64, error) {
	part := h.partialPath(f, meta)
	if err := os.MkdirAll(filepath.Dir(part), 0o755); err != nil {
		return "", "", 0, fmt.Errorf("hub %s: cache: %w", f, err)
	}
	var have int64
	if st, err := os.Stat(part); err == nil {
		have = st.Size()
	}
	if meta.size >= 0 && have > meta.size {
		os.Remove(part)
		have = 0
	}
	req, err := h.newRequest(ctx, http.MethodGet, h.resolveURL(f))
	if err != nil {
		return "", "", 0, fmt.Errorf("hub %s: %w", f, err)
	}
	if have > 0 {
		// No If-Range: the storage's own ETag may differ from the Hub's;
		// the partial file is keyed by the Hub's commit and ETag instead.
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	resp, rctx, cancel, err := h.send(ctx, h.client(), req)
	if err != nil {
		if ctx.Err() != nil {
			return "", "", 0, fmt.Errorf("hub %s: %w", f, ctx.Err())
		}
		return "", "", 0, &cutError{fmt.Errorf("hub %s: download: %w", f, unwrapURL(err))}
	}
	defer cancel(nil)
	defer resp.Body.Close()
	if err := statusError(f, resp); err != nil {
		if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable {
			os.Remove(part)
		}
		return "", "", 0, err
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if resp.StatusCode == http.StatusPartialContent {
		if !strings.HasPrefix(resp.Header.Get("Content-Range"), "bytes "+strconv.FormatInt(have, 10)+"-") {
			os.Remove(part)
			return "", "", 0, fmt.Errorf("hub %s: the server resumed at %q, not at byte %d; the partial download was removed, try again", f, resp.Header.Get("Content-Range"), have)
		}
		flags = os.O_WRONLY | os.O_APPEND
	} else {
		have = 0
	}
	total := meta.size
	if total < 0 && resp.ContentLength >= 0 {
		total = have + resp.ContentLength
	}
	out, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return "", "", 0, fmt.Errorf("hub %s: cache: %w", f, err)
	}
	w := &progressWriter{w: out, done: have, total: total, report: h.Progress}
	w.tell()
	idle := orDuration(h.IdleTimeout, DefaultIdleTimeout)
	stall := time.AfterFunc(idle, func() {
		cancel(&timeoutError{fmt.Sprintf("download stalled: nothing received for %s", idle)})
	})
	_, cerr := io.Copy(w, &idleReader{r: resp.Body, timer: stall, idle: idle})
	stall.Stop()
	var te *timeoutError
	if cause := context.Cause(rctx); cerr != nil && errors.As(cause, &te) {
		cerr = cause
	}
	if err := out.Sync(); err != nil && cerr == nil {
		cerr = err
	}
	if err := out.Close(); err != nil && cerr == nil {
		cerr = err
	}
	if cerr != nil {
		if ctx.Err() != nil {
			return "", "", 0, fmt.Errorf("hub %s: download interrupted at %d bytes (resumed next time): %w", f, w.done, ctx.Err())
		}
		return "", "", 0, &cutError{fmt.Errorf("hub %s: download cut at %d of %d bytes (resumed next time): %w", f, w.done, total, cerr)}
	}
	if total >= 0 && w.done != total {
		return "", "", 0, &cutError{fmt.Errorf("hub %s: truncated download: %d of %d bytes (resumed next time)", f, w.done, total)}
	}
	sum, n, err := fileSHA256(part)
	if err != nil {
		return "", "", 0, fmt.Errorf("hub %s: %w", f, err)
	}
	if want != "" && sum != want {
		os.Remove(part)
		return "", "", 0, fmt.Errorf("hub %s: checksum mismatch: sha256 %s, expected %s; the download was removed", f, sum, want)
	}
	return part, sum, n, nil
}

type progressWriter struct {
	w           io.Writer
	done, total int64
	report      func(done, total int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	p.tell()
	return n, err
}

func (p *progressWriter) tell() {
	if p.report != nil {
		p.report(p.done, p.total)
	}
}

func fileSHA256(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// readOrigin reads the origin file beside a cached dataset.
func readOrigin(dataPath string) (*Origin, error) {
	b, err := os.ReadFile(dataPath + OriginSuffix)
	if err != nil {
		return nil, err
	}
	var o Origin
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("%s: %w", dataPath+OriginSuffix, err)
	}
	return &o, nil
}

// writeAtomic writes data to a temp file beside path, syncs it and renames.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
