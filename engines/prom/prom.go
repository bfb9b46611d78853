// Package prom is the engine-state side path: it scrapes an inference
// engine's Prometheus /metrics every interval, parses the text format with
// prometheus/common/expfmt, keeps the families asked for and hands the
// samples to a sink (engine_metrics.jsonl). It is never used for energy
// or for stage boundaries.
//
// A missing endpoint (HTTP 404) is reported once as a warning and ends the
// scraping; an endpoint that cannot be reached is retried quietly (the
// engine may not be listening yet) and reported once if it never answered;
// families absent from a scrape are reported once.
package prom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	neturl "net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/internal/redirect"
	"github.com/joulebench/joulebench/engines/process"
	"github.com/joulebench/joulebench/internal/runclock"
)

// ErrNoEndpoint says the engine has no /metrics (HTTP 404).
var ErrNoEndpoint = errors.New("no metrics endpoint")

// Config says what to scrape and where the samples go.
type Config struct {
	// URL returns the metrics URL (e.g. http://127.0.0.1:8000/metrics);
	// it is asked at each scrape, so it may be empty until the engine has
	// one ("" skips the scrape).
	URL func() string
	// Interval between scrapes (default 5 s).
	Interval time.Duration
	// Families are the metric family names to keep (e.g.
	// vllm:num_requests_running); empty keeps every family.
	Families []string
	// ReportMissing warns (once) about each listed family a scrape lacks;
	// otherwise only a scrape with none of them is reported (defaults
	// list families some versions of an engine do not have).
	ReportMissing bool
	// Clock gives the run's time in Unix seconds (default: a new run clock, internal/runclock).
	Clock func() float64
	// Sink receives the samples of one scrape; an error stops scraping
	// and is returned by Stop.
	Sink func([]record.EngineMetric) error
	// Warn receives the warnings (default: dropped).
	Warn func(string)
	// HTTP is the client (default: 5 s timeout).
	HTTP *http.Client
}

// Scraper scrapes on its own goroutine between Start and Stop.
type Scraper struct {
	cfg  Config
	keep map[string]bool

	mu       sync.Mutex
	cancel   context.CancelFunc
	done     chan struct{}
	err      error
	scrapes  int
	samples  int
	warned   map[string]bool
	answered bool
	failures int
	lastFail string
	stopped  bool
}

// New returns a scraper; Start begins scraping.
func New(cfg Config) *Scraper {
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = runclock.Func()
	}
	if cfg.Warn == nil {
		cfg.Warn = func(string) {}
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 5 * time.Second}
	}
	// The URL's query and the client's key go to this server only.
	cfg.HTTP = redirect.Guard(cfg.HTTP)
	s := &Scraper{cfg: cfg, warned: map[string]bool{}}
	if len(cfg.Families) > 0 {
		s.keep = map[string]bool{}
		for _, f := range cfg.Families {
			s.keep[f] = true
		}
	}
	return s
}

// Start scrapes at once, then every interval, until Stop or ctx is done.
func (s *Scraper) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go s.loop(ctx)
}

func (s *Scraper) loop(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		err := s.ScrapeNow(ctx)
		switch {
		case errors.Is(err, ErrNoEndpoint):
			return
		case err != nil && ctx.Err() == nil && isSinkErr(err):
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Stop ends scraping, waits for the goroutine and returns a sink error.
// An endpoint that never answered is reported as a warning here.
func (s *Scraper) Stop() error {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	already := s.stopped
	s.stopped = true
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !already && !s.answered && s.failures > 0 && !s.warned["never"] {
		s.warned["never"] = true
		s.cfg.Warn(fmt.Sprintf("engine metrics: the endpoint never answered (%d tries; last: %s)", s.failures, s.lastFail))
	}
	return s.err
}

// Stats returns the number of successful scrapes and of samples kept.
func (s *Scraper) Stats() (scrapes, samples int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scrapes, s.samples
}

type sinkError struct{ err error }

func (e *sinkError) Error() string { return "engine metrics: write: " + e.err.Error() }
func (e *sinkError) Unwrap() error { return e.err }

func isSinkErr(err error) bool {
	var se *sinkError
	return errors.As(err, &se)
}

func (s *Scraper) warnOnce(key, msg string) {
	s.mu.Lock()
	seen := s.warned[key]
	s.warned[key] = true
	s.mu.Unlock()
	if !seen {
		s.cfg.Warn(msg)
	}
}

// ScrapeNow scrapes once and hands the kept samples to the sink.
func (s *Scraper) ScrapeNow(ctx context.Context) error {
	target := s.cfg.URL()
	if target == "" {
		return nil
	}
	// url is the URL as written out: no user info or query values.
	url := process.RedactURL(target)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("engine metrics: GET %s: %w", url, unwrapURLError(err))
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.cfg.HTTP.Do(req)
	if err != nil {
		err = fmt.Errorf("engine metrics: GET %s: %w", url, unwrapURLError(err))
		s.mu.Lock()
		s.failures++
		s.lastFail = err.Error()
		s.mu.Unlock()
		return err
	}
	defer resp.Body.Close()
	t := s.cfg.Clock()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		s.mu.Lock()
		s.answered = true
		s.mu.Unlock()
		s.warnOnce("404", fmt.Sprintf("engine metrics: GET %s: 404, the engine has no metrics endpoint; engine_metrics.jsonl stays empty", url))
		return ErrNoEndpoint
	case resp.StatusCode != http.StatusOK:
		s.mu.Lock()
		s.failures++
		s.lastFail = fmt.Sprintf("status %d", resp.StatusCode)
		s.mu.Unlock()
		s.warnOnce("status", fmt.Sprintf("engine metrics: GET %s: status %d (retrying)", url, resp.StatusCode))
		return fmt.Errorf("engine metrics: GET %s: status %d", url, resp.StatusCode)
	}
	ms, missing, err := Parse(io.LimitReader(resp.Body, 32<<20), t, s.keep)
	s.mu.Lock()
	s.answered = true
	s.mu.Unlock()
	if err != nil {
		s.warnOnce("parse", fmt.Sprintf("engine metrics: GET %s: %v", url, err))
		return err
	}
	if len(missing) > 0 && (s.cfg.ReportMissing || len(missing) == len(s.keep)) {
		s.warnOnce("missing:"+strings.Join(missing, ","), fmt.Sprintf("engine metrics: %s does not expose %s", url, strings.Join(missing, ", ")))
	}
	if len(ms) > 0 && s.cfg.Sink != nil {
		if err := s.cfg.Sink(ms); err != nil {
			return &sinkError{err}
		}
	}
	s.mu.Lock()
	s.scrapes++
	s.samples += len(ms)
	s.mu.Unlock()
	return nil
}

// Parse reads the Prometheus text format and returns one EngineMetric per
// sample at time t, families sorted by name, keeping only the families in
// keep (all when keep is nil); missing lists the kept names that were not
// there. Histograms give name_bucket{le}, name_sum and name_count samples,
// summaries name{quantile}, name_sum and name_count, like the text format.
// NaN samples are dropped (JSON has no NaN).
func Parse(r io.Reader, t float64, keep map[string]bool) (ms []record.EngineMetric, missing []string, err error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, nil, fmt.Errorf("parse: %w", err)
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		if keep == nil || keep[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for n := range keep {
		if _, ok := fams[n]; !ok {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	for _, n := range names {
		ms = appendFamily(ms, fams[n], t)
	}
	return ms, missing, nil
}

func appendFamily(ms []record.EngineMetric, f *dto.MetricFamily, t float64) []record.EngineMetric {
	name := f.GetName()
	add := func(n string, labels map[string]string, v float64) {
		if math.IsNaN(v) {
			return
		}
		if math.IsInf(v, 0) {
			return
		}
		ms = append(ms, record.EngineMetric{T: t, Name: n, Labels: labels, Value: v})
	}
	for _, m := range f.GetMetric() {
		labels := labelMap(m.GetLabel())
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			add(name, labels, m.GetCounter().GetValue())
		case dto.MetricType_GAUGE:
			add(name, labels, m.GetGauge().GetValue())
		case dto.MetricType_SUMMARY:
			sm := m.GetSummary()
			for _, q := range sm.GetQuantile() {
				add(name, with(labels, "quantile", formatFloat(q.GetQuantile())), q.GetValue())
			}
			add(name+"_sum", labels, sm.GetSampleSum())
			add(name+"_count", labels, float64(sm.GetSampleCount()))
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			h := m.GetHistogram()
			for _, b := range h.GetBucket() {
				add(name+"_bucket", with(labels, "le", formatFloat(b.GetUpperBound())), float64(b.GetCumulativeCount()))
			}
			add(name+"_sum", labels, h.GetSampleSum())
			add(name+"_count", labels, float64(h.GetSampleCount()))
		default:
			add(name, labels, m.GetUntyped().GetValue())
		}
	}
	return ms
}

func labelMap(lps []*dto.LabelPair) map[string]string {
	if len(lps) == 0 {
		return nil
	}
	out := make(map[string]string, len(lps))
	for _, lp := range lps {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

func with(labels map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for a, b := range labels {
		out[a] = b
	}
	out[k] = v
	return out
}

func formatFloat(f float64) string {
	if math.IsInf(f, +1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// unwrapURLError drops net/url's copy of the URL (it keeps the query).
func unwrapURLError(err error) error {
	var ue *neturl.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
