// Package browsertest opens files in a real headless Chromium (Debian's
// chromium package, found on PATH or at JOULEBENCH_CHROMIUM) through
// chromedp, for tests of the HTML reports. It records what a person would
// see go wrong: console errors, uncaught exceptions, log entries of level
// error, and any request that leaves the file (a self-contained page makes
// none).
//
// Without a browser a test skips, or fails when JOULEBENCH_REQUIRE_BROWSER=1
// (CI sets it, having installed chromium). A page of a failed test is
// saved as a full-page PNG under JOULEBENCH_ARTIFACTS when set, else
// under the test's temporary directory; the path is logged.
package browsertest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Env names.
const (
	RequireEnv   = "JOULEBENCH_REQUIRE_BROWSER"
	ChromiumEnv  = "JOULEBENCH_CHROMIUM"
	ArtifactsEnv = "JOULEBENCH_ARTIFACTS"
)

// Timeout bounds one page's load and checks.
const Timeout = 60 * time.Second

// Find returns the Chromium executable, or skips the test (fails it when
// JOULEBENCH_REQUIRE_BROWSER=1).
func Find(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(ChromiumEnv); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("no chromium on PATH (%s=1; .ci/run installs Debian's chromium package)", RequireEnv)
	}
	t.Skip("no chromium on PATH: install Debian's chromium package, or set " + ChromiumEnv)
	return ""
}

// Page is one file opened in its own browser.
type Page struct {
	Ctx  context.Context
	path string

	mu       sync.Mutex
	problems []string
	requests []string
}

// Open starts a headless Chromium, loads path from a file:// URL and
// waits until the page's scripts say they are done (body[data-ready]).
// The browser is stopped when the test ends.
func Open(t *testing.T, path string) *Page {
	t.Helper()
	exe := Find(t)
	if testing.Short() {
		t.Skip("starts a browser")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1300, 1000), chromedp.Flag("headless", true))
	p := &Page{path: abs}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx, chromedp.WithListener(p.listen))
	ctx, cancelT := context.WithTimeout(ctx, Timeout)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	p.Ctx = ctx
	t.Cleanup(func() {
		if t.Failed() {
			p.saveScreenshot(t)
		}
	})
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	if _, err = chromedp.Call(ctx, network.Enable, network.EnableParams{}); err == nil {
		if _, err = chromedp.Call(ctx, log.Enable, cdp.Empty{}); err == nil {
			err = chromedp.Do(ctx, chromedp.Navigate(u.String()), chromedp.WaitVisible(chromedp.CSS("body[data-ready]")))
		}
	}
	if err != nil {
		t.Fatalf("open %s in chromium: %v (problems so far: %v)", path, err, p.Problems())
	}
	return p
}

func (p *Page) listen(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if typ := string(e.Type); typ == "error" || typ == "assert" || typ == "warning" {
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, strings.Trim(string(a.Value), `"`)+a.Description)
			}
			p.problems = append(p.problems, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(parts, " ")))
		}
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		p.problems = append(p.problems, fmt.Sprintf("exception at %s:%d:%d: %s", d.URL, d.LineNumber+1, d.ColumnNumber+1, msg))
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError {
			p.problems = append(p.problems, fmt.Sprintf("log error (%s): %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		p.requests = append(p.requests, e.Request.URL)
	}
}

// Problems are the console errors and warnings, exceptions and error log
// entries seen so far.
func (p *Page) Problems() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.problems...)
}

// External lists the requests for anything but the file itself and
// data: URLs.
func (p *Page) External() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, r := range p.requests {
		u, err := url.Parse(r)
		if err == nil && (u.Scheme == "data" || u.Scheme == "file" && u.Path == filepath.ToSlash(p.path)) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// CheckClean fails the test on a console problem or an external request.
func (p *Page) CheckClean(t *testing.T) {
	t.Helper()
	if pr := p.Problems(); len(pr) > 0 {
		t.Errorf("console problems:\n%s", strings.Join(pr, "\n"))
	}
	if ex := p.External(); len(ex) > 0 {
		t.Errorf("the page requested something besides itself: %v", ex)
	}
}

// Eval evaluates a JavaScript expression and decodes its JSON value.
func Eval[T any](t *testing.T, p *Page, expr string) T {
	t.Helper()
	v, err := chromedp.Run(p.Ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// Hover moves the mouse to (x, y) in the viewport's CSS pixels, as a person
// would (a real input event, dispatched by the browser).
func (p *Page) Hover(t *testing.T, x, y float64) {
	t.Helper()
	if err := chromedp.Do(p.Ctx, chromedp.MouseEvent(chromedp.MouseMoved, x, y)); err != nil {
		t.Fatalf("hover at (%g, %g): %v", x, y, err)
	}
}

// Screenshot writes a full-page PNG to file.
func (p *Page) Screenshot(file string) error {
	ctx, cancel := context.WithTimeout(p.Ctx, 20*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return fmt.Errorf("screenshot: %w", err)
	}
	if err := os.WriteFile(file, buf, 0o644); err != nil {
		return fmt.Errorf("screenshot: %w", err)
	}
	return nil
}

func (p *Page) saveScreenshot(t *testing.T) {
	dir := os.Getenv(ArtifactsEnv)
	if dir == "" {
		dir = t.TempDir()
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "-" + strings.TrimSuffix(filepath.Base(p.path), filepath.Ext(p.path)) + ".png"
	file := filepath.Join(dir, name)
	if err := p.Screenshot(file); err != nil {
		t.Logf("no screenshot of the failed page: %v", err)
		return
	}
	t.Logf("screenshot of the failed page: %s", file)
}

// NodeRect is an element's box in CSS pixels of the viewport (where
// Hover's coordinates are).
type NodeRect struct{ X, Y, Width, Height float64 }

// Rect returns the bounding box of the first element matching sel.
func (p *Page) Rect(t *testing.T, sel string) NodeRect {
	t.Helper()
	if !Eval[bool](t, p, fmt.Sprintf(`document.querySelector(%q) !== null`, sel)) {
		t.Fatalf("no element %s", sel)
	}
	return Eval[NodeRect](t, p, fmt.Sprintf(`(function(){var b=document.querySelector(%q).getBoundingClientRect(); return {X:b.left,Y:b.top,Width:b.width,Height:b.height};})()`, sel))
}

// ScrollTo scrolls the element into view, so that it can be hovered.
func (p *Page) ScrollTo(t *testing.T, sel string) {
	t.Helper()
	if err := chromedp.Do(p.Ctx, chromedp.ScrollIntoView(chromedp.CSS(sel))); err != nil {
		t.Fatalf("scroll to %s: %v", sel, err)
	}
}
