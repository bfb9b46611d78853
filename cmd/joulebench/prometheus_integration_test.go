//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

// dcgmRamp is a dcgm-exporter /metrics endpoint for one GPU whose power
// rises linearly from t0: P(τ) = 100 + 2τ W, τ = t − t0 in seconds. Its
// energy counter is the exact integral, in mJ as dcgm-exporter reports it:
// E(τ) = 1000·(100τ + τ²). Values are computed when Prometheus scrapes.
type dcgmRamp struct{ t0 time.Time }

func (d dcgmRamp) power(tau float64) float64     { return 100 + 2*tau }
func (d dcgmRamp) energyJ(tau float64) float64   { return 100*tau + tau*tau }
func (d dcgmRamp) tau(unixS float64) float64     { return unixS - float64(d.t0.UnixNano())/1e9 }
func (d dcgmRamp) integral(a, b float64) float64 { return d.energyJ(d.tau(b)) - d.energyJ(d.tau(a)) }

func (d dcgmRamp) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	tau := time.Since(d.t0).Seconds()
	const labels = `gpu="0",UUID="GPU-7e57a1b2-0000-0000-0000-000000000000",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="jb-prom-test",DCGM_FI_DRIVER_VERSION="550.54.15"`
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{%s} %.6f\n", labels, d.power(tau))
	fmt.Fprintf(w, "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).\n# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{%s} %.3f\n", labels, 1000*d.energyJ(tau))
	fmt.Fprintf(w, "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n# TYPE DCGM_FI_DEV_FB_USED gauge\nDCGM_FI_DEV_FB_USED{%s} 1024\n", labels)
}

// startPrometheus runs the Prometheus binary bin on 127.0.0.1 (free port,
// temp storage), scraping target every second, and returns its URL once it
// has stored a first power sample.
func startPrometheus(t *testing.T, bin, target string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: dcgm\n    static_configs:\n      - targets: [%q]\n", target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// Dies with the test process, even a killed one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
	})
	base := "http://" + addr
	q := base + "/api/v1/query?" + url.Values{"query": {"DCGM_FI_DEV_POWER_USAGE"}}.Encode()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get(q); err == nil {
			var r struct {
				Data struct {
					Result []json.RawMessage `json:"result"`
				} `json:"data"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			if len(r.Data.Result) > 0 {
				return base
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Fatalf("prometheus at %s stored no power sample within 60 s; its log:\n%s", base, b)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// prometheusBin is the Prometheus server for the test: JOULEBENCH_PROMETHEUS_BIN,
// default /usr/bin/prometheus (Debian's package; .ci/start-prometheus.sh
// installs it). Missing: skip, or fail with JOULEBENCH_REQUIRE_ENGINES=1.
func prometheusBin(t *testing.T) string {
	bin := os.Getenv("JOULEBENCH_PROMETHEUS_BIN")
	if bin == "" {
		bin = "/usr/bin/prometheus"
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("JOULEBENCH_REQUIRE_ENGINES") == "1" {
			t.Fatalf("prometheus server %s: %v (JOULEBENCH_REQUIRE_ENGINES=1; .ci/start-prometheus.sh installs it)", bin, err)
		}
		t.Skipf("no prometheus server at %s (set JOULEBENCH_PROMETHEUS_BIN)", bin)
	}
	return bin
}

// A run on the simulated engine with --telemetry prometheus, against a real
// Prometheus scraping a dcgm-exporter endpoint every second, measures the
// energy of the known power curve.
//
// Hand calculation. With P(τ) = 100 + 2τ W the energy over [a, b] is
// ∫ P dτ = 100(b−a) + (τb² − τa²); e.g. τa = 10 s, τb = 15 s gives
// 500 + (225 − 100) = 625 J. P is linear, so the trapezoid over the
// scraped samples with boundary power interpolated (startup, release) is
// exact. The counter E(τ) = 100τ + τ² J is interpolated linearly between
// scrapes 1 s apart at each boundary: the error is at most E”·h²/8 =
// 2·1/8 = 0.25 J per boundary, 0.5 J per stage (formal). Prometheus stamps
// a sample when the scrape starts and the endpoint computes the value a few
// ms later: δ = 20 ms shifts P by 2·0.02 = 0.04 W, 0.04 J per second of
// stage, against about 110 J per second, i.e. 0.04 %. Tolerance: 0.5 J +
// 0.2 % of the expected energy. A sample stamped 1 s off would be off by
// 2 J per second of stage (~2 %), well outside it.
func TestRunTelemetryPrometheus(t *testing.T) {
	bin := prometheusBin(t)
	ramp := dcgmRamp{t0: time.Now()}
	exporter := httptest.NewServer(ramp) // listens on 127.0.0.1
	defer exporter.Close()
	promURL := startPrometheus(t, bin, strings.TrimPrefix(exporter.URL, "http://"))

	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out, errOut strings.Builder
	err := newApp(&out, &errOut).execute(ctx, []string{"run", "benchmark-1.5", "--out", dir, "--no-progress",
		"--telemetry", "prometheus", "--prometheus-url", promURL, "--prometheus-selector", `Hostname="jb-prom-test"`,
		// Short stages. The ramp never returns to its baseline, so the
		// release band is wide (±99 %: the power stays below 2× baseline for about a minute): release closes after its hold.
		"--set", "baseline=3s", "--set", "sample_interval=1s", "--set", "request_count=24", "--set", "accept_unsteady=true", "--set", "warmup_requests=2",
		"--set", "release_hold=2s", "--set", "release_max_wait=10s", "--set", "release_tolerance=0.99"})
	if err != nil {
		t.Fatalf("run: %v (exit %d)\n%s\n%s", err, exitCode(err), errOut.String(), out.String())
	}
	meta, err := archive.ReadMeta(filepath.Join(dir, archive.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	res, err := archive.ReadResults(filepath.Join(dir, archive.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	num := func(name string) float64 {
		t.Helper()
		v, ok := res.Values[name].Value.(float64)
		if !ok {
			t.Fatalf("results.json %s = %v (%s), want a number", name, res.Values[name].Value, res.Values[name].Note)
		}
		return v
	}
	stage := func(name string) record.Stage {
		t.Helper()
		s, ok := meta.StageByName(name)
		if !ok {
			t.Fatalf("run.json has no stage %s: %+v", name, meta.Stages)
		}
		return s
	}
	startup, formal, release := stage("startup"), stage("formal"), stage("release")
	for _, c := range []struct {
		name string
		a, b float64
	}{
		{"startup_energy_j", startup.Start, startup.End},        // trapezoid
		{"formal_energy_j", formal.Start, formal.End},           // counter
		{"release_energy_j", release.Start, num("release_end")}, // trapezoid, to release complete
	} {
		want := ramp.integral(c.a, c.b)
		got := num(c.name)
		if tol := 0.5 + 0.002*want; math.Abs(got-want) > tol {
			t.Errorf("%s = %.3f J over [τ %.3f, %.3f], want %.3f J ± %.3f (∫ 100+2τ)", c.name, got, ramp.tau(c.a), ramp.tau(c.b), want, tol)
		} else {
			t.Logf("%s = %.3f J, hand integral %.3f J over %.2f s", c.name, got, want, c.b-c.a)
		}
	}
	// The scrape interval seen is recorded (1 s) and the check passes.
	from, ok1 := meta.EventByName("scrape_interval_from:prometheus")
	to, ok2 := meta.EventByName("scrape_interval_to:prometheus")
	if !ok1 || !ok2 || math.Abs(to-from-1) > 0.1 {
		t.Errorf("scrape interval events %v %v: %.3f s, want 1 s", ok1, ok2, to-from)
	}
	if c := res.Values["scrape_interval_fine"]; c.Passed == nil || !*c.Passed {
		t.Errorf("check scrape_interval_fine: %+v", c)
	}
}
