package redfish

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

const (
	user   = "admin"
	secret = "s3cr3t-Passw0rd"
	token  = "tok-4711"
)

// bmc is a Redfish service on 127.0.0.1 (TLS, self-signed) serving the
// mockup resources, without the ones in drop, behind basic auth or a
// session.
type bmc struct {
	srv       *httptest.Server
	mu        sync.Mutex
	logins    int
	loggedOut bool
	requests  int
}

func newBMC(t *testing.T, drop ...string) *bmc {
	t.Helper()
	return newBMCOn(t, true, drop...)
}

// newBMCOn is newBMC over TLS or, with tls false, over plain http; every
// request it gets is counted in requests.
func newBMCOn(t *testing.T, tls bool, drop ...string) *bmc {
	t.Helper()
	raw, err := os.ReadFile("testdata/rackmount1.json")
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	for _, d := range drop {
		delete(res, d)
	}
	b := &bmc{}
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.requests++
		b.mu.Unlock()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/redfish/v1/SessionService/Sessions":
			var body struct{ UserName, Password string }
			if json.NewDecoder(r.Body).Decode(&body) != nil || body.UserName != user || body.Password != secret {
				http.Error(w, "bad credentials", http.StatusUnauthorized)
				return
			}
			b.mu.Lock()
			b.logins++
			b.mu.Unlock()
			w.Header().Set("X-Auth-Token", token)
			w.Header().Set("Location", "/redfish/v1/SessionService/Sessions/1")
			w.WriteHeader(http.StatusCreated)
			return
		case r.Method == http.MethodDelete && r.URL.Path == "/redfish/v1/SessionService/Sessions/1" && r.Header.Get("X-Auth-Token") == token:
			b.mu.Lock()
			b.loggedOut = true
			b.mu.Unlock()
			return
		}
		u, p, basic := r.BasicAuth()
		if !(basic && u == user && p == secret) && r.Header.Get("X-Auth-Token") != token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, ok := res[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	if tls {
		b.srv.StartTLS()
	} else {
		b.srv.Start()
	}
	t.Cleanup(b.srv.Close)
	return b
}

// The node's power from each resource shape, in the documented order of
// preference.
func TestReadShapes(t *testing.T) {
	tests := []struct {
		name  string
		drop  []string
		want  float64 // W, the mockup's reading
		field string
	}{
		{"EnvironmentMetrics", nil, 374, "EnvironmentMetrics.PowerWatts.Reading"},
		{"Power", []string{"/redfish/v1/Chassis/1U/EnvironmentMetrics"}, 344, "Power.PowerControl[].PowerConsumedWatts"},
		// Bay1 937.4 W; Bay2 has no metrics (absent).
		{"PowerSubsystem", []string{"/redfish/v1/Chassis/1U/EnvironmentMetrics", "/redfish/v1/Chassis/1U/Power"}, 937.4, "PowerSubsystem.PowerSupplies[].Metrics.InputPowerWatts.Reading (sum)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBMC(t, tc.drop...)
			src, err := Open(context.Background(), Options{URL: b.srv.URL, Username: user, Password: secret, Client: b.srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			devs, _ := src.Devices(context.Background())
			if len(devs) != 1 || devs[0].ID != "redfish0" || devs[0].Domain != record.DomainNode || devs[0].Method != "power" ||
				devs[0].PowerField != tc.field || devs[0].Name != "Redfish chassis 1U (Contoso 3500RX)" {
				t.Fatalf("devices %+v", devs)
			}
			rs, err := src.Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 || rs[0].PowerW != tc.want || rs[0].Device != "redfish0" {
				t.Fatalf("readings %+v, want %g W", rs, tc.want)
			}
		})
	}
}

// A session: log in once, the token on every request, logged out at
// Close.
func TestSession(t *testing.T) {
	b := newBMC(t)
	src, err := Open(context.Background(), Options{URL: b.srv.URL, Username: user, Password: secret, Session: true, Client: b.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if rs, err := src.Read(context.Background()); err != nil || rs[0].PowerW != 374 {
		t.Fatalf("read %+v, %v", rs, err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.logins != 1 || !b.loggedOut {
		t.Errorf("logins %d, logged out %v; want 1, true", b.logins, b.loggedOut)
	}
}

// TLS is verified unless asked not to; credentials never appear in errors.
func TestTLSAndCredentials(t *testing.T) {
	b := newBMC(t)
	tests := []struct {
		name string
		opts Options
		want string // "" : opens
	}{
		{"self-signed refused", Options{Username: user, Password: secret}, "--redfish-insecure"},
		{"insecure opts out", Options{Username: user, Password: secret, Insecure: true}, ""},
		{"wrong password", Options{Username: user, Password: secret + "x", Insecure: true}, "401 Unauthorized: check --redfish-user and JOULEBENCH_REDFISH_PASSWORD"},
		{"wrong password, session", Options{Username: user, Password: secret + "x", Session: true, Insecure: true}, "session login: 401"},
		{"credentials in the URL", Options{URL: strings.Replace(b.srv.URL, "https://", "https://admin:"+secret+"@", 1)}, "holds credentials"},
		{"not a URL", Options{URL: "bmc1"}, "want https://HOST"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.URL == "" {
				tc.opts.URL = b.srv.URL
			}
			src, err := Open(context.Background(), tc.opts)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				src.Close()
				return
			}
			if err == nil {
				src.Close()
				t.Fatalf("opened, want an error with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

// A chassis named that has no power resource, or is not there.
func TestChassisChoice(t *testing.T) {
	b := newBMC(t)
	if _, err := Open(context.Background(), Options{URL: b.srv.URL, Username: user, Password: secret, Client: b.srv.Client(), Chassis: []string{"GPU_Tray"}}); err == nil ||
		!strings.Contains(err.Error(), "chassis GPU_Tray not all found (the service has 1U)") {
		t.Errorf("error %v", err)
	}
	b = newBMC(t, "/redfish/v1/Chassis/1U/EnvironmentMetrics", "/redfish/v1/Chassis/1U/Power", "/redfish/v1/Chassis/1U/PowerSubsystem")
	if _, err := Open(context.Background(), Options{URL: b.srv.URL, Username: user, Password: secret, Client: b.srv.Client()}); err == nil ||
		!strings.Contains(err.Error(), "no chassis with a power reading among 1U") {
		t.Errorf("error %v", err)
	}
}

// Over plain http nothing says "TLS verified", and a password is warned
// about (sent in clear) before the first request reaches the BMC.
func TestPlainHTTP(t *testing.T) {
	b := newBMCOn(t, false)
	var logs []string
	requestsAtWarning := -1
	logf := func(s string) {
		logs = append(logs, s)
		if strings.Contains(s, "sent in clear") && requestsAtWarning < 0 {
			b.mu.Lock()
			requestsAtWarning = b.requests
			b.mu.Unlock()
		}
	}
	for _, session := range []bool{false, true} {
		logs, requestsAtWarning = nil, -1
		b.mu.Lock()
		b.requests = 0
		b.mu.Unlock()
		src, err := Open(context.Background(), Options{URL: b.srv.URL, Username: user, Password: secret, Session: session, Logf: logf})
		if err != nil {
			t.Fatal(err)
		}
		src.Close()
		if requestsAtWarning != 0 {
			t.Errorf("session %v: the clear-text warning came after %d requests (logs %q), want before the first", session, requestsAtWarning, logs)
		}
		for _, l := range logs {
			if strings.Contains(l, secret) {
				t.Errorf("a log line shows the password: %q", l)
			}
		}
	}
	// No password: nothing to warn about.
	logs = nil
	if src, err := Open(context.Background(), Options{URL: b.srv.URL, Logf: logf}); err == nil {
		src.Close()
	}
	for _, l := range logs {
		if strings.Contains(l, "in clear") {
			t.Errorf("warned without a password: %q", l)
		}
	}

	for _, tc := range []struct {
		url      string
		insecure bool
		want     string
	}{
		{"http://bmc1", false, "plain http, NOT encrypted: no TLS"},
		{"http://bmc1", true, "plain http, NOT encrypted: no TLS"},
		{"HTTP://bmc1", false, "plain http, NOT encrypted: no TLS"},
		{"https://bmc1", false, "TLS verified"},
		{"https://bmc1", true, "TLS NOT verified (--redfish-insecure)"},
	} {
		if got := transportNote(tc.url, tc.insecure); got != tc.want {
			t.Errorf("transportNote(%q, %v) = %q, want %q", tc.url, tc.insecure, got, tc.want)
		}
	}
}
