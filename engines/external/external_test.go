package external_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/engines/external"
	"github.com/joulebench/joulebench/engines/internal/enginetest"
)

func serve(t *testing.T, routes map[string]string) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := routes[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.HasPrefix(body, "@") {
			b, err := os.ReadFile(body[1:])
			if err != nil {
				t.Error(err)
			}
			body = string(b)
		}
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// attach builds the external engine of kind (or of api when kind is "")
// as --engine-url does: through the kind's descriptor.
func attach(t *testing.T, kind, api string, r engines.Remote) (*external.Engine, error) {
	t.Helper()
	d, err := all.Registry().ForRemote(kind, api)
	if err != nil {
		return nil, err
	}
	r.API = api
	e, err := d.Attach(r)
	if err != nil {
		return nil, err
	}
	x, ok := e.(*external.Engine)
	if !ok {
		t.Fatalf("%s: attach built a %T", d.Kind, e)
	}
	return x, nil
}

// An already running vLLM: no process, identity from its endpoints, the
// run has no lifecycle stages.
func TestExternalVLLM(t *testing.T) {
	ts := serve(t, map[string]string{"/health": "", "/version": "@../vllm/testdata/version.json", "/v1/models": "@../vllm/testdata/models.json", "/metrics": "@../vllm/testdata/metrics.txt"})
	e, err := attach(t, "vllm", "", engines.Remote{URL: ts.URL + "/v1/", Model: "Qwen/Qwen2.5-0.5B-Instruct"})
	if err != nil {
		t.Fatal(err)
	}
	enginetest.StartReady(t, e, 5*time.Second)
	ctx := context.Background()
	id, err := e.Identity(ctx)
	if err != nil || id.Model != "Qwen/Qwen2.5-0.5B-Instruct" || id.EngineVersion != "0.8.5.post1" {
		t.Fatalf("identity %+v %v", id, err)
	}
	if at, err := e.Stop(ctx, time.Second); err != nil || !at.IsZero() {
		t.Errorf("stop %v %v", at, err)
	}
	select {
	case <-e.Exited():
		t.Error("an external engine never exits")
	default:
	}
	info := e.Info()
	if info.Managed || info.Extra["external"] != true || info.URL != ts.URL || info.Version != "0.8.5.post1" || !e.External() {
		t.Errorf("info %+v", info)
	}
	if e.MetricsURL() != ts.URL+"/metrics" || e.API() != engines.APIOpenAI {
		t.Errorf("metrics %q api %q", e.MetricsURL(), e.API())
	}
}

// Any OpenAI-compatible server: /v1/models, and the version from whichever
// engine endpoint answers (here llama.cpp's /props).
func TestExternalGenericOpenAI(t *testing.T) {
	ts := serve(t, map[string]string{"/v1/models": "@../llamacpp/testdata/models.json", "/props": "@../llamacpp/testdata/props.json"})
	e, err := attach(t, "", "", engines.Remote{URL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := e.ResolveModel(ctx)
	if err != nil || m != "tiny" {
		t.Fatalf("resolve %q %v", m, err)
	}
	e.SetModel(m)
	if err := e.WaitReady(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	id, err := e.Identity(ctx)
	if err != nil || id.Model != "tiny" || id.EngineVersion != "b11669-Debian" || e.Kind() != "openai" {
		t.Fatalf("identity %+v %v kind %s", id, err, e.Kind())
	}
}

func TestExternalOllama(t *testing.T) {
	ts := serve(t, map[string]string{"/api/version": "@../ollama/testdata/version.json", "/api/show": "@../ollama/testdata/show.json", "/api/ps": "@../ollama/testdata/ps.json", "/api/tags": `{"models":[{"name":"tiny:latest"}]}`})
	e, err := attach(t, "", engines.APIOllama, engines.Remote{URL: ts.URL, Model: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.WaitReady(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	id, err := e.Identity(ctx)
	if err != nil || id.Model != "tiny:latest" || e.Expect().Model != "tiny:latest" || id.EngineVersion != "0.6.5" || e.Kind() != "ollama" || e.MetricsURL() != "" {
		t.Fatalf("identity %+v %v", id, err)
	}
	if m, err := e.ResolveModel(ctx); err != nil || m != "tiny:latest" {
		t.Errorf("resolve %q %v", m, err)
	}
}

func TestExternalNotAnswering(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close()
	e, err := attach(t, "llamacpp", "", engines.Remote{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	err = e.WaitReady(context.Background(), 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), url+"/health") {
		t.Errorf("err = %v", err)
	}
}

func TestExternalConfigErrors(t *testing.T) {
	for _, c := range []struct{ kind, url, api string }{{"", "localhost:8000", ""}, {"", "http://x", "grpc"}, {"tgi", "http://x", ""}, {"sim", "http://x", ""}} {
		if _, err := attach(t, c.kind, c.api, engines.Remote{URL: c.url}); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, err := external.New(external.Config{URL: "http://x", API: "grpc"}); err == nil {
		t.Error("API grpc accepted")
	}
}
