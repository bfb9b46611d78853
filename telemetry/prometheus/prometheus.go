// Package prometheus is the telemetry source for GPUs whose exporter
// (dcgm-exporter on a cluster) is scraped by a Prometheus server: it reads
// the samples Prometheus stored, with their scrape timestamps, through the
// HTTP API, instead of scraping the exporter itself.
//
// Per GPU it reads, by default (each name is an option, so that other
// exporters fit)
//
//	DCGM_FI_DEV_POWER_USAGE                gauge, W    → power_w
//	DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION   counter, mJ → energy_j (J), when present
//	DCGM_FI_DEV_FB_USED                    gauge, MiB  → mem_used_bytes, when present
//
// restricted by a label selector naming the engine's GPUs
// (`Hostname="node1",gpu=~"0|1"`). A GPU is identified by the labels
// Hostname (else instance), gpu and UUID; its power.csv ID is
// "<host>/gpu<index>".
//
// Each Read asks for the raw samples stored since the previous one (an
// instant query of a range vector, METRIC{selector}[Ns], whose result
// keeps every sample's own scrape timestamp; query_range would resample
// them on a step grid) and returns one reading per stored sample, stamped
// with its scrape time. Prometheus stores a sample only after its scrape,
// so a Read waits, at most MaxWait, until every GPU has a sample at or
// after the instant it was called: the samples of a stage's last seconds
// are read when the stage ends, not lost to the scrape delay. The clocks
// of joulebench and of the Prometheus server must agree (NTP).
//
// The source records the scrape interval it saw: Anomalies reports the two
// scrape times around the median gap (events
// scrape_interval_from:prometheus and scrape_interval_to:prometheus) and
// around the largest gap (scrape_gap_max_from / scrape_gap_max_to), so a
// profile check can compare them with the precision its stage boundaries
// need.
package prometheus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/redact"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/telemetry/dcgm"
)

// Defaults.
const (
	DefaultTimeout = 10 * time.Second
	// DefaultMaxWait bounds how long a Read waits for the scrape that
	// covers its instant.
	DefaultMaxWait = 5 * time.Second
	// Device is the device name of the scrape-interval events.
	Device = "prometheus"
	// Default metric names: dcgm-exporter's.
	DefaultPowerMetric  = dcgm.MetricPower
	DefaultEnergyMetric = dcgm.MetricEnergy
	DefaultMemMetric    = dcgm.MetricFBUsed
	// Event kinds (run.json events "<kind>:prometheus").
	EventIntervalFrom = "scrape_interval_from"
	EventIntervalTo   = "scrape_interval_to"
	EventGapMaxFrom   = "scrape_gap_max_from"
	EventGapMaxTo     = "scrape_gap_max_to"
)

// Options configure a source.
type Options struct {
	// URL is the Prometheus server, e.g. http://prometheus:9090.
	URL string
	// Selector is the label matchers of the engine's GPUs, without braces:
	// `Hostname="node1",gpu=~"0|1"` (empty: every GPU the server knows).
	Selector string
	// Metric names (defaults: dcgm-exporter's). EnergyMetric and
	// MemMetric may be "-" to read no counter / no memory.
	PowerMetric, EnergyMetric, MemMetric string
	// EnergyScale converts the counter to joules (default 0.001: mJ).
	EnergyScale float64
	// MemScale converts the memory metric to bytes (default 1 MiB).
	MemScale float64
	// Client does the queries (nil: a client with Timeout).
	Client  *http.Client
	Timeout time.Duration
	// MaxWait bounds a Read's wait for the covering scrape.
	MaxWait time.Duration
	// Clock is the run clock (nil: telemetry.WallClock).
	Clock telemetry.Clock
	// Logf, when not nil, gets one line per notable event.
	Logf func(string)
}

// Source reads GPU power from a Prometheus server.
type Source struct {
	o    Options
	base *url.URL
	devs []*device

	mu        sync.Mutex
	closed    bool
	lastT     float64   // newest sample time returned
	times     []float64 // power sample times of the first device
	warnedLag bool
}

var (
	_ telemetry.Source          = (*Source)(nil)
	_ telemetry.AnomalyReporter = (*Source)(nil)
)

type device struct {
	key  string // host/gpu/uuid
	info record.Device
}

// sample is one stored value with its scrape time.
type sample struct {
	t, v float64
}

// series is one time series of a query result.
type series struct {
	labels  map[string]string
	samples []sample
}

// Open checks the server and lists the GPUs the selector matches (those
// with a power sample in the last minute).
func Open(ctx context.Context, o Options) (*Source, error) {
	if o.PowerMetric == "" {
		o.PowerMetric = dcgm.MetricPower
	}
	if o.EnergyMetric == "" {
		o.EnergyMetric = dcgm.MetricEnergy
	}
	if o.MemMetric == "" {
		o.MemMetric = dcgm.MetricFBUsed
	}
	if o.EnergyScale == 0 {
		o.EnergyScale = 0.001
	}
	if o.MemScale == 0 {
		o.MemScale = 1 << 20
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: o.Timeout}
	}
	if o.Clock == nil {
		o.Clock = telemetry.WallClock
	}
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus: --prometheus-url %q: want http://HOST:9090", redact.URL(o.URL))
	}
	s := &Source{o: o, base: u}
	now := o.Clock()
	power, err := s.query(ctx, o.PowerMetric, 60, now)
	if err != nil {
		return nil, err
	}
	energy := map[string]bool{}
	if o.EnergyMetric != "-" {
		es, err := s.query(ctx, o.EnergyMetric, 60, now)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if len(e.samples) > 0 {
				energy[gpuKey(e.labels)] = true
			}
		}
	}
	seen := map[string]bool{}
	for _, p := range power {
		if len(p.samples) == 0 {
			continue
		}
		k := gpuKey(p.labels)
		if seen[k] {
			return nil, fmt.Errorf("prometheus: selector {%s} matches GPU %s in two series (%v): narrow it, e.g. with job or instance", o.Selector, k, p.labels)
		}
		seen[k] = true
		host, gpu := hostOf(p.labels), p.labels["gpu"]
		d := &device{key: k, info: record.Device{
			ID: host + "/gpu" + gpu, Name: p.labels["modelName"], UUID: firstOf(p.labels, "UUID", "uuid"),
			Host: host, Method: "power", PowerField: o.PowerMetric,
		}}
		if energy[k] {
			d.info.Method = "counter"
		}
		s.devs = append(s.devs, d)
	}
	if len(s.devs) == 0 {
		return nil, fmt.Errorf("prometheus: %s has no %s{%s} sample in the last minute (is dcgm-exporter scraped, and does the selector match the engine's GPUs?)", redact.URL(o.URL), o.PowerMetric, o.Selector)
	}
	sort.Slice(s.devs, func(i, j int) bool { return s.devs[i].info.ID < s.devs[j].info.ID })
	s.readLimits(ctx, now)
	// Read from the newest sample on: older ones are before the run.
	for _, p := range power {
		for _, sm := range p.samples {
			s.lastT = math.Max(s.lastT, sm.t)
		}
	}
	return s, nil
}

// Name returns "prometheus".
func (s *Source) Name() string { return Name }

// Devices lists the GPUs the selector matched.
func (s *Source) Devices(context.Context) ([]record.Device, error) {
	out := make([]record.Device, len(s.devs))
	for i, d := range s.devs {
		out[i] = d.info
	}
	return out, nil
}

// Read returns every sample stored since the previous Read, one reading
// per GPU and scrape, oldest first, after waiting (at most MaxWait) for a
// sample of every GPU at or after the instant of the call.
func (s *Source) Read(ctx context.Context) ([]telemetry.Reading, error) {
	s.mu.Lock()
	closed, from := s.closed, s.lastT
	s.mu.Unlock()
	if closed {
		return nil, telemetry.ErrStopped
	}
	want := s.o.Clock()
	deadline := time.Now().Add(s.o.MaxWait)
	for {
		now := s.o.Clock()
		got, err := s.fetch(ctx, from, now)
		if err != nil {
			return nil, err
		}
		if covered(got, s.devs, want) || time.Now().After(deadline) {
			if !covered(got, s.devs, want) {
				s.lagged(want)
			}
			return s.readings(got), nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *Source) lagged(want float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.warnedLag || s.o.Logf == nil {
		return
	}
	s.warnedLag = true
	s.o.Logf(fmt.Sprintf("prometheus: no sample at or after %.3f within %s: the scrape interval is longer than that, or the exporter is not scraped; readings lag behind", want, s.o.MaxWait))
}

// perGPU is one GPU's new samples by metric.
type perGPU struct {
	power, energy, mem []sample
}

func covered(got map[string]*perGPU, devs []*device, want float64) bool {
	for _, d := range devs {
		g := got[d.key]
		if g == nil || len(g.power) == 0 || g.power[len(g.power)-1].t < want {
			return false
		}
	}
	return true
}

// fetch queries every metric for the samples in (from, now].
func (s *Source) fetch(ctx context.Context, from, now float64) (map[string]*perGPU, error) {
	window := int(math.Ceil(now-from)) + 1
	if window < 2 {
		window = 2
	}
	out := map[string]*perGPU{}
	get := func(k string) *perGPU {
		if out[k] == nil {
			out[k] = &perGPU{}
		}
		return out[k]
	}
	for _, m := range []string{s.o.PowerMetric, s.o.EnergyMetric, s.o.MemMetric} {
		if m == "-" {
			continue
		}
		ser, err := s.query(ctx, m, window, now)
		if err != nil {
			return nil, err
		}
		for _, x := range ser {
			var keep []sample
			for _, sm := range x.samples {
				if sm.t > from {
					keep = append(keep, sm)
				}
			}
			g := get(gpuKey(x.labels))
			switch m {
			case s.o.PowerMetric:
				g.power = keep
			case s.o.EnergyMetric:
				g.energy = keep
			case s.o.MemMetric:
				g.mem = keep
			}
		}
	}
	return out, nil
}

// readings turns new samples into readings (time order) and advances the
// read position.
func (s *Source) readings(got map[string]*perGPU) []telemetry.Reading {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []telemetry.Reading
	newest := s.lastT
	for i, d := range s.devs {
		g := got[d.key]
		if g == nil {
			continue
		}
		energy, mem := index(g.energy), index(g.mem)
		for _, p := range g.power {
			r := telemetry.Reading{Device: d.info.ID, PowerW: p.v, MemUsedBytes: -1, T: p.t}
			if d.info.Method == "counter" {
				e, ok := energy[p.t]
				if !ok {
					continue // the counter of this scrape is not stored yet
				}
				r.EnergyJ, r.HasEnergy = e*s.o.EnergyScale, true
			}
			if m, ok := mem[p.t]; ok {
				r.MemUsedBytes = int64(m * s.o.MemScale)
			}
			out = append(out, r)
			newest = math.Max(newest, p.t)
			if i == 0 {
				s.times = append(s.times, p.t)
			}
		}
	}
	s.lastT = newest
	sort.SliceStable(out, func(i, j int) bool { return out[i].T < out[j].T })
	return out
}

func index(ss []sample) map[float64]float64 {
	m := make(map[float64]float64, len(ss))
	for _, x := range ss {
		m[x.t] = x.v
	}
	return m
}

// Anomalies reports the scrape interval seen: the scrape times around the
// median and the largest gap between successive samples of the first GPU.
func (s *Source) Anomalies() []telemetry.Anomaly {
	s.mu.Lock()
	defer s.mu.Unlock()
	from, to, maxFrom, maxTo, ok := Gaps(s.times)
	if !ok {
		return nil
	}
	detail := fmt.Sprintf("prometheus scrape interval seen: median %.3f s, largest gap %.3f s", to-from, maxTo-maxFrom)
	// Notes, not faults: one info line for the four events (a healthy
	// interval printed four warnings); the profiles' audit judges the gaps
	// of the stored samples over each stage.
	return []telemetry.Anomaly{
		{T: from, Device: Device, Kind: EventIntervalFrom, Detail: detail, Note: true},
		{T: to, Device: Device, Kind: EventIntervalTo, Detail: detail, Note: true},
		{T: maxFrom, Device: Device, Kind: EventGapMaxFrom, Detail: detail, Note: true},
		{T: maxTo, Device: Device, Kind: EventGapMaxTo, Detail: detail, Note: true},
	}
}

// Gaps returns the successive times around the median gap and around the
// largest gap of ts (increasing); ok is false with fewer than two times.
func Gaps(ts []float64) (from, to, maxFrom, maxTo float64, ok bool) {
	if len(ts) < 2 {
		return 0, 0, 0, 0, false
	}
	idx := make([]int, len(ts)-1)
	for i := range idx {
		idx[i] = i
	}
	gap := func(i int) float64 { return ts[i+1] - ts[i] }
	sort.SliceStable(idx, func(a, b int) bool { return gap(idx[a]) < gap(idx[b]) })
	m := idx[len(idx)/2]
	x := idx[len(idx)-1]
	return ts[m], ts[m+1], ts[x], ts[x+1], true
}

// Close ends the source; later reads return telemetry.ErrStopped.
func (s *Source) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// query runs the instant query METRIC{selector}[Ws] at time now and
// returns its series with their raw samples.
func (s *Source) query(ctx context.Context, metric string, windowS int, now float64) ([]series, error) {
	q := fmt.Sprintf("%s{%s}[%ds]", metric, s.o.Selector, windowS)
	u := *s.base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/query"
	u.RawQuery = url.Values{"query": {q}, "time": {strconv.FormatFloat(now, 'f', 3, 64)}}.Encode()
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("prometheus: %s: %w", redact.URL(u.String()), err)
	}
	resp, err := s.o.Client.Do(req)
	if err != nil {
		var ue *url.Error // its text repeats the URL with its credentials
		if errors.As(err, &ue) {
			err = fmt.Errorf("%s %s: %w", ue.Op, redact.URL(ue.URL), ue.Err)
		}
		return nil, fmt.Errorf("prometheus: query %s: %w", q, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("prometheus: query %s: %w", q, err)
	}
	return parseMatrix(body, q, resp.Status)
}

// apiResponse is the Prometheus HTTP API envelope.
type apiResponse struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Data      json.RawMessage `json:"data"`
}

type matrixData struct {
	ResultType string `json:"resultType"`
	Result     []struct {
		Metric map[string]string `json:"metric"`
		Values [][2]any          `json:"values"`
	} `json:"result"`
}

// parseMatrix decodes a response whose data is a matrix:
// {"resultType":"matrix","result":[{"metric":{...},"values":[[t,"v"],...]}]}.
func parseMatrix(body []byte, q, status string) ([]series, error) {
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("prometheus: query %s: HTTP %s: not an API response: %w", q, status, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("prometheus: query %s: %s: %s", q, r.ErrorType, r.Error)
	}
	var d matrixData
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return nil, fmt.Errorf("prometheus: query %s: data: %w", q, err)
	}
	if d.ResultType != "matrix" {
		return nil, fmt.Errorf("prometheus: query %s: result type %q, want matrix", q, d.ResultType)
	}
	out := make([]series, 0, len(d.Result))
	for _, x := range d.Result {
		ser := series{labels: x.Metric}
		for _, pair := range x.Values {
			t, ok1 := pair[0].(float64)
			vs, ok2 := pair[1].(string)
			if !ok1 || !ok2 {
				return nil, errors.New("prometheus: query " + q + ": a value is not [time, \"value\"]")
			}
			v, err := strconv.ParseFloat(vs, 64)
			if err != nil {
				return nil, fmt.Errorf("prometheus: query %s: value %q: %w", q, vs, err)
			}
			ser.samples = append(ser.samples, sample{t: t, v: v})
		}
		out = append(out, ser)
	}
	return out, nil
}

func gpuKey(l map[string]string) string {
	return hostOf(l) + "/" + l["gpu"] + "/" + firstOf(l, "UUID", "uuid")
}

// hostOf is the Hostname label dcgm-exporter sets, else the scrape
// target's host.
func hostOf(l map[string]string) string {
	if h := l["Hostname"]; h != "" {
		return h
	}
	inst := l["instance"]
	if h, _, ok := strings.Cut(inst, ":"); ok {
		return h
	}
	return inst
}

func firstOf(l map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := l[k]; v != "" {
			return v
		}
	}
	return ""
}

// readLimits records each GPU's power limit as the exporter reports it
// (DCGM_FI_DEV_ENFORCED_POWER_LIMIT, else DCGM_FI_DEV_POWER_MGMT_LIMIT),
// the newest sample of the last minute: run.json's power_limit_w, which
// shows a GPU setting such as --gpu-power-limit from the exporter's side.
// A server without them leaves the limit unknown (0).
func (s *Source) readLimits(ctx context.Context, now float64) {
	for _, metric := range []string{dcgm.MetricEnforcedLimit, dcgm.MetricMgmtLimit} {
		series, err := s.query(ctx, metric, 60, now)
		if err != nil {
			continue
		}
		for _, sr := range series {
			if len(sr.samples) == 0 {
				continue
			}
			w := sr.samples[len(sr.samples)-1].v
			k := gpuKey(sr.labels)
			for _, d := range s.devs {
				if d.key == k && d.info.PowerLimitW == 0 && w > 0 && !math.IsInf(w, 0) {
					d.info.PowerLimitW = w
				}
			}
		}
	}
}
