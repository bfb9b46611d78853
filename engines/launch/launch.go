// Package launch builds the engine of a run from one Spec (what the run
// command's flags say): a managed vLLM, SGLang, llama.cpp or Ollama
// server, or an already running server (Spec.URL). It also builds the
// request client that fits the engine's API, the identity the verify step
// compares, and starts the engine-metrics side path.
//
// Optional abilities of an engine, beyond engines.Engine, are small
// interfaces here: MetricsSource (a /metrics URL), Externaler (not started
// or stopped by joulebench), Expecter (the identity it should report) and
// ExitReporter (why it exited on its own, with the tail of engine.log).
package launch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/external"
	"github.com/joulebench/joulebench/engines/llamacpp"
	"github.com/joulebench/joulebench/engines/ollama"
	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/engines/prom"
	"github.com/joulebench/joulebench/engines/sglang"
	"github.com/joulebench/joulebench/engines/sim"
	"github.com/joulebench/joulebench/engines/vllm"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workload"
)

// The engine clients are the load generator's Doers; loadgen itself knows
// neither.
var (
	_ loadgen.Doer = (*openai.Client)(nil)
	_ loadgen.Doer = (*ollama.Client)(nil)
)

// Kinds are the managed engine kinds.
var Kinds = []string{"vllm", "sglang", "llamacpp", "ollama"}

// Ollama request APIs (Spec.OllamaAPI).
const (
	OllamaNative = "native"
	OllamaOpenAI = "openai"
)

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
	// Kind is vllm, sglang, llamacpp or ollama; with URL also "openai"
	// (any OpenAI-compatible server) or "" (the kind follows API).
	Kind string
	// URL, when set, is an already running server: nothing is started.
	URL string
	// API is openai or ollama for URL ("" follows Kind).
	API string
	// Bin replaces the engine's executable (vllm, python for SGLang,
	// llama-server, ollama).
	Bin string
	// Args are extra command-line arguments; Env environment overrides.
	Args []string
	Env  map[string]string
	// Model is the model id (vLLM/SGLang: path or Hugging Face id, also
	// the served name; llama.cpp: the alias, default the file name;
	// Ollama: the model name).
	Model string
	// ModelFile is the GGUF file (llama.cpp; Ollama creates the model from
	// it when missing).
	ModelFile string
	Revision  string
	// Port on 127.0.0.1 (0: a free one).
	Port int
	// TP is the tensor-parallel size (vLLM, SGLang).
	TP int
	// MaxModelLen is the longest request in tokens (vLLM --max-model-len,
	// SGLang --context-length, llama.cpp context per slot, Ollama
	// OLLAMA_CONTEXT_LENGTH and num_ctx); 0 = the engine's default.
	MaxModelLen int
	// Slots is llama.cpp's -np and Ollama's OLLAMA_NUM_PARALLEL.
	Slots int
	Seed  int64
	// OllamaAPI is native (/api/chat, /api/generate) or openai (/v1).
	OllamaAPI string
	// EngineVersion, when set, is the engine version the identity check
	// expects.
	EngineVersion string
	// Thinking is "", "on" or "off": sent as Ollama's think, else as
	// chat_template_kwargs.enable_thinking; recorded in run.json.
	Thinking string
	// HealthGenerate makes SGLang's readiness wait for /health_generate.
	HealthGenerate bool
	// PullMissing lets Ollama pull a missing model.
	PullMissing bool
	// ScrapeInterval and MetricFamilies configure the /metrics side path
	// (defaults: DefaultScrapeInterval, DefaultFamilies(kind)).
	ScrapeInterval time.Duration
	MetricFamilies []string
	// RunDir is the run's directory: the engine works in RunDir/engine
	// (its compile caches in RunDir/engine/compile-cache).
	RunDir string
	// Log receives the engine's output (engine.log).
	Log  io.Writer
	HTTP *http.Client
	// APIKey, when set, is sent as "Authorization: Bearer ..." with every
	// request to the engine (queries and benchmark requests alike). It is
	// never logged nor written to the archive.
	APIKey string
}

// MetricsSource is an engine with a Prometheus endpoint.
type MetricsSource interface {
	MetricsURL() string
}

// Externaler is an engine joulebench neither starts nor stops.
type Externaler interface {
	External() bool
}

// Expecter is an engine that knows which identity it should report.
type Expecter interface {
	Expect() engines.Identity
}

// ExitReporter is an engine that can say why it exited on its own.
type ExitReporter interface {
	ExitError() error
}

// IsExternal reports whether e is an already running server.
func IsExternal(e engines.Engine) bool {
	x, ok := e.(Externaler)
	return ok && x.External()
}

// ExitError is why e exited on its own (status and the tail of
// engine.log), nil when it did not or cannot say.
func ExitError(e engines.Engine) error {
	if x, ok := e.(ExitReporter); ok {
		return x.ExitError()
	}
	return nil
}

// DefaultFamilies are the /metrics families kept for an engine kind.
func DefaultFamilies(kind string) []string {
	switch kind {
	case "vllm":
		return vllm.DefaultFamilies
	case "sglang":
		return sglang.DefaultFamilies
	case "llamacpp":
		return llamacpp.DefaultFamilies
	case "sim":
		return sim.DefaultFamilies
	case "openai":
		return slices.Concat(vllm.DefaultFamilies, sglang.DefaultFamilies, llamacpp.DefaultFamilies)
	}
	return nil
}

// Validate checks a spec before anything is built.
func (s Spec) Validate() error {
	if s.URL != "" {
		switch s.Kind {
		case "", "openai", "vllm", "sglang", "llamacpp", "ollama":
		default:
			return fmt.Errorf("--engine %q with --engine-url: want openai, vllm, sglang, llamacpp or ollama", s.Kind)
		}
		switch s.API {
		case "", engines.APIOpenAI, engines.APIOllama:
		default:
			return fmt.Errorf("--engine-api %q: want openai or ollama", s.API)
		}
	} else {
		switch s.Kind {
		case "vllm", "sglang":
			if s.Model == "" {
				return fmt.Errorf("--engine %s needs --model (a path or Hugging Face id)", s.Kind)
			}
		case "llamacpp":
			if s.ModelFile == "" {
				return fmt.Errorf("--engine llamacpp needs --model-file (a GGUF file)")
			}
		case "ollama":
			if s.Model == "" {
				return fmt.Errorf("--engine ollama needs --model (an Ollama model name)")
			}
		case "openai":
			return fmt.Errorf("--engine openai needs --engine-url (an already running server)")
		default:
			return fmt.Errorf("--engine %q: want one of vllm, sglang, llamacpp, ollama (or --engine-url URL)", s.Kind)
		}
	}
	switch s.OllamaAPI {
	case "", OllamaNative, OllamaOpenAI:
	default:
		return fmt.Errorf("--ollama-api %q: want native or openai", s.OllamaAPI)
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

func build(s Spec) (engines.Engine, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.URL != "" {
		return external.New(external.Config{URL: s.URL, API: s.API, Kind: s.Kind, Model: s.Model, HTTP: s.HTTP})
	}
	runDir := ""
	if s.RunDir != "" {
		runDir = filepath.Join(s.RunDir, "engine")
	}
	switch s.Kind {
	case "vllm":
		return vllm.New(vllm.Config{Bin: s.Bin, Model: s.Model, Revision: s.Revision, Port: s.Port, TP: s.TP,
			MaxModelLen: s.MaxModelLen, Seed: s.Seed, ExtraArgs: s.Args, Env: s.Env, RunDir: runDir, Log: s.Log, HTTP: s.HTTP})
	case "sglang":
		return sglang.New(sglang.Config{Python: s.Bin, Model: s.Model, Revision: s.Revision, Port: s.Port, TP: s.TP,
			ContextLength: s.MaxModelLen, Seed: s.Seed, HealthGenerate: s.HealthGenerate, ExtraArgs: s.Args, Env: s.Env,
			RunDir: runDir, Log: s.Log, HTTP: s.HTTP})
	case "llamacpp":
		return llamacpp.New(llamacpp.Config{Bin: s.Bin, ModelFile: s.ModelFile, Alias: s.Model, Port: s.Port, Slots: s.Slots,
			ContextLength: s.MaxModelLen, Seed: s.Seed, ExtraArgs: s.Args, Env: s.Env, RunDir: runDir, Log: s.Log, HTTP: s.HTTP})
	case "ollama":
		return ollama.New(ollama.Config{Bin: s.Bin, Model: s.Model, ModelFile: s.ModelFile, Pull: s.PullMissing, Port: s.Port,
			ContextLength: s.MaxModelLen, Parallel: s.Slots, Env: s.Env, ExtraArgs: s.Args, RunDir: runDir, Log: s.Log, HTTP: s.HTTP})
	}
	return nil, fmt.Errorf("engine kind %q", s.Kind)
}

// New builds the engine (nothing starts until its Start); its Info
// records the spec's thinking setting and request API.
func New(s Spec) (engines.Engine, error) {
	s.HTTP = withAPIKey(s.HTTP, s.APIKey)
	e, err := build(s)
	if err != nil {
		return nil, err
	}
	if x, ok := e.(RunInfoSetter); ok {
		x.SetRunInfo(thinkingLabel(s.Thinking), requestAPI(s, e))
	}
	return e, nil
}

// Model is the model id requests carry.
func Model(s Spec, e engines.Engine) string {
	switch x := e.(type) {
	case *vllm.Engine:
		return x.Config().ServedName
	case *sglang.Engine:
		return x.Config().ServedName
	case *llamacpp.Engine:
		return x.Config().Alias
	case *ollama.Engine:
		return x.Config().Model
	case *external.Engine:
		return x.Config().Model
	}
	return s.Model
}

// Expect is the identity the verify step compares: what the engine
// reports of its configuration, plus the expected engine version and
// revision when the spec gives them and the engine reports them.
func Expect(s Spec, e engines.Engine) engines.Identity {
	var id engines.Identity
	if x, ok := e.(Expecter); ok {
		id = x.Expect()
	}
	if s.EngineVersion != "" {
		id.EngineVersion = s.EngineVersion
	}
	if s.Revision != "" && ReportsRevision(e.Kind()) {
		id.Revision = s.Revision
	}
	return id
}

// ReportsRevision says whether an engine kind reports the model revision
// (SGLang: its --revision; Ollama: the model digest).
func ReportsRevision(kind string) bool { return kind == "sglang" || kind == "ollama" }

// UsesOllamaNative reports whether requests go through Ollama's native
// API.
func UsesOllamaNative(s Spec, e engines.Engine) bool {
	return e.API() == engines.APIOllama && s.OllamaAPI != OllamaOpenAI
}

// NewClient returns the request client maker for e: Ollama's native
// client, or the OpenAI streaming client, on the run's clock; the
// thinking setting is added to every request.
func NewClient(s Spec, e engines.Engine, clock func() float64) func(baseURL string) loadgen.Doer {
	if UsesOllamaNative(s, e) {
		return func(base string) loadgen.Doer {
			opts := []ollama.Option{ollama.WithClock(clock), ollama.WithRecordTokenTimes(true),
				ollama.WithHTTPClient(withAPIKey(&http.Client{Transport: NewTransport()}, s.APIKey))}
			o := map[string]any{"seed": s.Seed}
			if s.MaxModelLen > 0 {
				o["num_ctx"] = s.MaxModelLen
			}
			opts = append(opts, ollama.WithOptions(o))
			if s.Thinking != ThinkingDefault {
				opts = append(opts, ollama.WithThink(s.Thinking == ThinkingOn))
			}
			return ollama.NewClient(base, opts...)
		}
	}
	return func(base string) loadgen.Doer {
		var d loadgen.Doer = openai.NewClient(base, openai.WithClock(clock), openai.WithRecordTokenTimes(true),
			openai.WithHTTPClient(&http.Client{Transport: NewTransport()}), openai.WithAPIKey(s.APIKey))
		if s.Thinking != ThinkingDefault {
			d = WithExtra(d, map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": s.Thinking == ThinkingOn}})
		}
		return d
	}
}

// WithExtra adds members to every request's body (a request's own Extra
// wins).
func WithExtra(d loadgen.Doer, extra map[string]any) loadgen.Doer {
	return extraDoer{d: d, extra: extra}
}

type extraDoer struct {
	d     loadgen.Doer
	extra map[string]any
}

func (x extraDoer) Do(ctx context.Context, r workload.Request) archive.Request {
	m := make(map[string]any, len(x.extra)+len(r.Extra))
	for k, v := range x.extra {
		m[k] = v
	}
	for k, v := range r.Extra {
		m[k] = v
	}
	r.Extra = m
	return x.d.Do(ctx, r)
}

// RunInfoSetter records run settings an engine reports in its Info.
type RunInfoSetter interface {
	SetRunInfo(thinking, requestAPI string)
}

// thinkingLabel is the thinking setting as recorded in run.json.
func thinkingLabel(t string) string {
	if t == ThinkingDefault {
		return "default"
	}
	return t
}

// requestAPI names the API requests go through.
func requestAPI(s Spec, e engines.Engine) string {
	if UsesOllamaNative(s, e) {
		return "ollama-native"
	}
	return "openai"
}

// MetricsConfig says where scraped samples go.
type MetricsConfig struct {
	// Interval overrides the spec's interval when > 0.
	Interval time.Duration
	// Families overrides the spec's families when not empty.
	Families []string
	Clock    func() float64
	Sink     func([]archive.EngineMetric) error
	Warn     func(string)
}

// StartMetrics starts scraping e's /metrics on the side path and returns
// the scraper (Stop it at the end of the run), or nil when e has no
// metrics endpoint. Samples before the engine listens are skipped quietly.
func StartMetrics(ctx context.Context, s Spec, e engines.Engine, mc MetricsConfig) *prom.Scraper {
	src, ok := e.(MetricsSource)
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
	if len(fams) == 0 {
		fams = DefaultFamilies(e.Kind())
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

// NewTransport is openai.NewTransport made to resend a request that
// failed on a reused keep-alive connection before any answer came back:
// llama-server closes its connection after a streamed response although
// it announces keep-alive, and Go only retries idempotent requests. The
// header that marks the request replayable is nil-valued, so it is never
// sent; a request the server has started answering is never resent.
func NewTransport() http.RoundTripper {
	return replayable{rt: openai.NewTransport()}
}

type replayable struct{ rt http.RoundTripper }

func (r replayable) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.GetBody != nil && req.Header.Get("Idempotency-Key") == "" {
		req = req.Clone(req.Context())
		req.Header["X-Idempotency-Key"] = nil
	}
	return r.rt.RoundTrip(req)
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
