package process

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
)

// CompileCacheDir is the subdirectory of a managed engine's run directory
// that holds its compile caches (this run's only: the startup stage
// includes the compilation, as it does the first time).
const CompileCacheDir = "compile-cache"

// ManagedSpec is the setup every managed engine shares: a frozen argv,
// its environment (the engine's own variables, its compile caches under
// the run directory, the user's overrides last), the loopback server and
// its health endpoint.
type ManagedSpec struct {
	// Kind is the engine kind (run.json); Name the process name in logs
	// (default Kind).
	Kind, Name string
	// API is engines.APIOpenAI or engines.APIOllama.
	API  string
	Argv []string
	// Env are the engine's own variables; Overrides (--engine-env) replace
	// them and the cache variables.
	Env, Overrides map[string]string
	// CacheEnv maps an environment variable to a directory under
	// RunDir/compile-cache; set only when RunDir is.
	CacheEnv map[string]string
	// Port is the resolved port on 127.0.0.1 (see ResolvePort); Health the
	// readiness path.
	Port   int
	Health string
	// RunDir is the working directory ("" = the current one, no cache
	// override).
	RunDir string
	Log    io.Writer
	HTTP   *http.Client
}

// ResolvePort returns port, or a free port on 127.0.0.1 when it is 0.
func ResolvePort(kind string, port int) (int, error) {
	if port != 0 {
		return port, nil
	}
	p, err := FreePort()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", kind, err)
	}
	return p, nil
}

// NewManaged freezes the process spec and builds the engine's server
// (nothing starts until Start).
func NewManaged(s ManagedSpec) *Managed {
	env := map[string]string{}
	for k, v := range s.Env {
		env[k] = v
	}
	cache := ""
	if s.RunDir != "" && len(s.CacheEnv) > 0 {
		cache = filepath.Join(s.RunDir, CompileCacheDir)
		for k, sub := range s.CacheEnv {
			env[k] = filepath.Join(cache, sub)
		}
	}
	for k, v := range s.Overrides {
		env[k] = v
	}
	if len(env) == 0 {
		env = nil
	}
	name := s.Name
	if name == "" {
		name = s.Kind
	}
	spec := Spec{Name: name, Argv: s.Argv, Env: env, Dir: s.RunDir, Log: s.Log}
	srv := NewServer(spec, LoopbackURL(s.Port), s.Health)
	srv.HTTP = s.HTTP
	return &Managed{Server: srv, KindName: s.Kind, APIName: s.API, RunDir: s.RunDir, CacheDir: cache}
}

// Managed is what the managed engines (vLLM, SGLang, llama.cpp, Ollama)
// share: the server process, their kind and API, and the identity last
// read from the running engine (for run.json). Each engine embeds it and
// adds Identity and Info.
type Managed struct {
	*Server
	KindName string
	APIName  string
	// RunDir is the engine's own run directory (its working directory);
	// CacheDir its compile-cache directory.
	RunDir, CacheDir string
	// Thinking is the run's thinking setting and RequestAPI the API the
	// requests use, both recorded in run.json.
	Thinking, RequestAPI string

	mu    sync.Mutex
	id    engines.Identity
	hasID bool
}

var (
	_ engines.ExitReporter  = (*Managed)(nil)
	_ engines.ExitStatuser  = (*Managed)(nil)
	_ engines.RunInfoSetter = (*Managed)(nil)
)

// Kind is the engine kind.
func (m *Managed) Kind() string { return m.KindName }

// Simulated is false: a real process runs.
func (m *Managed) Simulated() bool { return false }

// BaseURL is http://127.0.0.1:PORT (known before Start: the port is
// chosen when the engine is configured).
func (m *Managed) BaseURL() string { return m.Base }

// API is engines.APIOpenAI or engines.APIOllama.
func (m *Managed) API() string { return m.APIName }

// SetRunInfo records the run's thinking setting and request API.
func (m *Managed) SetRunInfo(thinking, requestAPI string) {
	m.mu.Lock()
	m.Thinking, m.RequestAPI = thinking, requestAPI
	m.mu.Unlock()
}

// SetIdentity keeps the identity last read, for Info.
func (m *Managed) SetIdentity(id engines.Identity) {
	m.mu.Lock()
	m.id, m.hasID = id, true
	m.mu.Unlock()
}

// LastIdentity is the identity last read (ok false before any).
func (m *Managed) LastIdentity() (engines.Identity, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id, m.hasID
}

// BaseInfo fills what every managed engine reports in run.json: kind,
// URL, API, the redacted command line and environment overrides, the
// engine version once known, and in Extra the process id, run and cache
// directories and the exit status.
func (m *Managed) BaseInfo() record.EngineInfo {
	info := record.EngineInfo{
		Kind:    m.KindName,
		URL:     m.Base,
		API:     m.APIName,
		Managed: true,
		Command: Redact(m.Spec.Argv),
		Env:     RedactEnv(m.Spec.Env),
		Extra:   map[string]any{},
	}
	if id, ok := m.LastIdentity(); ok {
		info.Version = id.EngineVersion
		info.ServedModel = id.Model
		info.Revision = id.Revision
		info.ContextLength = id.ContextLength
		info.TensorParallel = id.TensorParallel
		id.Precision.Record(&info)
	}
	m.mu.Lock()
	info.Thinking = m.Thinking
	if m.RequestAPI != "" {
		info.Extra["request_api"] = m.RequestAPI
	}
	m.mu.Unlock()
	if m.RunDir != "" {
		info.Extra["run_dir"] = m.RunDir
	}
	if m.CacheDir != "" {
		info.Extra["compile_cache_dir"] = m.CacheDir
	}
	info.Extra["health_url"] = m.HealthURL()
	if p := m.Process(); p != nil {
		info.Extra["pid"] = p.PID()
		info.Extra["started_at"] = float64(p.StartedAt().UnixNano()) / 1e9
		select {
		case <-p.Exited():
			info.Extra["exit_status"] = describeExit(p.ExitErr())
			info.Extra["exited_at"] = float64(p.ExitedAt().UnixNano()) / 1e9
			info.Extra["exited_on_its_own"] = p.ExitError() != nil
		default:
		}
	}
	return info
}
