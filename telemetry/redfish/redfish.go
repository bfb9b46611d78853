// Package redfish is a whole-node power source: a BMC's Redfish service
// (DMTF DSP0266), read over HTTPS. The node's input power is read from the
// chassis, from the first of these resources the chassis links:
//
//	EnvironmentMetrics  PowerWatts.Reading                 (Chassis 1.15+)
//	Power               PowerControl[].PowerConsumedWatts  (deprecated, common)
//	PowerSubsystem      PowerSupplies/*/Metrics InputPowerWatts.Reading, summed
//
// One device per chassis read (redfish0, redfish1, ...), domain node, method
// power (energy by the trapezoid). The chassis is the one named by
// Options.Chassis, else the first member of /redfish/v1/Chassis that has
// one of those resources (a multi-chassis system such as a GPU tray under
// a node would count twice if all were summed).
//
// Authentication: HTTP basic, or a Redfish session (POST
// SessionService/Sessions, X-Auth-Token, deleted at Close). TLS
// certificates are verified unless Options.Insecure. Credentials are
// never put in errors, logs, device names or notes.
package redfish

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// DefaultTimeout bounds one request.
const DefaultTimeout = 5 * time.Second

// Options configure a source.
type Options struct {
	// URL is the service's base, e.g. https://bmc1 (no credentials in it).
	URL string
	// Chassis is the chassis ID to read (default: the first with power).
	Chassis []string
	// Username and Password authenticate (both empty: no authentication).
	Username, Password string
	// Session authenticates with a Redfish session instead of basic auth.
	Session bool
	// Insecure skips TLS certificate verification (--redfish-insecure).
	Insecure bool
	// Client does the requests (nil: one with Timeout and Insecure).
	Client *http.Client
	// Timeout bounds one request (default DefaultTimeout).
	Timeout time.Duration
	// Logf, when not nil, gets one line per notable event.
	Logf func(string)
}

// reader is one chassis' power reading: the resource and how to read it.
type reader struct {
	dev  record.Device
	path string
	kind string // "env", "power", "subsystem"
}

// Source reads node power from a Redfish service.
type Source struct {
	base    *url.URL
	opts    Options
	client  *http.Client
	readers []reader

	mu      sync.Mutex
	token   string // session token
	session string // session resource to delete at Close
	closed  bool
}

var _ telemetry.Source = (*Source)(nil)

// Open checks the URL, logs in when a session is asked for, and finds the
// chassis' power resource.
func Open(ctx context.Context, opts Options) (*Source, error) {
	u, err := url.Parse(strings.TrimRight(opts.URL, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("redfish: --redfish-url %q: want https://HOST (the BMC)", redactURL(opts.URL))
	}
	if u.User != nil {
		return nil, fmt.Errorf("redfish: --redfish-url %s holds credentials: give them with --redfish-user and JOULEBENCH_REDFISH_PASSWORD instead", redactURL(opts.URL))
	}
	if u.Scheme == "http" && opts.Password != "" && opts.Logf != nil {
		// Said before the first request: basic auth and a session login
		// both carry the password as it is.
		opts.Logf(fmt.Sprintf("redfish: %s is plain http: the password of --redfish-user %s is sent in clear (readable on the network); use https://", u.Redacted(), opts.Username))
	}
	s := &Source{base: u, opts: opts, client: opts.Client}
	if s.opts.Timeout <= 0 {
		s.opts.Timeout = DefaultTimeout
	}
	if s.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: opts.Insecure} //nolint:gosec // the user's explicit --redfish-insecure
		s.client = &http.Client{Timeout: s.opts.Timeout, Transport: tr}
	}
	if opts.Session {
		if err := s.login(ctx); err != nil {
			return nil, err
		}
	}
	if err := s.discover(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// odataRef is a link: {"@odata.id": "/redfish/v1/..."}.
type odataRef struct {
	ID string `json:"@odata.id"`
}

type chassisDoc struct {
	ID                 string    `json:"Id"`
	Name               string    `json:"Name"`
	Manufacturer       string    `json:"Manufacturer"`
	Model              string    `json:"Model"`
	EnvironmentMetrics *odataRef `json:"EnvironmentMetrics"`
	Power              *odataRef `json:"Power"`
	PowerSubsystem     *odataRef `json:"PowerSubsystem"`
}

// discover picks the chassis and the resource each is read from.
func (s *Source) discover(ctx context.Context) error {
	var coll struct {
		Members []odataRef `json:"Members"`
	}
	if err := s.get(ctx, "/redfish/v1/Chassis", &coll); err != nil {
		return err
	}
	want := map[string]bool{}
	for _, c := range s.opts.Chassis {
		want[c] = true
	}
	var seen []string
	for _, m := range coll.Members {
		var c chassisDoc
		if err := s.get(ctx, m.ID, &c); err != nil {
			return err
		}
		seen = append(seen, c.ID)
		if len(want) > 0 && !want[c.ID] {
			continue
		}
		r, ok := s.readerOf(ctx, c)
		if !ok {
			if len(want) > 0 {
				return fmt.Errorf("redfish: chassis %s has no EnvironmentMetrics, Power or PowerSubsystem with a power reading", c.ID)
			}
			continue
		}
		r.dev.ID = fmt.Sprintf("redfish%d", len(s.readers))
		s.readers = append(s.readers, r)
		if len(want) == 0 {
			break // the first chassis with power
		}
	}
	if len(want) > 0 && len(s.readers) < len(want) {
		return fmt.Errorf("redfish: chassis %s not all found (the service has %s)", strings.Join(s.opts.Chassis, ", "), strings.Join(seen, ", "))
	}
	if len(s.readers) == 0 {
		return fmt.Errorf("redfish: no chassis with a power reading among %s", strings.Join(seen, ", "))
	}
	return nil
}

// readerOf finds the first resource of the chassis that gives a reading.
func (s *Source) readerOf(ctx context.Context, c chassisDoc) (reader, bool) {
	name := strings.TrimSpace("Redfish chassis " + c.ID + " (" + strings.TrimSpace(c.Manufacturer+" "+c.Model) + ")")
	dev := record.Device{Name: strings.TrimSuffix(name, " ()"), Host: s.base.Host, Method: "power", Domain: record.DomainNode}
	for _, cand := range []struct {
		ref   *odataRef
		kind  string
		field string
	}{
		{c.EnvironmentMetrics, "env", "EnvironmentMetrics.PowerWatts.Reading"},
		{c.Power, "power", "Power.PowerControl[].PowerConsumedWatts"},
		{c.PowerSubsystem, "subsystem", "PowerSubsystem.PowerSupplies[].Metrics.InputPowerWatts.Reading (sum)"},
	} {
		if cand.ref == nil || cand.ref.ID == "" {
			continue
		}
		r := reader{dev: dev, path: cand.ref.ID, kind: cand.kind}
		if _, err := s.read(ctx, r); err != nil {
			continue
		}
		r.dev.PowerField = cand.field
		return r, true
	}
	return reader{}, false
}

// Name returns "redfish".
func (s *Source) Name() string { return Name }

// Devices returns one node device per chassis read.
func (s *Source) Devices(context.Context) ([]record.Device, error) {
	out := make([]record.Device, len(s.readers))
	for i, r := range s.readers {
		out[i] = r.dev
	}
	return out, nil
}

// Read reads each chassis' power now.
func (s *Source) Read(ctx context.Context) ([]telemetry.Reading, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, telemetry.ErrStopped
	}
	out := make([]telemetry.Reading, 0, len(s.readers))
	for _, r := range s.readers {
		w, err := s.read(ctx, r)
		if err != nil {
			return nil, err
		}
		out = append(out, telemetry.Reading{Device: r.dev.ID, PowerW: w, MemUsedBytes: -1})
	}
	return out, nil
}

// reading is a Redfish sensor excerpt: {"Reading": 374}.
type reading struct {
	Reading *float64 `json:"Reading"`
}

// read returns a chassis' power in W from its resource.
func (s *Source) read(ctx context.Context, r reader) (float64, error) {
	switch r.kind {
	case "env":
		var doc struct {
			PowerWatts *reading `json:"PowerWatts"`
		}
		if err := s.get(ctx, r.path, &doc); err != nil {
			return 0, err
		}
		if doc.PowerWatts == nil || doc.PowerWatts.Reading == nil {
			return 0, fmt.Errorf("redfish: %s: no PowerWatts.Reading", r.path)
		}
		return *doc.PowerWatts.Reading, nil
	case "power":
		var doc struct {
			PowerControl []struct {
				PowerConsumedWatts *float64 `json:"PowerConsumedWatts"`
			} `json:"PowerControl"`
		}
		if err := s.get(ctx, r.path, &doc); err != nil {
			return 0, err
		}
		for _, pc := range doc.PowerControl {
			if pc.PowerConsumedWatts != nil {
				return *pc.PowerConsumedWatts, nil
			}
		}
		return 0, fmt.Errorf("redfish: %s: no PowerControl[].PowerConsumedWatts", r.path)
	}
	return s.readSupplies(ctx, r.path)
}

// readSupplies sums the input power of every power supply of a
// PowerSubsystem.
func (s *Source) readSupplies(ctx context.Context, path string) (float64, error) {
	var sub struct {
		PowerSupplies *odataRef `json:"PowerSupplies"`
	}
	if err := s.get(ctx, path, &sub); err != nil {
		return 0, err
	}
	if sub.PowerSupplies == nil {
		return 0, fmt.Errorf("redfish: %s: no PowerSupplies", path)
	}
	var coll struct {
		Members []odataRef `json:"Members"`
	}
	if err := s.get(ctx, sub.PowerSupplies.ID, &coll); err != nil {
		return 0, err
	}
	total, n := 0.0, 0
	for _, m := range coll.Members {
		var psu struct {
			Metrics *odataRef `json:"Metrics"`
		}
		if err := s.get(ctx, m.ID, &psu); err != nil {
			return 0, err
		}
		if psu.Metrics == nil {
			continue
		}
		var met struct {
			InputPowerWatts *reading `json:"InputPowerWatts"`
		}
		if err := s.get(ctx, psu.Metrics.ID, &met); err != nil {
			return 0, err
		}
		if met.InputPowerWatts != nil && met.InputPowerWatts.Reading != nil {
			total += *met.InputPowerWatts.Reading
			n++
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("redfish: %s: no power supply reports InputPowerWatts", path)
	}
	return total, nil
}

// get fetches a resource into v, authenticated. A session that expired is
// renewed once.
func (s *Source) get(ctx context.Context, path string, v any) error {
	resp, err := s.do(ctx, http.MethodGet, path, nil)
	if err == nil && resp.StatusCode == http.StatusUnauthorized && s.opts.Session {
		resp.Body.Close()
		if err = s.login(ctx); err == nil {
			resp, err = s.do(ctx, http.MethodGet, path, nil)
		}
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("redfish: GET %s: %w", path, err)
	}
	if err := statusError("GET "+path, resp.StatusCode); err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("redfish: GET %s: not the JSON resource expected: %w", path, err)
	}
	return nil
}

// do sends one request with the credentials (basic auth or the session
// token).
func (s *Source) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	ref, err := url.Parse(path)
	if err != nil {
		return nil, fmt.Errorf("redfish: link %q: %w", path, err)
	}
	u := s.base.ResolveReference(ref)
	if u.Host != s.base.Host {
		return nil, fmt.Errorf("redfish: link %s leaves the service %s", path, s.base.Host)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("redfish: %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	s.mu.Lock()
	token := s.token
	s.mu.Unlock()
	switch {
	case token != "":
		req.Header.Set("X-Auth-Token", token)
	case s.opts.Username != "" && !s.opts.Session:
		req.SetBasicAuth(s.opts.Username, s.opts.Password)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("redfish: %s %s: %w", method, u.Redacted(), explainTLS(err))
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error { err := c.ReadCloser.Close(); c.cancel(); return err }

// login opens a session: POST SessionService/Sessions with the user name
// and password; the token comes back in X-Auth-Token.
func (s *Source) login(ctx context.Context) error {
	s.mu.Lock()
	s.token = ""
	s.mu.Unlock()
	body, _ := json.Marshal(map[string]string{"UserName": s.opts.Username, "Password": s.opts.Password})
	resp, err := s.do(ctx, http.MethodPost, "/redfish/v1/SessionService/Sessions", body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if err := statusError("session login", resp.StatusCode); err != nil {
		return err
	}
	tok := resp.Header.Get("X-Auth-Token")
	if tok == "" {
		return errors.New("redfish: session login: no X-Auth-Token in the answer")
	}
	s.mu.Lock()
	s.token, s.session = tok, resp.Header.Get("Location")
	s.mu.Unlock()
	return nil
}

// statusError says what a failed status means.
func statusError(what string, code int) error {
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fmt.Errorf("redfish: %s: %d %s: check --redfish-user and JOULEBENCH_REDFISH_PASSWORD", what, code, http.StatusText(code))
	}
	return fmt.Errorf("redfish: %s: %d %s", what, code, http.StatusText(code))
}

// explainTLS adds what to do to a certificate error.
func explainTLS(err error) error {
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var cv *tls.CertificateVerificationError
	if errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &cv) {
		return fmt.Errorf("%w (the BMC's TLS certificate is not trusted: add its CA to the system's trust store, or pass --redfish-insecure to skip verification)", err)
	}
	return err
}

// redactURL hides a password in a URL for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// Close ends the session, if any.
func (s *Source) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	session := s.session
	s.mu.Unlock()
	if session == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	resp, err := s.do(ctx, http.MethodDelete, session, nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return statusError("session logout", resp.StatusCode)
}

// plainHTTP reports whether rawURL is a plain http URL (no TLS).
func plainHTTP(rawURL string) bool {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	return err == nil && strings.EqualFold(u.Scheme, "http")
}
