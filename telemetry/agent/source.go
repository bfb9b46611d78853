package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/clocksync"
	"github.com/joulebench/joulebench/internal/redact"
	"github.com/joulebench/joulebench/telemetry"
)

// Name is the source's name (--telemetry agent).
const Name = "agent"

// Endpoint is one agent: its URL and the name its devices' IDs start with
// (empty: the host the agent reports).
type Endpoint struct {
	Name string
	URL  string
}

// ParseEndpoint reads one --agent value: URL or NAME=URL.
func ParseEndpoint(s string) (Endpoint, error) {
	s = strings.TrimSpace(s)
	var e Endpoint
	if name, rest, ok := strings.Cut(s, "="); ok && !strings.Contains(name, "://") {
		e.Name, s = strings.TrimSpace(name), strings.TrimSpace(rest)
		if e.Name == "" || strings.ContainsAny(e.Name, " :/,") {
			return Endpoint{}, fmt.Errorf("--agent %q: a name is a word without spaces, ':', '/' or ',' (NAME=URL)", redact.URL(s))
		}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return Endpoint{}, fmt.Errorf("--agent %q: want http://HOST:PORT or NAME=http://HOST:PORT (no user, query or fragment: the token goes in --agent-token-file)", redact.URL(s))
	}
	e.URL = strings.TrimRight(s, "/")
	return e, nil
}

// Options open the source.
type Options struct {
	Agents []Endpoint
	// Token is the agents' bearer token (required).
	Token string
	// Client makes the requests (nil: a client with no overall timeout,
	// the streams being long).
	Client *http.Client
	// Clock is the run clock (nil: telemetry.WallClock).
	Clock telemetry.Clock
	// Sync bounds each clock measurement.
	Sync clocksync.Options
	// Timeout bounds each request but the streams (0: DefaultTimeout).
	Timeout time.Duration
	// ReadWait bounds how long Read waits for a fresh reading of every
	// device (0: DefaultReadWait).
	ReadWait time.Duration
	// SilentAfter bounds how long an agent's stream may send nothing
	// before the source fails (0: DefaultSilentAfter).
	SilentAfter time.Duration
}

// DefaultSilentAfter is Options.SilentAfter unless set: an agent sends a
// line per device every interval (100 ms by default), so five seconds
// without one is a stream that ended without closing (the agent's source
// gives nothing, a connection that hangs), a dead power source.
const DefaultSilentAfter = 5 * time.Second

// DefaultReadWait is Options.ReadWait unless set: two of the agent's
// default sampling intervals and a margin for the network.
const DefaultReadWait = 250 * time.Millisecond

// DefaultTimeout bounds one request to an agent (a clock probe, the
// device list).
const DefaultTimeout = 5 * time.Second

// maxBuffered bounds the readings kept between two Reads; beyond it the
// source fails rather than drop samples unseen.
const maxBuffered = 1 << 16

// Source reads one or several agents (see the package comment).
type Source struct {
	o      Options
	nodes  []*node
	ctx    context.Context // the streams', cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu  sync.Mutex
	buf []telemetry.Reading
	err error
	// latest is each device's newest reading; fresh the devices with a
	// reading in buf; arrived is signalled (without blocking) when a
	// reading arrives or the source fails.
	latest  map[string]telemetry.Reading
	fresh   map[string]bool
	arrived chan struct{}
}

// node is one agent.
type node struct {
	ep   Endpoint
	host string
	devs []record.Device
	// ids maps the agent's device IDs to the run's (prefixed).
	ids map[string]string

	mu      sync.Mutex
	mapping clocksync.Mapping
	endErr  error

	// lastLine is when the stream's latest line arrived (the stream's
	// start before any); guarded by the Source's mu.
	lastLine time.Time
}

var (
	_ telemetry.Source            = (*Source)(nil)
	_ telemetry.ClockSyncReporter = (*Source)(nil)
	_ telemetry.RePlacer          = (*Source)(nil)
)

// Open lists each agent's devices, measures its clock offset and starts
// its sample stream. Any agent's failure is an error naming its URL.
func Open(ctx context.Context, o Options) (*Source, error) {
	switch {
	case len(o.Agents) == 0:
		return nil, errors.New("agent: no agent given (--agent URL, one per node)")
	case o.Token == "":
		return nil, fmt.Errorf("agent: no token: give --agent-token-file FILE or set %s", TokenEnv)
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Clock == nil {
		o.Clock = telemetry.WallClock
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	s := &Source{o: o, latest: map[string]telemetry.Reading{}, fresh: map[string]bool{}, arrived: make(chan struct{}, 1)}
	names := map[string]string{}
	for _, ep := range o.Agents {
		n, err := s.openNode(ctx, ep)
		if err != nil {
			return nil, err
		}
		if prev, dup := names[n.ep.Name]; dup {
			return nil, fmt.Errorf("agent: %s and %s are both named %q: name them --agent NAME=URL", prev, redact.URL(ep.URL), n.ep.Name)
		}
		names[n.ep.Name] = redact.URL(ep.URL)
		s.nodes = append(s.nodes, n)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	for _, n := range s.nodes {
		resp, err := s.get(s.ctx, n.ep.URL+PathSamples, false)
		if err != nil {
			s.cancel()
			s.wg.Wait()
			return nil, err
		}
		s.mu.Lock()
		n.lastLine = time.Now()
		s.mu.Unlock()
		s.wg.Go(func() { s.stream(n, resp.Body) })
	}
	return s, nil
}

// where names an agent in errors: its URL without credentials or query.
func where(ep Endpoint) string { return "agent " + redact.URL(ep.URL) }

func (s *Source) openNode(ctx context.Context, ep Endpoint) (*node, error) {
	var dr DevicesReply
	if err := s.getJSON(ctx, ep.URL+PathDevices, &dr); err != nil {
		return nil, err
	}
	if len(dr.Devices) == 0 {
		return nil, fmt.Errorf("%s: lists no device", where(ep))
	}
	if ep.Name == "" {
		ep.Name = dr.Host
	}
	if ep.Name == "" {
		return nil, fmt.Errorf("%s: reports no host name: name it --agent NAME=URL", where(ep))
	}
	n := &node{ep: ep, host: dr.Host, ids: map[string]string{}}
	for _, d := range dr.Devices {
		if d.ID == "" {
			return nil, fmt.Errorf("%s: a device has no id", where(ep))
		}
		if _, dup := n.ids[d.ID]; dup {
			return nil, fmt.Errorf("%s: device %s listed twice", where(ep), d.ID)
		}
		n.ids[d.ID] = ep.Name + ":" + d.ID
		d.ID = n.ids[d.ID]
		if d.Host == "" {
			d.Host = dr.Host
		}
		n.devs = append(n.devs, d)
	}
	est, err := s.measure(ctx, ep)
	if err != nil {
		return nil, err
	}
	n.mapping = clocksync.NewMapping(est)
	return n, nil
}

// measure measures the agent's clock offset to the run clock.
func (s *Source) measure(ctx context.Context, ep Endpoint) (clocksync.Estimate, error) {
	probe := func(ctx context.Context) (float64, error) {
		var c ClockReply
		if err := s.getJSON(ctx, ep.URL+PathClock, &c); err != nil {
			return 0, err
		}
		return c.T, nil
	}
	est, err := clocksync.Measure(ctx, s.o.Clock, probe, s.o.Sync)
	if err != nil {
		return est, fmt.Errorf("%s: clock offset: %w", where(ep), err)
	}
	if math.Abs(est.OffsetS) > archive.MaxClockOffsetS {
		// The archive reader refuses such an offset in run.json
		// (docs/archive-v1.md, "Bounds"): the run could not read its
		// own archive back.
		return est, fmt.Errorf("%s: clock offset %+.3f s is more than a day (± %d s), the most a run archive accepts: the agent's node clock is misconfigured; set it right (NTP) and run again",
			where(ep), est.OffsetS, archive.MaxClockOffsetS)
	}
	return est, nil
}

// get sends an authorised GET; bounded says whether Timeout applies (not
// to a stream). A status other than 200 is an error naming the URL that
// never quotes the body (an agent's 401 says only Unauthorized).
func (s *Source) get(ctx context.Context, rawURL string, bounded bool) (*http.Response, error) {
	var cancel context.CancelFunc
	if bounded {
		ctx, cancel = context.WithTimeout(ctx, s.o.Timeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("agent %s: %w", redact.URL(rawURL), err)
	}
	req.Header.Set("Authorization", "Bearer "+s.o.Token)
	resp, err := s.o.Client.Do(req)
	if err != nil {
		cancel()
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is named once, redacted
		}
		return nil, fmt.Errorf("agent %s unreachable: %w", redact.URL(rawURL), err)
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<10))
		resp.Body.Close()
		cancel()
		if resp.StatusCode == http.StatusUnauthorized {
			return nil, fmt.Errorf("agent %s refused the token (401 %s): give the token the agent was started with (--agent-token-file or %s)", redact.URL(rawURL), Unauthorized, TokenEnv)
		}
		return nil, fmt.Errorf("agent %s: HTTP %s", redact.URL(rawURL), resp.Status)
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

func (s *Source) getJSON(ctx context.Context, rawURL string, v any) error {
	resp, err := s.get(ctx, rawURL, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		return fmt.Errorf("agent %s: %w", redact.URL(rawURL), err)
	}
	return nil
}

// stream decodes one agent's sample lines into the buffer, each placed on
// the run clock, until the stream ends; an end while the source is open
// is the source's error.
func (s *Source) stream(n *node, body io.ReadCloser) {
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		var x struct {
			Sample
			Error string `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
			s.fail(fmt.Errorf("%s: sample line %d: %w", where(n.ep), line, err))
			return
		}
		if x.Error != "" {
			s.fail(fmt.Errorf("%s: %s", where(n.ep), x.Error))
			return
		}
		r, err := n.reading(x.Sample)
		if err != nil {
			s.fail(fmt.Errorf("%s: sample line %d: %w", where(n.ep), line, err))
			return
		}
		s.mu.Lock()
		if len(s.buf) >= maxBuffered && s.err == nil {
			s.err = fmt.Errorf("%s: more than %d readings arrived between two reads", where(n.ep), maxBuffered)
		}
		s.buf = append(s.buf, r)
		n.lastLine = time.Now()
		s.latest[r.Device] = r
		s.fresh[r.Device] = true
		s.mu.Unlock()
		s.signal()
	}
	if s.ctx.Err() != nil {
		return // closed
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	s.fail(fmt.Errorf("%s: the sample stream ended: %w", where(n.ep), err))
}

// reading checks one sample and places it on the run clock.
func (n *node) reading(x Sample) (telemetry.Reading, error) {
	id, ok := n.ids[x.Device]
	if !ok {
		return telemetry.Reading{}, fmt.Errorf("device %q is not among the agent's devices", x.Device)
	}
	if math.IsNaN(x.T) || math.IsInf(x.T, 0) || x.T <= 0 {
		return telemetry.Reading{}, fmt.Errorf("device %s: t %v is not a time", x.Device, x.T)
	}
	// Streamed, a sample is placed with the start offset: the end one is
	// not known yet. RePlace places it again once it is.
	n.mu.Lock()
	t := x.T - n.mapping.Start.OffsetS
	n.mu.Unlock()
	return telemetry.Reading{Device: id, PowerW: x.PowerW, EnergyJ: x.EnergyJ, HasEnergy: x.HasEnergy, MemUsedBytes: x.MemUsedBytes, T: t}, nil
}

func (s *Source) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
	s.signalLocked()
}

// signal wakes a Read waiting for readings.
func (s *Source) signal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signalLocked()
}

func (s *Source) signalLocked() {
	select {
	case s.arrived <- struct{}{}:
	default:
	}
}

// Name is "agent".
func (s *Source) Name() string { return Name }

// Devices are every agent's devices, in the order the agents were given,
// each ID prefixed with the agent's name ("node1:gpu0") and Host set.
func (s *Source) Devices(context.Context) ([]record.Device, error) {
	var out []record.Device
	for _, n := range s.nodes {
		out = append(out, n.devs...)
	}
	return out, nil
}

// Read returns the readings that arrived since the previous Read, on the
// run clock; a stream that failed or ended is an error naming its agent.
func (s *Source) Read(ctx context.Context) ([]telemetry.Reading, error) {
	wait := s.o.ReadWait
	if wait <= 0 {
		wait = DefaultReadWait
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			return nil, err
		}
		if len(s.fresh) == s.devices() {
			break // every device has a reading since the last Read
		}
		s.mu.Unlock()
		select {
		case <-s.arrived:
			continue
		case <-timer.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s.mu.Lock()
		s.checkSilentLocked()
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			return nil, err
		}
		break
	}
	defer s.mu.Unlock()
	out := s.buf
	// A device whose agent sent nothing new within the wait gets its
	// newest reading again, with its own time: one reading per known
	// device, as a Source answers, and no energy added (same t).
	for _, n := range s.nodes {
		for _, d := range n.devs {
			if !s.fresh[d.ID] {
				if r, ok := s.latest[d.ID]; ok {
					out = append(out, r)
				}
			}
		}
	}
	s.buf = nil
	clear(s.fresh)
	return out, nil
}

// checkSilentLocked fails the source when an agent's stream has sent
// nothing for longer than SilentAfter: a stream that ended without
// closing is a dead power source, not one whose last reading may be
// repeated for ever. Called with s.mu held.
func (s *Source) checkSilentLocked() {
	bound := s.o.SilentAfter
	if bound <= 0 {
		bound = DefaultSilentAfter
	}
	for _, n := range s.nodes {
		if quiet := time.Since(n.lastLine); quiet > bound && s.err == nil {
			s.err = fmt.Errorf("%s: no sample for %s (bound %s): its sample stream went silent", where(n.ep), quiet.Round(time.Millisecond), bound)
		}
	}
}

// devices is the number of devices of every agent.
func (s *Source) devices() int {
	n := 0
	for _, nd := range s.nodes {
		n += len(nd.devs)
	}
	return n
}

// ClockSync returns each agent's offsets; with end, it first measures each
// agent's offset at the end (once), and joins the errors of those it
// could not measure.
func (s *Source) ClockSync(ctx context.Context, end bool) ([]record.ClockSync, error) {
	var errs []error
	out := make([]record.ClockSync, len(s.nodes))
	for i, n := range s.nodes {
		n.mu.Lock()
		ended, endErr := n.mapping.Ended, n.endErr
		n.mu.Unlock()
		if end && !ended && endErr == nil {
			est, err := s.measure(ctx, n.ep)
			n.mu.Lock()
			if err != nil {
				n.endErr = err
			} else {
				n.mapping = n.mapping.WithEnd(est)
			}
			n.mu.Unlock()
		}
		n.mu.Lock()
		m, endErr := n.mapping, n.endErr
		n.mu.Unlock()
		if end && endErr != nil {
			errs = append(errs, endErr)
		}
		cs := record.ClockSync{Source: where(n.ep), Host: n.host, StartOffsetS: m.Start.OffsetS, StartRTTS: m.Start.RTTS, Probes: m.Start.Probes}
		if m.Ended {
			off, rtt := m.End.OffsetS, m.End.RTTS
			cs.EndOffsetS, cs.EndRTTS = &off, &rtt
		}
		out[i] = cs
	}
	return out, errors.Join(errs...)
}

// RePlace places again a sample of device that Read placed at run time t
// with its agent's start offset: once the agent's end offset is measured
// (ClockSync with end), with the offset interpolated between the start and
// the end (clocksync.Mapping.RePlace). It reports false for a device of no
// agent, or of an agent whose end offset is not known (the time stays).
func (s *Source) RePlace(device string, t float64) (float64, bool) {
	for _, n := range s.nodes {
		for _, d := range n.devs {
			if d.ID != device {
				continue
			}
			n.mu.Lock()
			m := n.mapping
			n.mu.Unlock()
			if !m.Ended {
				return t, false
			}
			return m.RePlace(t), true
		}
	}
	return t, false
}

// Close ends the streams.
func (s *Source) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	return nil
}
