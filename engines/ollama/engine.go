// Package ollama runs Ollama as a managed engine (`ollama serve` with
// OLLAMA_HOST on 127.0.0.1) or talks to a running one, and is the client
// of Ollama's native streaming API (/api/generate, /api/chat: NDJSON).
//
// Readiness: GET /api/version answers 200; then the model is ensured
// (POST /api/show; when missing it is created from a GGUF file — the blob
// pushed to /api/blobs/sha256:..., then POST /api/create — or pulled) and
// loaded (POST /api/generate with no prompt), so that the first request
// does not pay for the load. Identity from GET /api/version, POST
// /api/show (details, model_info: <arch>.context_length) and GET /api/ps
// (the loaded model's name and digest, reported as the revision).
package ollama

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/external"
	"github.com/joulebench/joulebench/engines/process"
)

// Kind is the engine kind.
const Kind = "ollama"

// Descriptor is Ollama, started by joulebench or already running; it
// serves Ollama's native API, has no /metrics and reports the model
// digest as the revision.
func Descriptor() engines.Descriptor {
	return engines.Descriptor{
		Kind:  Kind,
		Doc:   "Ollama (ollama serve)",
		API:   engines.APIOllama,
		Flags: []string{"model", "model-file", "max-model-len", "slots", FlagAPI, FlagPull},
		Settings: []engines.Setting{
			{Flag: FlagAPI, Doc: "Ollama request API", Default: RequestsNative, Values: []engines.Value{
				{Name: RequestsNative, Doc: "/api/chat, NDJSON, eval_* timings"}, {Name: RequestsOpenAI, Doc: "/v1"}}},
			{Flag: FlagPull, Doc: "Ollama: refused (a download inside startup would count in its energy): run ollama pull MODEL before the benchmark"},
		},
		ClientAPI: ClientAPI,
		Processes: []string{"ollama"},
		Unload:    Unload,
		Validate: func(o engines.Options) error {
			if o.Model == "" {
				return fmt.Errorf("--engine %s needs --model (an Ollama model name)", Kind)
			}
			if o.Settings.Bool(FlagPull) {
				// Startup energy counts loading weights, never downloading them.
				return fmt.Errorf("--ollama-pull would download %s inside the startup stage, whose energy must count loading only: run `ollama pull %s` before the benchmark", o.Model, o.Model)
			}
			return nil
		},
		Start: func(o engines.Options) (engines.Engine, error) {
			return New(Config{Common: o.Common, Pull: o.Settings.Bool(FlagPull), RunDir: o.RunDir})
		},
		Attach: func(r engines.Remote) (engines.Engine, error) {
			if r.API == "" {
				r.API = engines.APIOllama
			}
			return external.New(external.Config{URL: r.URL, API: r.API, Kind: Kind, Model: r.Model, HTTP: r.HTTP, Note: r.Note,
				Health: "/api/version", ExpectModel: NormalizeName,
				Identity: func(ctx context.Context, srv *process.Server, model string) (engines.Identity, error) {
					return (&API{Base: srv.Base, HTTP: srv.Client()}).Identity(ctx, model)
				},
				PickModel: func(ctx context.Context, srv *process.Server) (string, error) {
					return (&API{Base: srv.Base, HTTP: srv.Client()}).FirstModel(ctx)
				},
			})
		},
		ReportsRevision: true,
	}
}

// Ollama's own settings (engines.Setting): the API requests go through
// (FlagAPI: RequestsNative, /api/chat and /api/generate, the default; or
// RequestsOpenAI, /v1), and whether a missing model may be pulled.
const (
	FlagAPI        = "ollama-api"
	FlagPull       = "ollama-pull"
	RequestsNative = "native"
	RequestsOpenAI = "openai"
)

// ClientAPI is the API requests to a server of Ollama's API go through:
// the OpenAI-compatible one when the settings ask for it (FlagAPI), else
// api (the server's).
func ClientAPI(api string, s engines.Settings) string {
	if api == engines.APIOllama && s[FlagAPI] == RequestsOpenAI {
		return engines.APIOpenAI
	}
	return api
}

// Config is the frozen configuration of an Ollama server: of the common
// options, Bin is the ollama executable (default "ollama"), Model the
// model name ("tiny" is served as "tiny:latest"), ModelFile, when set, a
// GGUF file the model is created from if the server does not have it,
// MaxModelLen sets OLLAMA_CONTEXT_LENGTH and Slots OLLAMA_NUM_PARALLEL
// when > 0, Env overrides (OLLAMA_MODELS, ...), Args are appended to
// `ollama serve`; Revision, TP and Seed are not read.
type Config struct {
	engines.Common
	// Pull allows pulling a missing model from the registry (when no
	// ModelFile is given).
	Pull bool
	// RunDir is the working directory.
	RunDir string
}

// Engine is a managed `ollama serve`.
type Engine struct {
	*process.Managed
	cfg Config
	api *API
	// weights, once checked, are recorded in Info.
	weights *engines.Weights

	// The model joulebench created from ModelFile, removed again at
	// Stop (see Stop): created is set when Ensure created it, removed
	// says how its removal went ("" until tried).
	mu      sync.Mutex
	created bool
	removed string
}

var (
	_ engines.Engine         = (*Engine)(nil)
	_ engines.Expecter       = (*Engine)(nil)
	_ engines.ModelNamer     = (*Engine)(nil)
	_ engines.WeightsChecker = (*Engine)(nil)
)

// New freezes the command line and environment (choosing a free port when
// Port is 0).
func New(cfg Config) (*Engine, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("ollama: no model")
	}
	if cfg.Bin == "" {
		cfg.Bin = "ollama"
	}
	if cfg.ModelFile != "" {
		if abs, err := filepath.Abs(cfg.ModelFile); err == nil {
			cfg.ModelFile = abs
		}
	}
	port, err := process.ResolvePort(Kind, cfg.Port)
	if err != nil {
		return nil, err
	}
	cfg.Port = port
	env := map[string]string{
		"OLLAMA_HOST": "127.0.0.1:" + strconv.Itoa(cfg.Port),
		// The model stays loaded for the whole run; the process exit
		// releases it.
		"OLLAMA_KEEP_ALIVE": "24h",
	}
	if cfg.MaxModelLen > 0 {
		env["OLLAMA_CONTEXT_LENGTH"] = strconv.Itoa(cfg.MaxModelLen)
	}
	if cfg.Slots > 0 {
		env["OLLAMA_NUM_PARALLEL"] = strconv.Itoa(cfg.Slots)
	}
	argv := append([]string{cfg.Bin, "serve"}, cfg.Args...)
	m := process.NewManaged(process.ManagedSpec{Kind: Kind, API: engines.APIOllama, Argv: argv, Env: env, Overrides: cfg.Env,
		Port: cfg.Port, Health: "/api/version", RunDir: cfg.RunDir, Log: cfg.Log, HTTP: cfg.HTTP})
	srv := m.Server
	e := &Engine{cfg: cfg, Managed: m}
	e.api = &API{Base: srv.Base, HTTP: srv.Client(), Note: func(s string) {
		if p := srv.Process(); p != nil {
			p.Note("%s", s)
		}
	}}
	srv.Ready = func(ctx context.Context) error {
		created, err := e.api.ensure(ctx, cfg.Model, cfg.ModelFile, cfg.Pull)
		if created {
			e.mu.Lock()
			e.created = true
			e.mu.Unlock()
		}
		return err
	}
	return e, nil
}

// Config is the configuration in use (after defaults).
func (e *Engine) Config() Config { return e.cfg }

// removeTimeout bounds the removal of the created model at Stop.
const removeTimeout = 10 * time.Second

// Stop removes the model joulebench created from --model-file, if it
// did (DELETE /api/delete: the server's model store is left as it was
// found), then stops the server. The removal is a few file operations in
// the release stage, before the signal; when it fails (the server is gone,
// or refuses), engine.log and run.json say that the model is left behind
// and how to remove it.
func (e *Engine) Stop(ctx context.Context, grace time.Duration) (time.Time, error) {
	e.mu.Lock()
	created, tried := e.created, e.removed != ""
	e.mu.Unlock()
	if created && !tried {
		rctx, cancel := context.WithTimeout(ctx, removeTimeout)
		err := e.api.Delete(rctx, e.cfg.Model)
		cancel()
		what := "removed"
		if err != nil {
			what = fmt.Sprintf("left behind (remove it with `ollama rm %s`): %v", e.cfg.Model, err)
		}
		e.api.note("model %s, created by joulebench from %s: %s", e.cfg.Model, e.cfg.ModelFile, what)
		e.mu.Lock()
		e.removed = what
		e.mu.Unlock()
	}
	return e.Managed.Stop(ctx, grace)
}

// RequestModel is the model name requests carry.
func (e *Engine) RequestModel() string { return e.cfg.Model }

// Expect is what the identity check compares: the model name (with its
// tag) and, with --model-file, the precision of that GGUF file (its
// header's file type: Ollama reports it as quantization_level). Ollama's
// context length is per request (num_ctx), not checked.
func (e *Engine) Expect() engines.Identity {
	id := engines.Identity{Model: NormalizeName(e.cfg.Model)}
	if e.cfg.ModelFile != "" {
		id.Precision, _ = engines.GGUFPrecision(e.cfg.ModelFile)
	}
	return id
}

// Identity asks GET /api/version, POST /api/show and GET /api/ps.
func (e *Engine) Identity(ctx context.Context) (engines.Identity, error) {
	id, err := e.api.Identity(ctx, e.cfg.Model)
	if err == nil {
		e.SetIdentity(id)
	}
	return id, err
}

// Info describes the engine for run.json.
func (e *Engine) Info() record.EngineInfo {
	info := e.BaseInfo()
	info.Model = e.cfg.Model
	if info.ServedModel == "" {
		info.ServedModel = NormalizeName(e.cfg.Model)
	}
	if info.ModelFormat == "" {
		info.ModelFormat = "gguf"
	}
	if e.cfg.ModelFile != "" {
		info.Extra["model_file"] = e.cfg.ModelFile
	}
	if e.weights != nil {
		info.Extra["weights"] = *e.weights
	}
	e.mu.Lock()
	if e.created {
		info.Extra["model_created"] = true
		if e.removed != "" {
			info.Extra["created_model"] = e.removed
		}
	}
	e.mu.Unlock()
	info.Extra["port"] = e.cfg.Port
	return info
}

// NormalizeName adds the default tag: "tiny" is "tiny:latest".
func NormalizeName(name string) string {
	last := name[strings.LastIndex(name, "/")+1:]
	if name != "" && !strings.Contains(last, ":") {
		return name + engines.DefaultTag
	}
	return name
}

// API is a client of Ollama's management endpoints.
type API struct {
	Base string
	HTTP *http.Client
	// Note receives progress lines for engine.log (may be nil).
	Note func(string)
}

func (a *API) note(format string, args ...any) {
	if a.Note != nil {
		a.Note(fmt.Sprintf(format, args...))
	}
}

func (a *API) client() *http.Client {
	if a.HTTP == nil {
		return &http.Client{Timeout: 30 * time.Second}
	}
	return a.HTTP
}

// longClient has no overall timeout (model creation, pulls and loads are
// bounded by the caller's context).
func (a *API) longClient() *http.Client {
	return &http.Client{Transport: a.client().Transport}
}

// FirstModel is the first model GET /api/tags lists.
func (a *API) FirstModel(ctx context.Context) (string, error) {
	var tags struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if _, err := process.GetJSON(ctx, a.client(), a.Base+"/api/tags", &tags); err != nil {
		return "", err
	}
	if len(tags.Models) == 0 {
		return "", fmt.Errorf("GET %s/api/tags lists no model", a.Base)
	}
	return tags.Models[0].Name, nil
}

// Version is GET /api/version.
func (a *API) Version(ctx context.Context) (string, any, error) {
	var v struct {
		Version string `json:"version"`
	}
	raw, err := process.GetJSON(ctx, a.client(), a.Base+"/api/version", &v)
	return v.Version, raw, err
}

// Show is POST /api/show; a missing model is an error for which
// process.IsStatus(err, 404) holds.
func (a *API) Show(ctx context.Context, model string) (map[string]any, error) {
	raw, err := process.DoJSON(ctx, a.client(), http.MethodPost, a.Base+"/api/show", map[string]any{"model": model}, nil)
	if err != nil {
		return nil, err
	}
	m, _ := raw.(map[string]any)
	// The modelfile and license repeat the rest and can be long; so can
	// the vocabulary arrays.
	delete(m, "modelfile")
	delete(m, "license")
	delete(m, "tensors")
	if mi, ok := m["model_info"].(map[string]any); ok {
		for k, v := range mi {
			if arr, ok := v.([]any); ok && len(arr) > 16 {
				mi[k] = fmt.Sprintf("(%d values)", len(arr))
			}
		}
	}
	return m, nil
}

// Ensure makes sure the server has model (creating it from file, or
// pulling it when pull is set) and loads it.
func (a *API) Ensure(ctx context.Context, model, file string, pull bool) error {
	_, err := a.ensure(ctx, model, file, pull)
	return err
}

// ensure is Ensure, and says whether it created the model from file.
func (a *API) ensure(ctx context.Context, model, file string, pull bool) (created bool, err error) {
	_, err = a.Show(ctx, model)
	switch {
	case err == nil:
	case process.IsStatus(err, http.StatusNotFound) && file != "":
		if err := a.CreateFromGGUF(ctx, model, file); err != nil {
			return false, err
		}
		created = true
	case process.IsStatus(err, http.StatusNotFound) && pull:
		if err := a.Pull(ctx, model); err != nil {
			return false, err
		}
	case process.IsStatus(err, http.StatusNotFound):
		return false, fmt.Errorf("ollama has no model %q (give --model-file to create it from a GGUF file, or pull it first): %w", model, err)
	default:
		return false, fmt.Errorf("%v: %w", err, process.ErrRetry)
	}
	return created, a.Load(ctx, model)
}

// Delete removes model from the server's store (DELETE /api/delete).
// It answers 200 with an empty body.
func (a *API) Delete(ctx context.Context, model string) error {
	body, err := json.Marshal(map[string]string{"model": model})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, a.Base+"/api/delete", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client().Do(req)
	if err != nil {
		return fmt.Errorf("ollama: DELETE /api/delete %s: %w", model, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("ollama: DELETE /api/delete %s: status %d: %s", model, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil
}

// CreateFromGGUF pushes file as a blob and creates model from it.
func (a *API) CreateFromGGUF(ctx context.Context, model, file string) error {
	digest, err := fileDigest(file)
	if err != nil {
		return fmt.Errorf("ollama: model file: %w", err)
	}
	a.note("creating model %s from %s (%s)", model, file, digest)
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("ollama: model file: %w", err)
	}
	defer f.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.Base+"/api/blobs/"+digest, f)
	if err != nil {
		return err
	}
	resp, err := a.longClient().Do(req)
	if err != nil {
		return fmt.Errorf("ollama: push blob: %w", err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("ollama: POST /api/blobs/%s: status %d: %s", digest, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var res struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	stream := false
	_, err = process.DoJSON(ctx, a.longClient(), http.MethodPost, a.Base+"/api/create",
		map[string]any{"model": model, "files": map[string]string{filepath.Base(file): digest}, "stream": &stream}, &res)
	if err != nil {
		return fmt.Errorf("ollama: create %s: %w", model, err)
	}
	if res.Error != "" || res.Status != "success" {
		return fmt.Errorf("ollama: create %s: status %q %s", model, res.Status, res.Error)
	}
	a.note("model %s created", model)
	return nil
}

// Pull is POST /api/pull (not streamed).
func (a *API) Pull(ctx context.Context, model string) error {
	a.note("pulling model %s", model)
	stream := false
	var res struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if _, err := process.DoJSON(ctx, a.longClient(), http.MethodPost, a.Base+"/api/pull", map[string]any{"model": model, "stream": &stream}, &res); err != nil {
		return fmt.Errorf("ollama: pull %s: %w", model, err)
	}
	if res.Error != "" || res.Status != "success" {
		return fmt.Errorf("ollama: pull %s: status %q %s", model, res.Status, res.Error)
	}
	return nil
}

// Load loads model into memory (POST /api/generate without a prompt).
func (a *API) Load(ctx context.Context, model string) error {
	start := time.Now()
	stream := false
	var res struct {
		Done  bool   `json:"done"`
		Error string `json:"error"`
	}
	if _, err := process.DoJSON(ctx, a.longClient(), http.MethodPost, a.Base+"/api/generate", map[string]any{"model": model, "stream": &stream}, &res); err != nil {
		return fmt.Errorf("ollama: load %s: %w", model, err)
	}
	if res.Error != "" {
		return fmt.Errorf("ollama: load %s: %s", model, res.Error)
	}
	a.note("model %s loaded in %.3f s", model, time.Since(start).Seconds())
	return nil
}

// Identity reads the server's identity for model.
func (a *API) Identity(ctx context.Context, model string) (engines.Identity, error) {
	version, rawVersion, err := a.Version(ctx)
	if err != nil {
		return engines.Identity{}, fmt.Errorf("ollama identity: %w", err)
	}
	show, err := a.Show(ctx, model)
	if err != nil {
		if process.IsStatus(err, http.StatusNotFound) {
			return engines.Identity{EngineVersion: version, Raw: map[string]any{"/api/version": rawVersion}},
				fmt.Errorf("ollama identity: the server has no model %q: %w", model, err)
		}
		return engines.Identity{}, fmt.Errorf("ollama identity: %w", err)
	}
	id := engines.Identity{
		Model:         NormalizeName(model),
		EngineVersion: version,
		Raw:           map[string]any{"/api/version": rawVersion, "/api/show": show},
	}
	d, _ := show["details"].(map[string]any)
	level, _ := d["quantization_level"].(string)
	format, _ := d["format"].(string)
	if level == "" {
		// An /api/show without details: the model's entry in /api/tags.
		if td, raw, err := a.tagDetails(ctx, id.Model); err == nil {
			level, format = td.QuantizationLevel, td.Format
			id.Raw["/api/tags"] = raw
		}
	}
	id.Precision = engines.OllamaPrecision(level, format)
	if mi, ok := show["model_info"].(map[string]any); ok {
		arch, _ := mi["general.architecture"].(string)
		if n, ok := mi[arch+".context_length"].(float64); ok {
			id.ContextLength = int(n)
		}
	}
	var ps struct {
		Models []struct {
			Name   string `json:"name"`
			Model  string `json:"model"`
			Digest string `json:"digest"`
		} `json:"models"`
	}
	rawPS, err := process.GetJSON(ctx, a.client(), a.Base+"/api/ps", &ps)
	if err == nil {
		id.Raw["/api/ps"] = rawPS
		for _, m := range ps.Models {
			if m.Name == id.Model || m.Model == id.Model {
				id.Revision = m.Digest
			}
		}
	}
	return id, nil
}

// TagDetails is the part of a model's details joulebench reads (GET
// /api/tags, POST /api/show).
type TagDetails struct {
	Format            string `json:"format"`
	QuantizationLevel string `json:"quantization_level"`
}

// tagDetails is the details of model (its name with the tag) as GET
// /api/tags lists them; not listed is an error.
func (a *API) tagDetails(ctx context.Context, model string) (TagDetails, any, error) {
	var tags struct {
		Models []struct {
			Name    string     `json:"name"`
			Model   string     `json:"model"`
			Details TagDetails `json:"details"`
		} `json:"models"`
	}
	raw, err := process.GetJSON(ctx, a.client(), a.Base+"/api/tags", &tags)
	if err != nil {
		return TagDetails{}, nil, err
	}
	for _, m := range tags.Models {
		if m.Name == model || m.Model == model {
			return m.Details, raw, nil
		}
	}
	return TagDetails{}, raw, fmt.Errorf("GET %s/api/tags does not list %s", a.Base, model)
}

func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// CheckWeights hashes the GGUF file the model is created from (when
// --model-file is given) before the baseline; the digest of the model
// the server loads is its identity's revision (GET /api/ps).
func (e *Engine) CheckWeights(ctx context.Context) (engines.Weights, error) {
	if e.cfg.ModelFile == "" {
		return engines.Weights{}, nil
	}
	w, err := engines.GGUFWeights(ctx, e.cfg.ModelFile)
	if err != nil {
		return engines.Weights{}, fmt.Errorf("%s: %w", Kind, err)
	}
	e.weights = &w
	return w, nil
}
