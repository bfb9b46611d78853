package dcgm

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"
	"github.com/joulebench/joulebench/telemetry"
)

// exporter is a local dcgm-exporter stand-in (httptest binds 127.0.0.1):
// each scrape gets the next body of the list; the last one repeats. A body
// "500" answers HTTP 500.
type exporter struct {
	mu     sync.Mutex
	bodies []string
	n      int
	srv    *httptest.Server
}

func newExporter(t *testing.T, files ...string) *exporter {
	t.Helper()
	e := &exporter{}
	for _, f := range files {
		if f == "500" {
			e.bodies = append(e.bodies, f)
			continue
		}
		b, err := os.ReadFile("testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		e.bodies = append(e.bodies, string(b))
	}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		e.mu.Lock()
		body := e.bodies[min(e.n, len(e.bodies)-1)]
		e.n++
		e.mu.Unlock()
		if body == "500" {
			http.Error(w, "collector failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *exporter) url() string { return e.srv.URL + "/metrics" }

type manualClock struct {
	mu sync.Mutex
	t  float64
}

func (c *manualClock) Now() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Set(t float64) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// Two hosts through the sampler: identities, methods, and the counter and
// trapezoid energies of each GPU over one second between two scrapes.
func TestTwoHostsThroughSampler(t *testing.T) {
	// Open scrapes once (-0), the two samples get -0 then -1.
	n1 := newExporter(t, "node1-0.prom", "node1-0.prom", "node1-1.prom")
	n2 := newExporter(t, "node2-0.prom", "node2-0.prom", "node2-1.prom")
	clk := &manualClock{}
	src, err := Open(context.Background(), Options{URLs: []string{n1.url(), n2.url()}, Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	devs, _ := src.Devices(context.Background())
	// node1 exports DCGM_FI_DEV_POWER_MGMT_LIMIT (700 W): the limit;
	// node2 does not: 0, unknown.
	want := []record.Device{
		{ID: "node1/gpu0", Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-8c16e996-bd76-aa91-17e7-b48bcd0208ba", Host: "node1", Method: "counter", PowerField: MetricPower, PowerLimitW: 700},
		{ID: "node1/gpu1", Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-3f2d1b7a-55e0-4c1e-9a0e-0c6f61d2a8e4", Host: "node1", Method: "counter", PowerField: MetricPower, PowerLimitW: 700},
		{ID: "127.0.0.1/gpu0", Name: "NVIDIA A10", UUID: "GPU-a1b2c3d4-0000-4e5f-8a9b-10c11d12e13f", Host: "127.0.0.1", Method: "counter", PowerField: MetricPower},
		{ID: "127.0.0.1/gpu1", Name: "NVIDIA A10", UUID: "GPU-f0e1d2c3-1111-4b5a-9c8d-7e6f5a4b3c2d", Host: "127.0.0.1", Method: "power", PowerField: MetricPower},
	}
	if len(devs) != len(want) {
		t.Fatalf("devices = %+v", devs)
	}
	for i := range want {
		if devs[i] != want[i] {
			t.Errorf("device %d = %+v\nwant %+v", i, devs[i], want[i])
		}
	}

	var rows []record.PowerSample
	smp := telemetry.NewSampler(src, time.Hour, clk.Now, func(s []record.PowerSample) error {
		rows = append(rows, s...)
		return nil
	}, nil)
	for _, ts := range []float64{10, 11} {
		clk.Set(ts)
		if err := smp.SampleNow(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 8", len(rows))
	}
	// First sample, node1/gpu0: 412.5 W, 31035686671 mJ, 61234 MiB.
	if r := rows[0]; r.PowerW != 412.5 || !r.HasEnergy || r.EnergyJ != 31035686.671 || r.MemUsedBytes != 61234<<20 || r.T != 10 {
		t.Errorf("row 0 = %+v", r)
	}
	// The shared GPU (two pod series): the first series wins, 61.2 W, 512 MiB.
	if r := rows[3]; r.Device != "127.0.0.1/gpu1" || r.PowerW != 61.2 || r.HasEnergy || r.MemUsedBytes != 512<<20 {
		t.Errorf("row 3 = %+v", r)
	}
	pd, err := measure.NewPowerData(rows)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dev            string
		counter, trapz float64
	}{
		// counter: +420000 mJ; trapz: (412.5 + 415.25)/2 · 1 s.
		{"node1/gpu0", 420, 413.875},
		// counter: +399500 mJ; trapz: (398 + 401)/2.
		{"node1/gpu1", 399.5, 399.5},
		// counter: +142700 mJ; trapz: (142.3 + 143.1)/2.
		{"127.0.0.1/gpu0", 142.7, 142.7},
		// no counter; trapz: (61.2 + 60.8)/2.
		{"127.0.0.1/gpu1", math.NaN(), 61},
	} {
		got, err := pd.DeviceEnergy(tc.dev, 10, 11, measure.MethodTrapz)
		if err != nil || math.Abs(got-tc.trapz) > 1e-6 {
			t.Errorf("%s trapz = %v, %v; want %v", tc.dev, got, err, tc.trapz)
		}
		got, err = pd.DeviceEnergy(tc.dev, 10, 11, measure.MethodCounter)
		if math.IsNaN(tc.counter) {
			if err == nil {
				t.Errorf("%s has no counter but counter energy = %v", tc.dev, got)
			}
			continue
		}
		if err != nil || math.Abs(got-tc.counter) > 1e-6 {
			t.Errorf("%s counter = %v, %v; want %v", tc.dev, got, err, tc.counter)
		}
	}
	th, why := src.Throttled()
	if !th || why != "node1/gpu0: sw_power_cap (1 reading), clock down to 1755 MHz" {
		t.Errorf("Throttled = %v %q", th, why)
	}
}

// An exporter that fails mid-run ends sampling with the reason.
func TestScrapeErrorMidRun(t *testing.T) {
	n1 := newExporter(t, "node1-0.prom", "node1-0.prom", "500")
	src, err := Open(context.Background(), Options{URLs: []string{n1.url()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = src.Read(context.Background())
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") || !strings.Contains(err.Error(), n1.url()) {
		t.Errorf("err = %v", err)
	}
	_ = src.Close()
	if _, err := src.Read(context.Background()); !errors.Is(err, telemetry.ErrStopped) {
		t.Errorf("after close: %v", err)
	}
}

// A GPU that vanishes from the exporter is an error.
func TestGPUVanishes(t *testing.T) {
	b, err := os.ReadFile("testdata/node1-0.prom")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, `gpu="1"`) {
			kept = append(kept, l)
		}
	}
	e := newExporter(t, "node1-0.prom")
	e.bodies = append(e.bodies, strings.Join(kept, "\n"))
	src, err := Open(context.Background(), Options{URLs: []string{e.url()}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Read(context.Background())
	if err == nil || !strings.Contains(err.Error(), "node1/gpu1") {
		t.Errorf("err = %v", err)
	}
}

// Counter reset and stale counter are flagged.
func TestCounterAnomalies(t *testing.T) {
	// Reset: -1 then -0 (lower). Stale: -0 repeated while drawing 412 W.
	e := newExporter(t, "node1-1.prom", "node1-1.prom", "node1-0.prom", "node1-0.prom", "node1-0.prom", "node1-0.prom")
	clk := &manualClock{}
	var logs []string
	src, err := Open(context.Background(), Options{URLs: []string{e.url()}, Clock: clk.Now, Logf: func(s string) { logs = append(logs, s) }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		clk.Set(float64(i))
		if _, err := src.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var kinds []string
	for _, a := range src.Anomalies() {
		kinds = append(kinds, a.Device+" "+a.Kind)
	}
	want := "node1/gpu0 energy_counter_reset,node1/gpu1 energy_counter_reset,node1/gpu0 energy_counter_stale,node1/gpu1 energy_counter_stale"
	if strings.Join(kinds, ",") != want || len(logs) != 4 {
		t.Errorf("anomalies = %v\nwant %s (logs %d)", kinds, want, len(logs))
	}
}

func TestOpenErrors(t *testing.T) {
	notDCGM := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("# TYPE up gauge\nup 1\n"))
	}))
	defer notDCGM.Close()
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\" 12\n"))
	}))
	defer garbage.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + "/metrics"
	closed.Close()
	n1 := newExporter(t, "node1-0.prom")

	for _, tc := range []struct {
		urls []string
		want string
	}{
		{nil, "no endpoint"},
		{[]string{"node1:9400/metrics"}, "want http://HOST:PORT/metrics"},
		{[]string{notDCGM.URL + "/metrics"}, "no GPU reports DCGM_FI_DEV_POWER_USAGE"},
		{[]string{garbage.URL + "/metrics"}, "parse metrics"},
		{[]string{closedURL}, closedURL},
		{[]string{n1.srv.URL + "/other"}, "HTTP 404"},
		{[]string{n1.url(), n1.url()}, "listed twice"},
	} {
		_, err := Open(context.Background(), Options{URLs: tc.urls, Timeout: 2 * time.Second})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.urls, err, tc.want)
		}
	}
}

// A slow exporter times out with a clear error.
func TestScrapeTimeout(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	_, err := Open(context.Background(), Options{URLs: []string{slow.URL + "/metrics"}, Timeout: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no answer within 100ms") {
		t.Errorf("err = %v", err)
	}
}

// An energy counter that reads negative: every reading of the GPU keeps
// its power (power.csv gets the row, without energy), and the log says one
// thing, once. Before, the sampler refused each such row whole (the valid
// power with it: a gap) while the source logged "kept raw ... counts it as
// a reset" as well.
func TestNegativeCounterKeepsPower(t *testing.T) {
	b, err := os.ReadFile("testdata/node1-1.prom")
	if err != nil {
		t.Fatal(err)
	}
	// gpu0's counter (31036106671 mJ in node1-1) reads −5000 mJ.
	neg := strings.Replace(string(b), "} 31036106671", "} -5000", 1)
	if neg == string(b) {
		t.Fatal("the test data has no gpu0 counter to replace")
	}
	// Open scrapes node1-0; the samples get node1-0, −, −, node1-1.
	e := newExporter(t, "node1-0.prom", "node1-0.prom")
	e.bodies = append(e.bodies, neg, neg, string(b))
	clk := &manualClock{}
	var logs []string
	logf := func(s string) { logs = append(logs, s) }
	src, err := Open(context.Background(), Options{URLs: []string{e.url()}, Clock: clk.Now, Logf: logf})
	if err != nil {
		t.Fatal(err)
	}
	var rows []record.PowerSample
	smp := telemetry.NewSampler(src, time.Hour, clk.Now, func(s []record.PowerSample) error {
		rows = append(rows, s...)
		return nil
	}, logf)
	devs, _ := src.Devices(context.Background())
	smp.SetDevices(devs)
	for _, ts := range []float64{10, 11, 12, 13} {
		clk.Set(ts)
		if err := smp.SampleNow(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var gpu0 []record.PowerSample
	for _, r := range rows {
		if r.Device == "node1/gpu0" {
			gpu0 = append(gpu0, r)
		}
	}
	// 412.5 W with its counter; 415.25 W twice without; 415.25 W with
	// 31036106671 mJ again.
	if len(gpu0) != 4 || gpu0[1].PowerW != 415.25 || gpu0[1].HasEnergy || gpu0[2].HasEnergy ||
		!gpu0[0].HasEnergy || !gpu0[3].HasEnergy || gpu0[3].EnergyJ != 31036106.671 {
		t.Fatalf("gpu0 rows = %+v, want 4 with power, the two negative ones without energy", gpu0)
	}
	var about []string
	for _, l := range logs {
		if strings.Contains(l, "node1/gpu0") {
			about = append(about, l)
		}
	}
	if len(about) != 1 || !strings.Contains(about[0], "read -5 J, not a number ≥ 0") || !strings.Contains(about[0], "written with their power and without energy") {
		t.Errorf("log lines about gpu0 = %q, want one saying its power is kept", about)
	}
	var kinds []string
	for _, a := range src.Anomalies() {
		kinds = append(kinds, a.Device+" "+a.Kind)
	}
	if strings.Join(kinds, ",") != "node1/gpu0 energy_counter_invalid" {
		t.Errorf("anomalies = %v, want one energy_counter_invalid of node1/gpu0", kinds)
	}
	if an := smp.Anomalies(); len(an) != 0 {
		t.Errorf("the sampler refused readings: %+v", an)
	}
	// What was written, the analysis accepts: gpu0 by its power (its
	// counter has gaps), (412.5 + 415.25)/2 + 415.25 + 415.25 over 10..13.
	pd, err := measure.NewPowerData(rows)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := pd.DeviceEnergy("node1/gpu0", 10, 13, measure.MethodTrapz); err != nil || math.Abs(got-1244.375) > 1e-6 {
		t.Errorf("gpu0 trapz = %v, %v; want 1244.375", got, err)
	}
}
