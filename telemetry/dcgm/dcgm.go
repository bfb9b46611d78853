// Package dcgm is the telemetry source for GPUs behind NVIDIA dcgm-exporter
// (or any Prometheus endpoint with the same metrics): it scrapes one or more
// /metrics endpoints, which is how GPUs on several hosts (multi-node
// serving) are measured from one place.
//
// Per GPU it reads
//
//	DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION   counter, mJ   → energy_j (J)
//	DCGM_FI_DEV_POWER_USAGE                gauge, W      → power_w
//	DCGM_FI_DEV_FB_USED                    gauge, MiB    → mem_used_bytes
//	DCGM_FI_DEV_SM_CLOCK                   gauge, MHz    (throttle reports)
//	DCGM_FI_DEV_CLOCKS_EVENT_REASONS or
//	DCGM_FI_DEV_CLOCK_THROTTLE_REASONS     bit mask      (throttle reports)
//	DCGM_FI_DEV_ENFORCED_POWER_LIMIT or
//	DCGM_FI_DEV_POWER_MGMT_LIMIT           gauge, W      → power_limit_w, when exported
//
// A GPU is identified by host + gpu index + UUID: the host is the Hostname
// label when the exporter sets it, else the endpoint's host name; its
// power.csv ID is "<host>/gpu<index>". A GPU with the energy counter has
// Method "counter", one without "power".
//
// dcgm-exporter refreshes its values every collect interval (-c, 30 s by
// default): run it with -c no longer than joulebench's sampling interval.
// A counter that stays constant while the GPU draws power is flagged
// (AnomalyStaleCounter), and one that goes backwards too
// (AnomalyCounterReset; the archive keeps the raw value). A counter that
// reads a negative or non-finite value is flagged once
// (AnomalyCounterInvalid): that reading keeps its power, without energy.
package dcgm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/redact"
	"github.com/joulebench/joulebench/telemetry"
)

// Metric names read from the endpoints.
const (
	MetricEnergy        = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
	MetricPower         = "DCGM_FI_DEV_POWER_USAGE"
	MetricFBUsed        = "DCGM_FI_DEV_FB_USED"
	MetricSMClock       = "DCGM_FI_DEV_SM_CLOCK"
	MetricClockEvents   = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
	MetricClockThrottle = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
	// The power limit in W, when the exporter's counters include it: the
	// enforced limit, else the power management limit. It bounds a
	// plausible reading (run.json power_limit_w).
	MetricEnforcedLimit = "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"
	MetricMgmtLimit     = "DCGM_FI_DEV_POWER_MGMT_LIMIT"
)

// DefaultTimeout bounds one scrape of one endpoint.
const DefaultTimeout = 5 * time.Second

// staleScrapes is how many scrapes in a row a counter may stay constant
// while its GPU draws more than staleMinW before it is flagged.
const (
	staleScrapes = 3
	staleMinW    = 20.0
)

// Options configure a source.
type Options struct {
	// URLs are the endpoints, e.g. http://node1:9400/metrics.
	URLs []string
	// Client does the scrapes (nil: a client with Timeout).
	Client *http.Client
	// Timeout bounds one scrape (default DefaultTimeout).
	Timeout time.Duration
	// Clock stamps anomalies (nil: telemetry.WallClock).
	Clock telemetry.Clock
	// Logf, when not nil, gets one line per notable event.
	Logf func(string)
}

// Source scrapes dcgm-exporter endpoints.
type Source struct {
	client  *http.Client
	timeout time.Duration
	clock   telemetry.Clock
	logf    func(string)
	eps     []*endpoint

	mu        sync.Mutex
	closed    bool
	anomalies []telemetry.Anomaly
	throttle  telemetry.ThrottleLog
}

var (
	_ telemetry.Source           = (*Source)(nil)
	_ telemetry.ThrottleReporter = (*Source)(nil)
	_ telemetry.AnomalyReporter  = (*Source)(nil)
)

type endpoint struct {
	url     string
	shown   string // url with its credentials and query values hidden, for errors and notes
	urlHost string
	devs    []*device
}

type device struct {
	key     gpuKey // labels that identify the GPU at its endpoint
	info    record.Device
	counter bool

	lastJ  float64
	haveJ  bool
	same   int
	staled bool
	// badJ counts the counter's readings power.csv cannot hold.
	badJ int
}

// gpuKey identifies a GPU within one endpoint's output.
type gpuKey struct{ host, gpu, uuid string }

// sample is what one scrape says about one GPU.
type sample struct {
	powerW, energyJ, memB, smMHz float64
	events                       uint64
	// enforcedW and mgmtW are the power limits in W, 0 when absent.
	enforcedW, mgmtW            float64
	hasPower, hasEnergy, hasMem bool
	hasSM, hasEvents            bool
	model                       string
}

// Open scrapes every endpoint once and lists its GPUs. An endpoint that
// cannot be reached, or reports no GPU with DCGM_FI_DEV_POWER_USAGE, is an
// error.
func Open(ctx context.Context, opts Options) (*Source, error) {
	if len(opts.URLs) == 0 {
		return nil, errors.New("dcgm: no endpoint (--dcgm-url http://HOST:9400/metrics, repeatable)")
	}
	s := &Source{client: opts.Client, timeout: opts.Timeout, clock: opts.Clock, logf: opts.Logf}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.client == nil {
		s.client = &http.Client{Timeout: s.timeout}
	}
	if s.clock == nil {
		s.clock = telemetry.WallClock
	}
	ids := map[string]string{} // device ID -> URL
	for _, raw := range opts.URLs {
		u, err := url.Parse(raw)
		if err != nil {
			// Not shown: what does not parse cannot be redacted.
			return nil, errors.New("dcgm: --dcgm-url: does not parse as a URL (want http://HOST:PORT/metrics)")
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("dcgm: --dcgm-url %q: want http://HOST:PORT/metrics", redact.URL(raw))
		}
		ep := &endpoint{url: raw, shown: redact.URL(raw), urlHost: u.Hostname()}
		got, err := s.scrape(ctx, ep)
		if err != nil {
			return nil, err
		}
		keys := make([]gpuKey, 0, len(got))
		for k, sm := range got {
			if sm.hasPower {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("dcgm: %s: no GPU reports %s (is this a dcgm-exporter endpoint, with the power field enabled?)", ep.shown, MetricPower)
		}
		sort.Slice(keys, func(i, j int) bool {
			a, b := keys[i], keys[j]
			if a.host != b.host {
				return a.host < b.host
			}
			ai, aerr := strconv.Atoi(a.gpu)
			bi, berr := strconv.Atoi(b.gpu)
			if aerr == nil && berr == nil && ai != bi {
				return ai < bi
			}
			if a.gpu != b.gpu {
				return a.gpu < b.gpu
			}
			return a.uuid < b.uuid
		})
		for _, k := range keys {
			sm := got[k]
			host := k.host
			if host == "" {
				host = ep.urlHost
			}
			d := &device{key: k, counter: sm.hasEnergy}
			d.info = record.Device{
				ID:         host + "/gpu" + k.gpu,
				Name:       sm.model,
				UUID:       k.uuid,
				Host:       host,
				Method:     "power",
				PowerField: MetricPower,
			}
			if d.counter {
				d.info.Method = "counter"
			}
			d.info.PowerLimitW = sm.enforcedW
			if d.info.PowerLimitW == 0 {
				d.info.PowerLimitW = sm.mgmtW
			}
			if prev, dup := ids[d.info.ID]; dup {
				return nil, fmt.Errorf("dcgm: GPU %s (%s) reported by %s and %s: the same exporter listed twice, or two exporters with the same Hostname", d.info.ID, k.uuid, prev, ep.shown)
			}
			ids[d.info.ID] = ep.shown
			ep.devs = append(ep.devs, d)
		}
		s.eps = append(s.eps, ep)
	}
	return s, nil
}

// Name returns "dcgm".
func (s *Source) Name() string { return Name }

// Devices lists the GPUs of every endpoint, in --dcgm-url order.
func (s *Source) Devices(context.Context) ([]record.Device, error) {
	var out []record.Device
	for _, ep := range s.eps {
		for _, d := range ep.devs {
			out = append(out, d.info)
		}
	}
	return out, nil
}

// Read scrapes every endpoint (concurrently when there are several) and
// returns one reading per GPU. An endpoint that fails, or a GPU that
// vanished or lost its power value, is an error.
func (s *Source) Read(ctx context.Context) ([]telemetry.Reading, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, telemetry.ErrStopped
	}
	results := make([]map[gpuKey]sample, len(s.eps))
	errs := make([]error, len(s.eps))
	if len(s.eps) == 1 {
		results[0], errs[0] = s.scrape(ctx, s.eps[0])
	} else {
		var wg sync.WaitGroup
		for i, ep := range s.eps {
			wg.Go(func() { results[i], errs[i] = s.scrape(ctx, ep) })
		}
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []telemetry.Reading
	for i, ep := range s.eps {
		for _, d := range ep.devs {
			sm, ok := results[i][d.key]
			if !ok || !sm.hasPower {
				return nil, fmt.Errorf("dcgm: %s no longer reports %s of GPU %s (%s)", ep.shown, MetricPower, d.info.ID, d.info.UUID)
			}
			r := telemetry.Reading{Device: d.info.ID, PowerW: sm.powerW, MemUsedBytes: -1}
			if sm.hasMem {
				r.MemUsedBytes = int64(sm.memB)
			}
			if d.counter {
				if !sm.hasEnergy {
					return nil, fmt.Errorf("dcgm: %s no longer reports %s of GPU %s (%s)", ep.shown, MetricEnergy, d.info.ID, d.info.UUID)
				}
				if e := sm.energyJ; math.IsNaN(e) || math.IsInf(e, 0) || e < 0 {
					// power.csv cannot hold it: the reading keeps its
					// power, without energy, and the counter's history
					// is left as it was.
					s.badCounter(d, e)
				} else {
					s.checkCounter(d, sm)
					r.EnergyJ, r.HasEnergy = e, true
				}
			}
			if sm.hasEvents {
				mhz := 0.0
				if sm.hasSM {
					mhz = sm.smMHz
				}
				s.throttle.Observe(d.info.ID, telemetry.ClockEventCauses(sm.events), mhz)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// checkCounter flags a counter that went backwards or stays constant while
// the GPU draws power.
func (s *Source) checkCounter(d *device, sm sample) {
	defer func() { d.lastJ, d.haveJ = sm.energyJ, true }()
	if !d.haveJ {
		return
	}
	switch {
	case sm.energyJ < d.lastJ:
		s.flag(d, telemetry.AnomalyCounterReset, fmt.Sprintf("energy counter of %s (%s) went from %.3f J to %.3f J (driver reload or GPU reset): kept raw in power.csv, the analysis counts it as a reset", d.info.ID, d.info.UUID, d.lastJ, sm.energyJ))
		d.same = 0
	case sm.energyJ == d.lastJ && sm.powerW > staleMinW:
		d.same++
		if d.same >= staleScrapes && !d.staled {
			d.staled = true
			s.flag(d, telemetry.AnomalyStaleCounter, fmt.Sprintf("energy counter of %s (%s) unchanged over %d scrapes while drawing %.0f W: dcgm-exporter's collect interval (-c) is probably longer than the sampling interval; energy between its updates is stepwise", d.info.ID, d.info.UUID, d.same+1, sm.powerW))
		}
	default:
		d.same = 0
	}
}

// badCounter reports, once per GPU, an energy counter that read a value
// power.csv cannot hold (negative, NaN or infinite).
func (s *Source) badCounter(d *device, j float64) {
	d.badJ++
	if d.badJ > 1 {
		return
	}
	s.flag(d, telemetry.AnomalyCounterInvalid, fmt.Sprintf("energy counter of %s (%s) read %v J, not a number ≥ 0: such readings are written with their power and without energy (further ones are not logged); with readings missing their energy, the analysis integrates this GPU's power instead of its counter", d.info.ID, d.info.UUID, j))
}

func (s *Source) flag(d *device, kind, detail string) {
	a := telemetry.Anomaly{T: s.clock(), Device: d.info.ID, Kind: kind, Detail: detail}
	s.anomalies = append(s.anomalies, a)
	if s.logf != nil {
		s.logf(detail)
	}
}

// Throttled reports GPUs whose clock-event reasons showed throttling since
// the previous call (when the exporter exports them).
func (s *Source) Throttled() (bool, string) { return s.throttle.Report() }

// Anomalies returns the counter resets and stale counters seen so far.
func (s *Source) Anomalies() []telemetry.Anomaly {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]telemetry.Anomaly(nil), s.anomalies...)
}

// Close ends the source; later reads return telemetry.ErrStopped.
func (s *Source) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// scrape fetches and parses one endpoint.
func (s *Source) scrape(ctx context.Context, ep *endpoint) (map[gpuKey]sample, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.url, nil)
	if err != nil {
		return nil, fmt.Errorf("dcgm: %s: %w", ep.shown, unwrapURL(err))
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	resp, err := s.client.Do(req)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, fmt.Errorf("dcgm: scrape %s: no answer within %s", ep.shown, s.timeout)
		}
		return nil, fmt.Errorf("dcgm: scrape %s: %w", ep.shown, unwrapURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("dcgm: scrape %s: HTTP %s", ep.shown, resp.Status)
	}
	got, err := parse(resp.Body, expfmt.ResponseFormat(resp.Header))
	if err != nil {
		return nil, fmt.Errorf("dcgm: %s: %w", ep.shown, err)
	}
	return got, nil
}

// unwrapURL drops the *url.Error around a client's error: its text
// repeats the URL with its query (the secrets that ep.shown hides).
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// parse reads a Prometheus exposition (text, OpenMetrics or protobuf, as
// format says; FmtUnknown is read as text) and returns the DCGM values per
// GPU.
func parse(r io.Reader, format expfmt.Format) (map[gpuKey]sample, error) {
	dec := expfmt.NewDecoder(r, format)
	out := map[gpuKey]sample{}
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("parse metrics: %w", err)
		}
		name := mf.GetName()
		switch name {
		case MetricEnergy, MetricPower, MetricFBUsed, MetricSMClock, MetricClockEvents, MetricClockThrottle,
			MetricEnforcedLimit, MetricMgmtLimit:
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			v, ok := value(m)
			if !ok {
				continue
			}
			k, model := labels(m)
			if k.gpu == "" {
				continue // not a per-GPU series
			}
			sm := out[k]
			if sm.model == "" {
				sm.model = model
			}
			switch name {
			case MetricPower:
				if !sm.hasPower {
					sm.powerW, sm.hasPower = v, true
				}
			case MetricEnergy:
				if !sm.hasEnergy {
					sm.energyJ, sm.hasEnergy = v/1000, true
				}
			case MetricFBUsed:
				if !sm.hasMem {
					sm.memB, sm.hasMem = v*(1<<20), true
				}
			case MetricSMClock:
				if !sm.hasSM {
					sm.smMHz, sm.hasSM = v, true
				}
			case MetricClockEvents, MetricClockThrottle:
				if !sm.hasEvents && v >= 0 {
					sm.events, sm.hasEvents = uint64(v), true
				}
			case MetricEnforcedLimit:
				if sm.enforcedW == 0 && v > 0 {
					sm.enforcedW = v
				}
			case MetricMgmtLimit:
				if sm.mgmtW == 0 && v > 0 {
					sm.mgmtW = v
				}
			}
			out[k] = sm
		}
	}
}

func value(m *dto.Metric) (float64, bool) {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue(), true
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue(), true
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

// labels returns the GPU identity of a series and its model name.
// dcgm-exporter labels: gpu, UUID, device, modelName, Hostname, pci_bus_id,
// and pod/namespace/container when it maps GPUs to Kubernetes pods (the
// same GPU then appears once per pod: the first series wins).
func labels(m *dto.Metric) (gpuKey, string) {
	var k gpuKey
	var model string
	for _, l := range m.GetLabel() {
		switch l.GetName() {
		case "gpu":
			k.gpu = l.GetValue()
		case "UUID", "uuid":
			k.uuid = l.GetValue()
		case "Hostname":
			k.host = l.GetValue()
		case "modelName":
			model = l.GetValue()
		}
	}
	return k, model
}
