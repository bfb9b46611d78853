//go:build unix

package ollama_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/internal/enginetest"
	"github.com/joulebench/joulebench/engines/ollama"
	"github.com/joulebench/joulebench/engines/process/processtest"
)

func TestMain(m *testing.M) { enginetest.Main(m) }

// `ollama serve` launched with OLLAMA_HOST on loopback (a fake serving the
// responses recorded from Ollama 0.6.5): ready after the model is shown and
// loaded; identity from version, show and ps.
func TestServeIdentity(t *testing.T) {
	dir := t.TempDir()
	argvFile := filepath.Join(dir, "argv.json")
	k, v := processtest.Fake{HealthPath: "/api/version", ArgvFile: argvFile, EnvKeys: []string{"OLLAMA_HOST", "OLLAMA_KEEP_ALIVE", "OLLAMA_CONTEXT_LENGTH", "OLLAMA_NUM_PARALLEL", "OLLAMA_MODELS"},
		Routes: map[string]processtest.Route{
			"/api/version":       {Body: processtest.File("testdata/version.json")},
			"POST /api/show":     {Body: processtest.File("testdata/show.json")},
			"POST /api/generate": {Body: `{"model":"tiny","created_at":"2026-11-29T14:09:21Z","response":"","done":true,"done_reason":"load"}`},
			"/api/ps":            {Body: processtest.File("testdata/ps.json")},
		}}.Env()
	e, err := ollama.New(ollama.Config{Common: engines.Common{Bin: os.Args[0], Model: "tiny", MaxModelLen: 2048, Slots: 2, Env: map[string]string{k: v, "OLLAMA_MODELS": dir}}})
	if err != nil {
		t.Fatal(err)
	}
	enginetest.StartReady(t, e, 20*time.Second)
	ctx := context.Background()
	rec := enginetest.Launched(t, argvFile)
	port := strconv.Itoa(e.Config().Port)
	if len(rec.Argv) != 2 || rec.Argv[1] != "serve" || rec.Env["OLLAMA_HOST"] != "127.0.0.1:"+port ||
		rec.Env["OLLAMA_CONTEXT_LENGTH"] != "2048" || rec.Env["OLLAMA_NUM_PARALLEL"] != "2" || rec.Env["OLLAMA_MODELS"] != dir || rec.Env["OLLAMA_KEEP_ALIVE"] == "" {
		t.Errorf("process got %+v", rec)
	}
	id, err := e.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if id.Model != "tiny:latest" || e.Expect().Model != "tiny:latest" || id.EngineVersion != "0.6.5" || id.ContextLength != 4096 ||
		id.Revision != "e598b78527fa75d693ddececbcac1fd50cb7050550e4c4e7e3f5014667d4cf9d" {
		t.Errorf("identity %+v", id)
	}
	info := e.Info()
	if info.Quantization != "F16" || info.API != "ollama" || info.Version != "0.6.5" {
		t.Errorf("info %+v", info)
	}
	// details.quantization_level "F16", format "gguf" (testdata/show.json).
	if id.Precision.Label() != "fp16" || info.Precision != "fp16" || info.ModelFormat != "gguf" {
		t.Errorf("precision %+v, info precision %q format %q; want fp16, gguf", id.Precision, info.Precision, info.ModelFormat)
	}
}

// An already running Ollama's precision is its /api/show
// details.quantization_level, as it names it (Q4_K_M), compared as q4_k_m.
func TestIdentityQuantizationLevel(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/version":
			_, _ = io.WriteString(w, `{"version":"0.9.0"}`)
		case "/api/show":
			_, _ = io.WriteString(w, `{"details":{"format":"gguf","family":"qwen3","parameter_size":"8.2B","quantization_level":"Q4_K_M"},"model_info":{"general.architecture":"qwen3","qwen3.context_length":40960}}`)
		case "/api/ps":
			_, _ = io.WriteString(w, `{"models":[]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	id, err := (&ollama.API{Base: ts.URL}).Identity(context.Background(), "qwen3:8b")
	if err != nil {
		t.Fatal(err)
	}
	if p := id.Precision; p.Label() != "q4_k_m" || p.Quantization() != "Q4_K_M" || p.Format != "gguf" || id.ContextLength != 40960 {
		t.Errorf("identity %+v, precision label %q", id, p.Label())
	}
}

// An /api/show without details: the quantization_level of the model's
// entry in /api/tags.
func TestIdentityQuantizationFromTags(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/version":
			_, _ = io.WriteString(w, `{"version":"0.9.0"}`)
		case "/api/show":
			_, _ = io.WriteString(w, `{"model_info":{"general.architecture":"llama"}}`)
		case "/api/tags":
			_, _ = io.WriteString(w, `{"models":[{"name":"other:latest","details":{"format":"gguf","quantization_level":"Q8_0"}},`+
				`{"name":"tiny:latest","model":"tiny:latest","details":{"format":"gguf","quantization_level":"Q4_0"}}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	id, err := (&ollama.API{Base: ts.URL}).Identity(context.Background(), "tiny")
	if err != nil {
		t.Fatal(err)
	}
	if p := id.Precision; p.Label() != "q4_0" || p.Quantization() != "Q4_0" || id.Raw["/api/tags"] == nil {
		t.Errorf("precision %+v (label %q), raw %v", p, p.Label(), id.Raw)
	}
}

// A model the server lacks is created from the GGUF file: blob pushed
// under its sha256, then /api/create with the file's digest.
func TestEnsureCreatesFromGGUF(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tiny.gguf")
	content := []byte("GGUF not really a model")
	if err := os.WriteFile(file, content, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	var mu sync.Mutex
	var calls []string
	created := false
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, r.Method+" "+r.URL.Path)
		switch {
		case r.URL.Path == "/api/show" && !created:
			w.WriteHeader(404)
			_, _ = io.WriteString(w, `{"error":"model 'tiny' not found"}`)
		case r.URL.Path == "/api/show":
			_, _ = io.WriteString(w, `{"details":{}}`)
		case r.URL.Path == "/api/blobs/"+digest:
			if string(b) != string(content) {
				w.WriteHeader(400)
				return
			}
			w.WriteHeader(201)
		case r.URL.Path == "/api/create":
			var req struct {
				Model string            `json:"model"`
				Files map[string]string `json:"files"`
			}
			_ = json.Unmarshal(b, &req)
			if req.Model != "tiny" || req.Files["tiny.gguf"] != digest {
				w.WriteHeader(400)
				_, _ = io.WriteString(w, `{"error":"bad create"}`)
				return
			}
			created = true
			_, _ = io.WriteString(w, `{"status":"success"}`)
		case r.URL.Path == "/api/generate":
			_, _ = io.WriteString(w, `{"done":true,"done_reason":"load"}`)
		default:
			w.WriteHeader(404)
		}
	}))
	defer ts.Close()
	api := &ollama.API{Base: ts.URL}
	if err := api.Ensure(context.Background(), "tiny", file, false); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "POST /api/show,POST /api/blobs/" + digest + ",POST /api/create,POST /api/generate"
	if got := strings.Join(calls, ","); got != want {
		t.Errorf("calls\n got %s\nwant %s", got, want)
	}
}

func TestEnsureMissingWithoutFile(t *testing.T) {
	missing := processtest.File("testdata/show-missing.json")
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(404)
		_, _ = io.WriteString(w, missing)
	}))
	defer ts.Close()
	err := (&ollama.API{Base: ts.URL}).Ensure(context.Background(), "nope", "", false)
	if err == nil || !strings.Contains(err.Error(), `ollama has no model "nope"`) || !strings.Contains(err.Error(), "model 'nope' not found") {
		t.Errorf("err = %v", err)
	}
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{"tiny": "tiny:latest", "tiny:q4": "tiny:q4", "hf.co/org/m": "hf.co/org/m:latest", "reg:5000/m:t": "reg:5000/m:t", "reg:5000/m": "reg:5000/m:latest"} {
		if got := ollama.NormalizeName(in); got != want {
			t.Errorf("NormalizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// A model joulebench created from --model-file is removed at Stop (DELETE
// /api/delete), and run.json says so; when the server refuses, the model
// is said to be left behind, with how to remove it.
func TestStopRemovesCreatedModel(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tiny.gguf")
	content := []byte("GGUF not really a model")
	if err := os.WriteFile(file, content, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name   string
		delete processtest.Route
		want   string
	}{
		{"removed", processtest.Route{Body: ""}, "removed"},
		{"refused", processtest.Route{Status: 500, Body: `{"error":"busy"}`}, "left behind (remove it with `ollama rm tiny`)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, v := processtest.Fake{HealthPath: "/api/version", Routes: map[string]processtest.Route{
				"/api/version":              {Body: `{"version":"0.6.5"}`},
				"POST /api/show":            {Status: 404, Body: `{"error":"model 'tiny' not found"}`},
				"POST /api/blobs/" + digest: {Status: 201},
				"POST /api/create":          {Body: `{"status":"success"}`},
				"POST /api/generate":        {Body: `{"done":true,"done_reason":"load"}`},
				"DELETE /api/delete":        tc.delete,
			}}.Env()
			e, err := ollama.New(ollama.Config{Common: engines.Common{Bin: os.Args[0], Model: "tiny", ModelFile: file, Env: map[string]string{k: v}}})
			if err != nil {
				t.Fatal(err)
			}
			enginetest.StartReady(t, e, 20*time.Second)
			ctx := context.Background()
			if info := e.Info(); info.Extra["model_created"] != true || info.Extra["created_model"] != nil {
				t.Errorf("before stop: %v", info.Extra)
			}
			if _, err := e.Stop(ctx, 2*time.Second); err != nil {
				t.Fatal(err)
			}
			got, _ := e.Info().Extra["created_model"].(string)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("created_model %q, want %q...", got, tc.want)
			}
		})
	}
}
