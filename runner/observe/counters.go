package observe

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/prom"
	"github.com/joulebench/joulebench/internal/exitcode"
)

// Counter is a server's own count of the output tokens it generated, as
// its Prometheus /metrics exposes it.
type Counter struct {
	// Engine is the engine kind (--engine) that exposes it.
	Engine string
	// Family is the metric family; Histogram says it is a histogram of
	// tokens per request, whose _sum is the total.
	Family    string
	Histogram bool
	// Enable says what the server needs to expose it ("" nothing).
	Enable string
	// Source is where the name was read.
	Source string
}

// Name is the series read: the counter, or the histogram's _sum.
func (c Counter) Name() string {
	if c.Histogram {
		return c.Family + "_sum"
	}
	return c.Family
}

// Counters are the servers' generated-token counters measure reads, in
// the order it looks for them.
func Counters() []Counter {
	return []Counter{
		{Engine: "vllm", Family: "vllm:generation_tokens_total",
			Source: "vLLM docs, Production Metrics: counter, number of generation tokens processed"},
		{Engine: "sglang", Family: "sglang:generation_tokens_total", Enable: "start SGLang with --enable-metrics",
			Source: "SGLang docs, Production Metrics: counter, number of generation tokens processed"},
		{Engine: "llamacpp", Family: "llamacpp:tokens_predicted_total", Enable: "start llama-server with --metrics",
			Source: "llama.cpp server README, GET /metrics: counter, number of generation tokens processed"},
		{Engine: "tgi", Family: "tgi_request_generated_tokens", Histogram: true,
			Source: "TGI docs, Metrics: histogram of generated tokens per request (its _sum is the total)"},
		{Engine: "sim", Family: "sim:generation_tokens_total",
			Source: "joulebench's simulated engine (engines/sim): counter of generated tokens"},
	}
}

// NoCounter are the engine kinds known to expose no token counter, and
// why.
var noCounter = map[string]string{
	"ollama": "Ollama serves no Prometheus /metrics (ollama/ollama#3144, still open; PR #18508 proposes one): its output tokens cannot be counted by the server",
}

// ResolveCounter finds the token counter of the server whose /metrics is
// at url: the one named (--token-metric: a counter, or a histogram's
// _sum), the one of the engine kind given (--engine), else the one known
// counter the server exposes. A server that exposes none, or a kind
// known to have none, is refused (exit 2) with what the server needs.
func ResolveCounter(ctx context.Context, url, kind, named string) (Counter, error) {
	if why, ok := noCounter[kind]; ok && named == "" {
		return Counter{}, exitcode.Invalidf("measure: --engine %s: %s; measure needs the server's own count of output tokens", kind, why)
	}
	ms, err := scrape(ctx, url, nil)
	if err != nil {
		return Counter{}, exitcode.Invalidf("measure: the server's metrics at %s: %v; measure counts output tokens with the server's own counter (give --metrics-url where they are served)", url, err)
	}
	have := map[string]bool{}
	for _, m := range ms {
		have[m.Name] = true
	}
	if named != "" {
		c := Counter{Engine: kind, Family: named, Source: "--token-metric"}
		if !have[named] {
			return Counter{}, exitcode.Invalidf("measure: --token-metric %s: the server's metrics at %s have no series of that name", named, url)
		}
		return c, nil
	}
	var found []Counter
	for _, c := range Counters() {
		if kind != "" && kind == c.Engine {
			if !have[c.Name()] {
				return Counter{}, exitcode.Invalidf("measure: --engine %s: the server's metrics at %s have no %s (%s)%s", kind, url, c.Name(), c.Source, enableHint(c))
			}
			return c, nil
		}
		if have[c.Name()] {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return Counter{}, exitcode.Invalidf("measure: the server's metrics at %s expose no count of generated tokens that measure knows: %s; name one with --token-metric (Ollama has none)", url, knownNames())
	}
	names := make([]string, len(found))
	for i, c := range found {
		names[i] = c.Engine + ": " + c.Name()
	}
	return Counter{}, exitcode.Invalidf("measure: the server's metrics at %s expose several token counters (%s): say which with --engine or --token-metric", url, strings.Join(names, ", "))
}

func enableHint(c Counter) string {
	if c.Enable == "" {
		return ""
	}
	return "; " + c.Enable
}

// knownNames lists the counters measure looks for, by engine.
func knownNames() string {
	var parts []string
	for _, c := range Counters() {
		s := c.Engine + " " + c.Name()
		if c.Enable != "" {
			s += " (" + c.Enable + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// ReadTokens reads the counter c at url now: the sum of its series (one
// per model or label set).
func ReadTokens(ctx context.Context, url string, c Counter) (float64, error) {
	ms, err := scrape(ctx, url, nil)
	if err != nil {
		return 0, err
	}
	var sum float64
	n := 0
	for _, m := range ms {
		if m.Name == c.Name() {
			sum += m.Value
			n++
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("%s: no series %s", url, c.Name())
	}
	return sum, nil
}

// scrape reads the server's /metrics once (the families in keep; all
// when nil) through the engine side path's scraper.
func scrape(ctx context.Context, url string, keep map[string]bool) ([]record.EngineMetric, error) {
	var fams []string
	for f := range keep {
		fams = append(fams, f)
	}
	sort.Strings(fams)
	var got []record.EngineMetric
	sc := prom.New(prom.Config{URL: func() string { return url }, Families: fams,
		Clock: func() float64 { return float64(time.Now().UnixNano()) / 1e9 },
		Sink:  func(ms []record.EngineMetric) error { got = append(got, ms...); return nil }})
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sc.ScrapeNow(ctx); err != nil {
		return nil, err
	}
	return got, nil
}
