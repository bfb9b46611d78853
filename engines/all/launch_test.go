package all_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/engines/ollama"
	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/workload"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		spec all.Spec
		want string // "" = valid
	}{
		{all.Spec{Kind: "vllm", Common: engines.Common{Model: "m"}}, ""},
		{all.Spec{Kind: "vllm"}, "needs --model"},
		{all.Spec{Kind: "sglang"}, "needs --model"},
		{all.Spec{Kind: "llamacpp"}, "needs --model-file"},
		{all.Spec{Kind: "llamacpp", Common: engines.Common{ModelFile: "f.gguf"}}, ""},
		{all.Spec{Kind: "ollama"}, "needs --model"},
		{all.Spec{Kind: "openai"}, "needs --engine-url"},
		{all.Spec{Kind: "tgi"}, "want one of vllm"},
		{all.Spec{URL: "http://x", Kind: "openai"}, ""},
		{all.Spec{URL: "http://x", API: "ollama"}, ""},
		{all.Spec{URL: "http://x", API: "grpc"}, "--engine-api"},
		{all.Spec{URL: "http://x", Kind: "sim"}, "with --engine-url"},
		{all.Spec{Kind: "ollama", Common: engines.Common{Model: "m"}, Settings: engines.Settings{"ollama-api": "rest"}}, `--ollama-api "rest": want native or openai`},
		// Ollama's settings, declared by its descriptor, reach the engine.
		{all.Spec{Kind: "ollama", Common: engines.Common{Model: "m"}, Settings: engines.Settings{"ollama-pull": "true"}}, "--ollama-pull would download m"},
		{all.Spec{Kind: "sglang", Common: engines.Common{Model: "m"}, Settings: engines.Settings{"health-generate": "maybe"}}, `--health-generate "maybe": want true or false`},
		{all.Spec{Kind: "ollama", Thinking: "maybe", Common: engines.Common{Model: "m"}}, "--thinking"},
		{all.Spec{Kind: "vllm", Common: engines.Common{Model: "m", TP: -1}}, "negative"},
	}
	for _, c := range cases {
		err := c.spec.Validate()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: err %v, want %q", c.spec, err, c.want)
		}
	}
}

// Each kind builds its engine, with the run directory, the request model
// and the identity to expect.
func TestNewKinds(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		spec      all.Spec
		kind      string
		model     string
		expect    engines.Identity
		external  bool
		hasMetric bool
	}{
		{all.Spec{Kind: "vllm", EngineVersion: "0.8.5", Common: engines.Common{Model: "org/m", MaxModelLen: 4096, TP: 2, Revision: "abc"}}, "vllm", "org/m",
			engines.Identity{Model: "org/m", ContextLength: 4096, EngineVersion: "0.8.5"}, false, true},
		// --dtype asks for fp16; --precision wins over it.
		{all.Spec{Kind: "vllm", Common: engines.Common{Model: "org/m", Args: []string{"--dtype", "half"}}}, "vllm", "org/m",
			engines.Identity{Model: "org/m", Precision: engines.Precision{DType: "fp16"}}, false, true},
		{all.Spec{Kind: "vllm", Precision: "FP8", Common: engines.Common{Model: "org/m", Args: []string{"--dtype", "half"}}}, "vllm", "org/m",
			engines.Identity{Model: "org/m", Precision: engines.Precision{Quant: "fp8"}}, false, true},
		{all.Spec{Kind: "sglang", Common: engines.Common{Model: "org/m", TP: 2, Revision: "abc"}}, "sglang", "org/m",
			engines.Identity{Model: "org/m", TensorParallel: 2, Revision: "abc"}, false, true},
		{all.Spec{Kind: "llamacpp", Common: engines.Common{ModelFile: "/m/tiny.gguf", MaxModelLen: 512}}, "llamacpp", "tiny",
			engines.Identity{Model: "tiny", ContextLength: 512}, false, true},
		{all.Spec{Kind: "ollama", Common: engines.Common{Model: "tiny"}}, "ollama", "tiny", engines.Identity{Model: "tiny:latest"}, false, false},
		{all.Spec{URL: "http://127.0.0.1:1", Kind: "openai", Common: engines.Common{Model: "x"}}, "openai", "x", engines.Identity{Model: "x"}, true, true},
		{all.Spec{URL: "http://127.0.0.1:1", API: "ollama", Common: engines.Common{Model: "x"}}, "ollama", "x", engines.Identity{Model: "x:latest"}, true, false},
	}
	for _, c := range cases {
		c.spec.RunDir = dir
		e, err := all.New(c.spec)
		if err != nil {
			t.Fatalf("%+v: %v", c.spec, err)
		}
		if e.Kind() != c.kind || all.Model(c.spec, e) != c.model || all.IsExternal(e) != c.external {
			t.Errorf("%s: kind %s model %s external %v", c.kind, e.Kind(), all.Model(c.spec, e), all.IsExternal(e))
		}
		if got := all.Expect(c.spec, e); got.Model != c.expect.Model || got.ContextLength != c.expect.ContextLength ||
			got.TensorParallel != c.expect.TensorParallel || got.Revision != c.expect.Revision || got.EngineVersion != c.expect.EngineVersion ||
			got.Precision.Label() != c.expect.Precision.Label() {
			t.Errorf("%s: expect %+v, want %+v", c.kind, got, c.expect)
		}
		_, hasMetrics := e.(engines.MetricsSource)
		if hasMetrics != c.hasMetric && c.kind != "ollama" {
			t.Errorf("%s: metrics source %v", c.kind, hasMetrics)
		}
		info := e.Info()
		if info.Thinking != "default" {
			t.Errorf("%s: thinking %q", c.kind, info.Thinking)
		}
		if !c.external && info.Extra["run_dir"] != dir+"/engine" {
			t.Errorf("%s: run dir %v", c.kind, info.Extra["run_dir"])
		}
	}
}

func TestNewClientFitsAPI(t *testing.T) {
	oll, _ := all.New(all.Spec{Kind: "ollama", Common: engines.Common{Model: "tiny"}})
	clock := func() float64 { return 1 }
	if _, ok := all.NewClient(all.Spec{}, oll, clock)("http://x").(*ollama.Client); !ok {
		t.Error("Ollama's native client expected")
	}
	if _, ok := all.NewClient(all.Spec{Settings: engines.Settings{"ollama-api": ollama.RequestsOpenAI}}, oll, clock)("http://x").(*openai.Client); !ok {
		t.Error("OpenAI client expected with --ollama-api openai")
	}
	if e2, _ := all.New(all.Spec{Kind: "ollama", Common: engines.Common{Model: "tiny"}, Settings: engines.Settings{"ollama-api": ollama.RequestsOpenAI}}); e2.Info().Extra["request_api"] != "openai" || oll.Info().Extra["request_api"] != "ollama-native" {
		t.Errorf("request api not recorded: %v %v", e2.Info().Extra, oll.Info().Extra)
	}
	ll, _ := all.New(all.Spec{Kind: "llamacpp", Common: engines.Common{ModelFile: "t.gguf"}})
	if _, ok := all.NewClient(all.Spec{}, ll, clock)("http://x").(*openai.Client); !ok {
		t.Error("OpenAI client expected for llama.cpp")
	}
}

// The thinking setting reaches the request body and run.json.
func TestThinkingSetting(t *testing.T) {
	var mu sync.Mutex
	var body string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		body = string(b)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n"+
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5,\"completion_tokens_details\":{\"reasoning_tokens\":2}}}\n\ndata: [DONE]\n\n")
	}))
	defer ts.Close()
	spec := all.Spec{URL: ts.URL, Kind: "openai", Thinking: all.ThinkingOff, Common: engines.Common{Model: "m"}}
	e, err := all.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	rec := all.NewClient(spec, e, openai.NewClock())(ts.URL).Do(context.Background(), workload.Request{ID: "r", Model: "m", Chat: true, Prompt: "hi"})
	if !rec.OK || rec.ReasoningTokens != 2 || rec.OutputTokens != 5 || rec.OutputChars != 4 {
		t.Errorf("record %+v", rec)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(body, `"chat_template_kwargs":{"enable_thinking":false}`) {
		t.Errorf("body %s", body)
	}
	if e.Info().Thinking != "off" {
		t.Errorf("thinking %q", e.Info().Thinking)
	}
}

// llama-server closes its connection after a streamed answer while
// announcing keep-alive; the client resends on a fresh connection instead
// of recording a failure.
func TestStaleKeepAliveIsRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				body := "data: {\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":\"length\"}],\"usage\":{\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nKeep-Alive: timeout=5, max=100\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
				// Wait for the next request on this connection, then drop it.
				_, _ = br.Peek(1)
			}(c)
		}
	}()
	url := "http://" + ln.Addr().String()
	e, _ := all.New(all.Spec{URL: url, Kind: "openai", Common: engines.Common{Model: "m"}})
	d := all.NewClient(all.Spec{}, e, openai.NewClock())(url)
	for i := 0; i < 10; i++ {
		rec := d.Do(context.Background(), workload.Request{ID: "r", Model: "m", Chat: true, Prompt: "hi"})
		if !rec.OK {
			t.Fatalf("request %d: %s", i, rec.Error)
		}
	}
}

// The side path scrapes engines with /metrics, into the sink, on the
// run's clock; engines without one get no scraper.
func TestStartMetrics(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "vllm:num_requests_running 2\nvllm:num_requests_waiting 0\nother 1\n")
	}))
	defer ts.Close()
	spec := all.Spec{URL: ts.URL, Kind: "vllm", ScrapeInterval: 10 * time.Millisecond, Common: engines.Common{Model: "m"}}
	e, _ := all.New(spec)
	rec := newRecorder()
	sc := all.StartMetrics(context.Background(), spec, e, all.MetricsConfig{Clock: func() float64 { return 7 }, Sink: rec.sink})
	if sc == nil {
		t.Fatal("no scraper for vLLM")
	}
	rec.waitFirst(t)
	if err := sc.Stop(); err != nil {
		t.Fatal(err)
	}
	got := rec.samples()
	if len(got) < 2 || got[0].T != 7 || got[0].Name != "vllm:num_requests_running" {
		t.Errorf("samples %+v", got)
	}
	oll, _ := all.New(all.Spec{Kind: "ollama", Common: engines.Common{Model: "tiny"}})
	if all.StartMetrics(context.Background(), all.Spec{}, oll, all.MetricsConfig{}) != nil {
		t.Error("Ollama has no /metrics")
	}
}

// An API key reaches an external server with every request — identity
// queries and benchmark requests — and nowhere else: not in the engine's
// run.json information nor in a failed request's error.
func TestAPIKeySentAndNeverArchived(t *testing.T) {
	const key = "sk-test-0123456789"
	var mu sync.Mutex
	var missing []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			mu.Lock()
			missing = append(missing, r.URL.Path)
			mu.Unlock()
			http.Error(w, `{"error":"bad key `+r.Header.Get("Authorization")+`"}`, http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/v1/models":
			io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"+
				"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"+
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
		}
	}))
	defer srv.Close()
	spec := all.Spec{Kind: "openai", URL: srv.URL, API: engines.APIOpenAI, APIKey: key, Common: engines.Common{Model: "m"}}
	e, err := all.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Identity(ctx); err != nil {
		t.Fatalf("identity with the key: %v", err)
	}
	rec := all.NewClient(spec, e, openai.NewClock())(e.BaseURL()).Do(ctx, workload.Request{ID: "r", Model: "m", Prompt: "p", Chat: true})
	if !rec.OK {
		t.Fatalf("request with the key failed: %+v", rec)
	}
	mu.Lock()
	if len(missing) > 0 {
		t.Errorf("requests without the key: %v", missing)
	}
	mu.Unlock()
	if info := e.Info(); strings.Contains(strings.Join(info.Command, " ")+info.URL+strings.Join(mapValues(info.Env), " "), key) {
		t.Errorf("the key reached the engine information: %+v", info)
	}
	// A wrong key: the server echoes it back; the error must not carry it.
	bad := spec
	bad.APIKey = "sk-wrong-key-987"
	rec = all.NewClient(bad, e, openai.NewClock())(e.BaseURL()).Do(ctx, workload.Request{ID: "r", Model: "m", Prompt: "p", Chat: true})
	if rec.OK || strings.Contains(rec.Error, bad.APIKey) || !strings.Contains(rec.Error, "401") {
		t.Errorf("request with a wrong key: ok %v, error %q (must fail without echoing the key)", rec.OK, rec.Error)
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// recorder is a /metrics sink that keeps what it gets and tells when the
// first non-empty scrape arrived.
type recorder struct {
	mu    sync.Mutex
	got   []record.EngineMetric
	first chan struct{}
	once  sync.Once
}

func newRecorder() *recorder { return &recorder{first: make(chan struct{})} }

func (r *recorder) sink(ms []record.EngineMetric) error {
	r.mu.Lock()
	r.got = append(r.got, ms...)
	r.mu.Unlock()
	if len(ms) > 0 {
		r.once.Do(func() { close(r.first) })
	}
	return nil
}

// waitFirst waits for the first scrape, however loaded the machine.
func (r *recorder) waitFirst(t *testing.T) {
	t.Helper()
	select {
	case <-r.first:
	case <-time.After(30 * time.Second):
		t.Fatal("no scrape in 30 s")
	}
}

func (r *recorder) samples() []record.EngineMetric {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}
