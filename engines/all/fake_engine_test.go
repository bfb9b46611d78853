package all_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/all"
)

// fakeEngine is a new engine kind written entirely in this file: its
// descriptor and one registration are all engines/all needs to validate,
// build, name, verify and scrape it.
type fakeEngine struct {
	opts   engines.Options
	remote engines.Remote
}

var (
	_ engines.Engine        = (*fakeEngine)(nil)
	_ engines.ModelNamer    = (*fakeEngine)(nil)
	_ engines.Expecter      = (*fakeEngine)(nil)
	_ engines.MetricsSource = (*fakeEngine)(nil)
)

func fakeDescriptor() engines.Descriptor {
	return engines.Descriptor{
		Kind:  "fake",
		Doc:   "a test engine",
		API:   engines.APIOpenAI,
		Flags: []string{"model", "slots"},
		Validate: func(o engines.Options) error {
			if o.Slots == 0 {
				return fmt.Errorf("--engine fake needs --slots")
			}
			return nil
		},
		Start:           func(o engines.Options) (engines.Engine, error) { return &fakeEngine{opts: o}, nil },
		Attach:          func(r engines.Remote) (engines.Engine, error) { return &fakeEngine{remote: r}, nil },
		DefaultFamilies: []string{"fake:busy"},
		ReportsRevision: true,
	}
}

func (f *fakeEngine) Kind() string                                       { return "fake" }
func (f *fakeEngine) Simulated() bool                                    { return false }
func (f *fakeEngine) Start(context.Context) error                        { return nil }
func (f *fakeEngine) WaitReady(context.Context, time.Duration) error     { return nil }
func (f *fakeEngine) Identity(context.Context) (engines.Identity, error) { return f.Expect(), nil }
func (f *fakeEngine) BaseURL() string                                    { return f.remote.URL }
func (f *fakeEngine) API() string                                        { return engines.APIOpenAI }
func (f *fakeEngine) Stop(context.Context, time.Duration) (time.Time, error) {
	return time.Now(), nil
}
func (f *fakeEngine) Exited() <-chan struct{}  { return nil }
func (f *fakeEngine) Info() record.EngineInfo  { return record.EngineInfo{Kind: "fake"} }
func (f *fakeEngine) RequestModel() string     { return "served-" + f.opts.Model + f.remote.Model }
func (f *fakeEngine) Expect() engines.Identity { return engines.Identity{Model: f.RequestModel()} }
func (f *fakeEngine) MetricsURL() string       { return f.remote.URL + "/metrics" }

func fakeRegistry(t *testing.T) *engines.Registry {
	t.Helper()
	reg := all.Registry()
	if err := reg.Register(fakeDescriptor()); err != nil { // the one registration
		t.Fatal(err)
	}
	return reg
}

func TestFakeEngineThroughRegistry(t *testing.T) {
	reg := fakeRegistry(t)
	if err := reg.Register(fakeDescriptor()); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a duplicate kind: %v", err)
	}
	// Validation comes from the descriptor; without the registry the kind
	// is unknown, and the error lists the kinds it knows.
	if err := (all.Spec{Kind: "fake", Engines: reg}).Validate(); err == nil || err.Error() != "--engine fake needs --slots" {
		t.Errorf("validate: %v", err)
	}
	if err := (all.Spec{Kind: "fake", Common: engines.Common{Slots: 2}}).Validate(); err == nil || !strings.Contains(err.Error(), "want one of vllm") {
		t.Errorf("the built-ins know no fake engine: %v", err)
	}
	if err := (all.Spec{Kind: "tgi", Engines: reg}).Validate(); err == nil || !strings.Contains(err.Error(), "ollama, sim, kubernetes, fake (or --engine-url URL)") {
		t.Errorf("the fake kind is listed among the startable ones: %v", err)
	}

	// Built, named and verified through the registry; run dir and options
	// reach the engine.
	spec := all.Spec{Kind: "fake", Engines: reg, RunDir: "/runs/x", Common: engines.Common{Model: "m", Slots: 2, Revision: "r1"}}
	e, err := all.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	f := e.(*fakeEngine)
	if f.opts.Slots != 2 || f.opts.RunDir != "/runs/x/engine" {
		t.Errorf("options %+v", f.opts)
	}
	if m := all.Model(spec, e); m != "served-m" {
		t.Errorf("model %q", m)
	}
	if id := all.Expect(spec, e); id.Model != "served-m" || id.Revision != "r1" {
		t.Errorf("expect %+v (the descriptor says the revision is reported)", id)
	}

	// Attached with --engine-url, scraped with its default families.
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "fake:busy 1\nfake:other 2\n")
	}))
	defer ts.Close()
	rspec := all.Spec{Kind: "fake", Engines: reg, URL: ts.URL, ScrapeInterval: 5 * time.Millisecond, Common: engines.Common{Model: "x"}}
	re, err := all.New(rspec)
	if err != nil {
		t.Fatal(err)
	}
	if re.(*fakeEngine).remote.URL != ts.URL || all.Model(rspec, re) != "served-x" {
		t.Errorf("remote %+v", re.(*fakeEngine).remote)
	}
	rec := newRecorder()
	sc := all.StartMetrics(context.Background(), rspec, re, all.MetricsConfig{Clock: func() float64 { return 1 }, Sink: rec.sink})
	if sc == nil {
		t.Fatal("no scraper")
	}
	rec.waitFirst(t)
	if err := sc.Stop(); err != nil {
		t.Fatal(err)
	}
	var scraped []string
	for _, m := range rec.samples() {
		scraped = append(scraped, m.Name)
	}
	if len(scraped) == 0 || slices.ContainsFunc(scraped, func(n string) bool { return n != "fake:busy" }) {
		t.Errorf("scraped %v, want only the descriptor's family fake:busy", scraped)
	}
}
