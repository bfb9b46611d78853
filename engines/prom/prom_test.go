package prom_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/prom"
)

func TestParseKeepsFamilies(t *testing.T) {
	f, err := os.Open("../vllm/testdata/metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keep := map[string]bool{"vllm:num_requests_running": true, "vllm:kv_cache_usage_perc": true, "vllm:e2e_request_latency_seconds": true, "vllm:absent": true}
	ms, missing, err := prom.Parse(f, 12.5, keep)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) != 1 || missing[0] != "vllm:absent" {
		t.Errorf("missing = %v", missing)
	}
	got := map[string]float64{}
	for _, m := range ms {
		if m.T != 12.5 {
			t.Errorf("t = %v", m.T)
		}
		key := m.Name
		if le, ok := m.Labels["le"]; ok {
			key += "{le=" + le + "}"
		}
		got[key] = m.Value
		if m.Labels["model_name"] != "Qwen/Qwen2.5-0.5B-Instruct" {
			t.Errorf("%s labels %v", m.Name, m.Labels)
		}
	}
	want := map[string]float64{
		"vllm:num_requests_running":                        3,
		"vllm:kv_cache_usage_perc":                         0.0421,
		"vllm:e2e_request_latency_seconds_bucket{le=0.3}":  2,
		"vllm:e2e_request_latency_seconds_bucket{le=1}":    7,
		"vllm:e2e_request_latency_seconds_bucket{le=+Inf}": 9,
		"vllm:e2e_request_latency_seconds_sum":             6.5,
		"vllm:e2e_request_latency_seconds_count":           9,
	}
	if len(got) != len(want) {
		t.Errorf("got %d samples %v, want %d", len(got), got, len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

func TestParseAllWhenNoFilter(t *testing.T) {
	ms, _, err := prom.Parse(strings.NewReader("a 1\n# TYPE b counter\nb{x=\"y\"} 2\nc NaN\n"), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Name != "a" || ms[1].Name != "b" || ms[1].Labels["x"] != "y" {
		t.Errorf("ms = %+v", ms)
	}
	if _, _, err := prom.Parse(strings.NewReader("not a metric line {\n"), 1, nil); err == nil {
		t.Error("bad text accepted")
	}
}

type collector struct {
	mu    sync.Mutex
	ms    []record.EngineMetric
	warns []string
}

func (c *collector) sink(ms []record.EngineMetric) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ms = append(c.ms, ms...)
	return nil
}

func (c *collector) warn(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.warns = append(c.warns, s)
}

func (c *collector) snapshot() ([]record.EngineMetric, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]record.EngineMetric(nil), c.ms...), append([]string(nil), c.warns...)
}

// The scraper scrapes repeatedly, on the run's clock, and warns once
// about a family the engine lacks only when none of the defaults exist.
func TestScraperScrapesEveryInterval(t *testing.T) {
	body, err := os.ReadFile("../llamacpp/testdata/metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) }))
	defer ts.Close()
	var c collector
	s := prom.New(prom.Config{
		URL:      func() string { return ts.URL + "/metrics" },
		Interval: 20 * time.Millisecond,
		// kv_cache_usage_ratio is gone from recent llama.cpp builds.
		Families: []string{"llamacpp:requests_processing", "llamacpp:requests_deferred", "llamacpp:kv_cache_usage_ratio"},
		Clock:    func() float64 { return 42 },
		Sink:     c.sink,
		Warn:     c.warn,
	})
	s.Start(context.Background())
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, _ := s.Stats(); n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	ms, warns := c.snapshot()
	scrapes, samples := s.Stats()
	if scrapes < 3 || samples != 2*scrapes || len(ms) != samples {
		t.Fatalf("%d scrapes, %d samples, %d kept", scrapes, samples, len(ms))
	}
	for _, m := range ms {
		if m.T != 42 || (m.Name != "llamacpp:requests_processing" && m.Name != "llamacpp:requests_deferred") {
			t.Errorf("sample %+v", m)
		}
	}
	if len(warns) != 0 {
		t.Errorf("warnings %v (a missing optional family is not reported)", warns)
	}
}

// No /metrics (404): one warning, scraping ends, Stop is not an error.
func TestScraperMissingEndpointWarns(t *testing.T) {
	var hits int
	var mu sync.Mutex
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer ts.Close()
	var c collector
	s := prom.New(prom.Config{URL: func() string { return ts.URL + "/metrics" }, Interval: 10 * time.Millisecond, Sink: c.sink, Warn: c.warn})
	s.Start(context.Background())
	waitUntil(t, func() bool { _, w := c.snapshot(); return len(w) > 0 })
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	_, warns := c.snapshot()
	mu.Lock()
	defer mu.Unlock()
	if hits != 1 || len(warns) != 1 || !strings.Contains(warns[0], "404") {
		t.Errorf("hits %d, warnings %v", hits, warns)
	}
}

// An engine that never listens: quiet retries, one warning at Stop.
func TestScraperUnreachable(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL + "/metrics"
	ts.Close()
	var c collector
	var attempts atomic.Int32 // each scrape asks for the URL
	s := prom.New(prom.Config{URL: func() string { attempts.Add(1); return url }, Interval: 10 * time.Millisecond, Sink: c.sink, Warn: c.warn})
	s.Start(context.Background())
	waitUntil(t, func() bool { return attempts.Load() >= 4 })
	_, warns := c.snapshot()
	if len(warns) != 0 {
		t.Errorf("warned while retrying: %v", warns)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, warns = c.snapshot(); len(warns) != 1 || !strings.Contains(warns[0], "never answered") {
		t.Errorf("warnings %v", warns)
	}
}

// Listed families are reported missing when asked for explicitly.
func TestScraperReportsMissingFamilies(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("x 1\n")) }))
	defer ts.Close()
	var c collector
	s := prom.New(prom.Config{URL: func() string { return ts.URL }, Families: []string{"x", "y"}, ReportMissing: true, Sink: c.sink, Warn: c.warn})
	if err := s.ScrapeNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.ScrapeNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	ms, warns := c.snapshot()
	if len(ms) != 2 || len(warns) != 1 || !strings.Contains(warns[0], "does not expose y") {
		t.Errorf("samples %v, warnings %v", ms, warns)
	}
}

// waitUntil polls cond until it holds, failing the test after 30 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 30 s")
		}
	}
}
