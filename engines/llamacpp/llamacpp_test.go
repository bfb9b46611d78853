//go:build unix

package llamacpp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/internal/enginetest"
	"github.com/joulebench/joulebench/engines/llamacpp"
	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/engines/process/processtest"
	"github.com/joulebench/joulebench/workload"
)

func TestMain(m *testing.M) { enginetest.Main(m) }

// llama-server launched from its frozen command line (a fake serving the
// responses recorded from a real one): argv, identity, metrics.
func TestLaunchIdentityMetrics(t *testing.T) {
	dir := t.TempDir()
	argvFile := filepath.Join(dir, "argv.json")
	k, v := processtest.Fake{ReadyAfter: 100 * time.Millisecond, ArgvFile: argvFile, Routes: map[string]processtest.Route{
		"/health":    {Body: `{"status":"ok"}`},
		"/props":     {Body: processtest.File("testdata/props.json")},
		"/v1/models": {Body: processtest.File("testdata/models.json")},
		"/metrics":   {Body: processtest.File("testdata/metrics.txt")},
	}}.Env()
	model := filepath.Join(dir, "tiny.gguf")
	e, err := llamacpp.New(llamacpp.Config{Common: engines.Common{Bin: os.Args[0], ModelFile: model, Slots: 2, MaxModelLen: 1024, Seed: 1, Env: map[string]string{k: v}}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Config().Model != "tiny" {
		t.Errorf("alias %q", e.Config().Model)
	}
	want := []string{os.Args[0], "-m", model, "--host", "127.0.0.1", "--port", strconv.Itoa(e.Config().Port), "--metrics", "-np", "2", "-c", "2048", "--seed", "1", "--alias", "tiny"}
	enginetest.StartReady(t, e, 20*time.Second)
	ctx := context.Background()
	rec := enginetest.Launched(t, argvFile)
	if !slices.Equal(rec.Argv, want) {
		t.Errorf("argv\n got %q\nwant %q", rec.Argv, want)
	}
	id, err := e.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if exp := e.Expect(); id.Model != exp.Model || id.ContextLength != exp.ContextLength || id.EngineVersion != "b11669-Debian" {
		t.Errorf("identity %+v, expect %+v", id, exp)
	}
	names, warns := enginetest.Scrape(t, e.MetricsURL, llamacpp.DefaultFamilies())
	if !slices.Equal(names, []string{"llamacpp:requests_deferred", "llamacpp:requests_processing"}) || len(warns) != 0 {
		t.Errorf("scraped %v, warnings %v", names, warns)
	}
	info := e.Info()
	if info.ModelFormat != "gguf" || info.Extra["slots"] != 2 || info.ContextLength != 1024 {
		t.Errorf("info %+v", info)
	}
}

// A served alias other than the requested one is what the identity check
// catches.
func TestIdentityReportsServedAlias(t *testing.T) {
	k, v := processtest.Fake{Routes: map[string]processtest.Route{
		"/health":    {},
		"/props":     {Body: processtest.File("testdata/props.json")},
		"/v1/models": {Body: processtest.File("testdata/models.json")},
	}}.Env()
	e, err := llamacpp.New(llamacpp.Config{Common: engines.Common{Bin: os.Args[0], ModelFile: "other.gguf", Env: map[string]string{k: v}}})
	if err != nil {
		t.Fatal(err)
	}
	enginetest.StartReady(t, e, 20*time.Second)
	ctx := context.Background()
	id, err := e.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if id.Model != "tiny" || e.Expect().Model != "other" {
		t.Errorf("served %q, expected %q", id.Model, e.Expect().Model)
	}
}

func TestNewNeedsFile(t *testing.T) {
	if _, err := llamacpp.New(llamacpp.Config{}); err == nil {
		t.Error("no model file accepted")
	}
	if got := llamacpp.DefaultAlias("/m/Qwen2.5-0.5B-Q4_K_M.gguf"); got != "Qwen2.5-0.5B-Q4_K_M" {
		t.Errorf("alias %q", got)
	}
}

// A stream recorded from llama-server reads as the methodology needs:
// tokens from usage, llama.cpp's timings kept.
func TestRecordedStream(t *testing.T) {
	body := processtest.File("testdata/chat-stream.txt")
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	}))
	defer ts.Close()
	rec := openai.NewClient(ts.URL).Do(context.Background(), workload.Request{ID: "r", Model: "tiny", Chat: true, Prompt: "Hello", MaxTokens: 4})
	if !rec.OK || rec.OutputTokens != 4 || rec.TokensSource != "usage" || len(rec.TokenTimes) != 4 ||
		rec.EngineTimings["predicted_n"] != 4 || rec.EngineTimings["predicted_per_second"] <= 0 {
		t.Errorf("record %+v", rec)
	}
}
