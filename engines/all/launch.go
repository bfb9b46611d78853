// This file builds the engine of a run from one Spec (what the run
// command's flags say): a managed vLLM, SGLang, llama.cpp or Ollama
// server, the simulator, or an already running server (Spec.URL). It also
// builds the request client that fits the engine's API, the identity the
// verify step compares, and starts the engine-metrics side path.
//
// Which kinds exist, how each starts or attaches to a running server,
// which options it needs and what it reports come from the engines'
// descriptors (engines.Registry; Spec.Engines, default Registry()): no
// engine kind is named here. Optional abilities of an engine are the
// named interfaces of package engines (MetricsSource, Externaler,
// Expecter, ExitReporter, ModelNamer, RunInfoSetter, ModelResolver).

package all

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/internal/streamcore"
	"github.com/joulebench/joulebench/engines/process"
	"github.com/joulebench/joulebench/engines/prom"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workload"
)

// The engine clients are the load generator's Doers; loadgen itself knows
// none of them.
var _ loadgen.Doer = engines.Client(nil)

// Thinking settings (Spec.Thinking).
const (
	ThinkingDefault = ""
	ThinkingOn      = "on"
	ThinkingOff     = "off"
)

// DefaultScrapeInterval is the /metrics interval when Spec.ScrapeInterval
// is 0.
const DefaultScrapeInterval = 5 * time.Second

// Spec is the frozen configuration of a run's engine.
type Spec struct {
	// RunID names the run in each request's X-Request-Id header.
	RunID string
	// Kind is a kind the registry can start; with URL one it can attach
	// to, e.g. "openai" (any OpenAI-compatible server), or "" (the kind
	// follows API).
	Kind string
	// Engines is the registry the kind is looked up in (nil: the built-in
	// engines, engines/all).
	Engines *engines.Registry
	// URL, when set, is an already running server: nothing is started.
	URL string
	// API is openai or ollama for URL ("" follows Kind).
	API string
	// Common are the engine options every kind reads its part of (Bin,
	// Args, Env, Model, ModelFile, Revision, Port, TP, MaxModelLen, Slots,
	// Seed, Log, HTTP).
	engines.Common
	// Settings are the engine-specific options, by the flag their kind's
	// descriptor declares (e.g. SGLang's health-generate, Ollama's
	// ollama-api and ollama-pull).
	Settings engines.Settings
	// EngineVersion, when set, is the engine version the identity check
	// expects.
	EngineVersion string
	// Precision, when set, is the precision the identity check expects
	// (--precision: bf16, fp16, fp8, awq, q4_k_m, ...), instead of what
	// the engine's options or model file ask for.
	Precision string
	// Thinking is "", "on" or "off": sent with every request the way the
	// request API takes it (engines.ClientConfig.Think); recorded in
	// run.json.
	Thinking string
	// ScrapeInterval and MetricFamilies configure the /metrics side path
	// (defaults: DefaultScrapeInterval, DefaultFamilies(kind)).
	ScrapeInterval time.Duration
	MetricFamilies []string
	// RunDir is the run's directory: the engine works in RunDir/engine
	// (its compile caches in RunDir/engine/compile-cache).
	RunDir string
	// Note, when set, is told how a slow readiness wait of an already
	// running server (URL) goes.
	Note func(string)
	// APIKey, when set, is sent as "Authorization: Bearer ..." with every
	// request to the engine (queries and benchmark requests alike). It is
	// never logged nor written to the archive.
	APIKey string
	// Quick asks for the run's quick mode (engines.Options.Quick).
	Quick bool
	// PidDir, when set, receives a managed engine's pid file while it
	// runs, so that a later run reports it if joulebench dies without
	// stopping it (process.Orphans; default: none).
	PidDir string
}

// tracker is a managed engine that can be watched beyond its process
// group (process.Server).
type tracker interface {
	SetTracking(process.Tracking)
}

// registry is the spec's engine registry.
func (s Spec) registry() *engines.Registry {
	if s.Engines != nil {
		return s.Engines
	}
	return Registry()
}

// Descriptor is the descriptor of the spec's engine: the kind it starts,
// or for URL the kind it attaches to.
func (s Spec) Descriptor() (engines.Descriptor, error) {
	if s.URL != "" {
		return s.registry().ForRemote(s.Kind, s.API)
	}
	return s.registry().ForStart(s.Kind)
}

// IsExternal reports whether e is an already running server.
func IsExternal(e engines.Engine) bool {
	x, ok := e.(engines.Externaler)
	return ok && x.External()
}

// ExitError is why e exited on its own (status and the tail of
// engine.log), nil when it did not or cannot say.
func ExitError(e engines.Engine) error {
	if x, ok := e.(engines.ExitReporter); ok {
		return x.ExitError()
	}
	return nil
}

// DefaultFamilies are the /metrics families kept for an engine kind (for
// a server of unknown kind, those of every kind it may be).
func (s Spec) DefaultFamilies(kind string) []string { return s.registry().Families(kind) }

// Validate checks a spec before anything is built.
func (s Spec) Validate() error {
	if s.URL != "" {
		switch s.API {
		case "", engines.APIOpenAI, engines.APIOllama:
		default:
			return fmt.Errorf("--engine-api %q: want openai or ollama", s.API)
		}
		if _, err := s.Descriptor(); err != nil {
			return err
		}
	} else {
		d, err := s.Descriptor()
		if err != nil {
			return err
		}
		if d.Validate != nil {
			if err := d.Validate(s.options()); err != nil {
				return err
			}
		}
	}
	if err := s.registry().CheckSettings(s.Settings); err != nil {
		return err
	}
	switch s.Thinking {
	case ThinkingDefault, ThinkingOn, ThinkingOff:
	default:
		return fmt.Errorf("--thinking %q: want on or off", s.Thinking)
	}
	if s.Port < 0 || s.Port > 65535 || s.TP < 0 || s.MaxModelLen < 0 || s.Slots < 0 || s.ScrapeInterval < 0 {
		return fmt.Errorf("engine: negative port, tp, max model length, slots or scrape interval")
	}
	return nil
}

// options are the engine options of a managed engine.
func (s Spec) options() engines.Options {
	runDir := ""
	if s.RunDir != "" {
		runDir = filepath.Join(s.RunDir, "engine")
	}
	return engines.Options{Common: s.Common, RunDir: runDir, Settings: s.Settings, Quick: s.Quick, RunID: s.RunID}
}

func build(s Spec) (engines.Engine, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	d, err := s.Descriptor()
	if err != nil {
		return nil, err
	}
	if s.URL != "" {
		return d.Attach(engines.Remote{URL: s.URL, API: s.API, Model: s.Model, HTTP: s.HTTP, Note: s.Note})
	}
	e, err := d.Start(s.options())
	if err != nil {
		return nil, err
	}
	// The stop finds the engine's processes that left its process group
	// (by its descriptor's process names where it cannot read their
	// environment), and a pid file lets a later run report it.
	if x, ok := e.(tracker); ok {
		x.SetTracking(process.Tracking{Names: d.Processes, PidDir: s.PidDir})
	}
	return e, nil
}

// New builds the engine (nothing starts until its Start); its Info
// records the spec's thinking setting and request API.
func New(s Spec) (engines.Engine, error) {
	s.HTTP = withAPIKey(s.HTTP, s.APIKey)
	e, err := build(s)
	if err != nil {
		return nil, err
	}
	if x, ok := e.(engines.RunInfoSetter); ok {
		x.SetRunInfo(thinkingLabel(s.Thinking), requestAPI(s, e))
	}
	return e, nil
}

// ResolveModel asks an already running server (URL) for the model to
// request when the spec names none (engines.ModelResolver: the kind's
// choice, else the first model it lists) and sets it on e. It returns the
// spec's model when it names one, for a managed engine, or when e cannot
// say. ctx bounds the wait for a loading server.
func ResolveModel(ctx context.Context, s Spec, e engines.Engine) (string, error) {
	x, ok := e.(engines.ModelResolver)
	if s.URL == "" || s.Model != "" || !ok {
		return s.Model, nil
	}
	m, err := x.ResolveModel(ctx)
	if err != nil {
		return "", fmt.Errorf("--engine-url %s: %w", process.RedactURL(s.URL), err)
	}
	x.SetModel(m)
	return m, nil
}

// Model is the model id requests carry: what the engine says
// (engines.ModelNamer), else the spec's.
func Model(s Spec, e engines.Engine) string {
	if x, ok := e.(engines.ModelNamer); ok {
		return x.RequestModel()
	}
	return s.Model
}

// Expect is the identity the verify step compares: what the engine
// reports of its configuration, plus the expected engine version and
// revision when the spec gives them and the engine reports them.
func Expect(s Spec, e engines.Engine) engines.Identity {
	var id engines.Identity
	if x, ok := e.(engines.Expecter); ok {
		id = x.Expect()
	}
	if s.EngineVersion != "" {
		id.EngineVersion = s.EngineVersion
	}
	if s.Precision != "" {
		id.Precision = engines.Precision{Quant: s.Precision, From: "--precision"}
	}
	if s.Revision != "" && s.ReportsRevision(e.Kind()) {
		id.Revision = s.Revision
	}
	return id
}

// ReportsRevision says whether an engine kind reports the model revision
// (its descriptor says so).
func (s Spec) ReportsRevision(kind string) bool {
	d, ok := s.registry().Lookup(kind)
	return ok && d.ReportsRevision
}

// ClientAPI is the API requests to e go through: what e's descriptor
// says given the spec's settings (engines.Descriptor.ClientAPI), else e's
// own API.
func ClientAPI(s Spec, e engines.Engine) string {
	if d, ok := s.registry().Lookup(e.Kind()); ok && d.ClientAPI != nil {
		return d.ClientAPI(e.API(), s.Settings)
	}
	return e.API()
}

// NewClient returns the request client maker for e: the client of the API
// requests go through (all.Clients: Ollama's native client, or the OpenAI
// streaming client), on the run's clock, with the thinking setting added
// to every request.
func NewClient(s Spec, e engines.Engine, clock func() float64) func(baseURL string) loadgen.Doer {
	newClient, ok := Clients()[ClientAPI(s, e)]
	if !ok {
		newClient = Clients()[engines.APIOpenAI]
	}
	cfg := engines.ClientConfig{Clock: clock, APIKey: s.APIKey, RunID: s.RunID, Seed: s.Seed, MaxModelLen: s.MaxModelLen}
	if s.Thinking != ThinkingDefault {
		on := s.Thinking == ThinkingOn
		cfg.Think = &on
	}
	return func(base string) loadgen.Doer {
		c := cfg
		c.BaseURL, c.HTTP = base, &http.Client{Transport: NewTransport()}
		return newClient(c)
	}
}

// WithExtra adds members to every request's body (a request's own Extra
// wins). The result is a loadgen.Tracker when d is one.
func WithExtra(d loadgen.Doer, extra map[string]any) loadgen.Doer {
	if t, ok := d.(loadgen.Tracker); ok {
		return extraTracker{extraDoer{d: d, extra: extra}, t}
	}
	return extraDoer{d: d, extra: extra}
}

type extraTracker struct {
	extraDoer
	t loadgen.Tracker
}

func (x extraTracker) DoFlight(ctx context.Context, r workload.Request, f *loadgen.Flight) record.Request {
	return x.t.DoFlight(ctx, x.with(r), f)
}

// Prepare passes the loadgen.Preparer ability of the wrapped client on,
// with the extra members added (nothing to release when it has none).
func (x extraTracker) Prepare(ctx context.Context, reqs []workload.Request) func() {
	p, ok := x.t.(loadgen.Preparer)
	if !ok {
		return nil
	}
	with := make([]workload.Request, len(reqs))
	for i, r := range reqs {
		with[i] = x.with(r)
	}
	return p.Prepare(ctx, with)
}

type extraDoer struct {
	d     loadgen.Doer
	extra map[string]any
}

func (x extraDoer) Do(ctx context.Context, r workload.Request) record.Request {
	return x.d.Do(ctx, x.with(r))
}

// with returns r with the extra members added.
func (x extraDoer) with(r workload.Request) workload.Request {
	m := make(map[string]any, len(x.extra)+len(r.Extra))
	for k, v := range x.extra {
		m[k] = v
	}
	for k, v := range r.Extra {
		m[k] = v
	}
	r.Extra = m
	return r
}

// thinkingLabel is the thinking setting as recorded in run.json.
func thinkingLabel(t string) string {
	if t == ThinkingDefault {
		return "default"
	}
	return t
}

// requestAPI names the API requests go through: "openai", or another
// API's name with "-native" ("ollama-native").
func requestAPI(s Spec, e engines.Engine) string {
	if api := ClientAPI(s, e); api != engines.APIOpenAI {
		return api + "-native"
	}
	return engines.APIOpenAI
}

// MetricsConfig says where scraped samples go.
type MetricsConfig struct {
	// Interval overrides the spec's interval when > 0.
	Interval time.Duration
	// Families overrides the spec's families when not empty.
	Families []string
	Clock    func() float64
	Sink     func([]record.EngineMetric) error
	Warn     func(string)
}

// StartMetrics starts scraping e's /metrics on the side path and returns
// the scraper (Stop it at the end of the run), or nil when e has no
// metrics endpoint. Samples before the engine listens are skipped quietly.
func StartMetrics(ctx context.Context, s Spec, e engines.Engine, mc MetricsConfig) *prom.Scraper {
	src, ok := e.(engines.MetricsSource)
	if !ok {
		return nil
	}
	// The URL may be known only once the engine listens (the simulator
	// picks a free port): the scraper asks for it at every scrape.
	interval := s.ScrapeInterval
	if mc.Interval > 0 {
		interval = mc.Interval
	}
	if interval <= 0 {
		interval = DefaultScrapeInterval
	}
	fams, explicit := s.MetricFamilies, len(s.MetricFamilies) > 0
	if len(mc.Families) > 0 {
		fams, explicit = mc.Families, true
	}
	if x, ok := e.(engines.FamiliesDefaulter); ok && len(fams) == 0 {
		fams = x.DefaultFamilies()
	}
	if len(fams) == 0 {
		fams = s.DefaultFamilies(e.Kind())
	}
	sc := prom.New(prom.Config{
		URL:           src.MetricsURL,
		Interval:      interval,
		Families:      fams,
		ReportMissing: explicit,
		Clock:         mc.Clock,
		Sink:          mc.Sink,
		Warn:          mc.Warn,
		HTTP:          withAPIKey(s.HTTP, s.APIKey),
	})
	sc.Start(ctx)
	return sc
}

// NewTransport is the streaming transport (streamcore.NewTransport) that
// resends a request failed on a reused keep-alive connection before any
// answer came back (streamcore.Replaying).
func NewTransport() http.RoundTripper {
	return streamcore.Replaying(streamcore.NewTransport())
}

// withAPIKey returns a client that adds the bearer token to every request
// (the same client when there is no key).
func withAPIKey(c *http.Client, key string) *http.Client {
	if key == "" {
		return c
	}
	if c == nil {
		c = &http.Client{}
	}
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cc := *c
	cc.Transport = bearer{base: base, header: "Bearer " + key}
	return &cc
}

type bearer struct {
	base   http.RoundTripper
	header string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", b.header)
	}
	return b.base.RoundTrip(r)
}
