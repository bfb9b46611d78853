package runner

import (
	"context"
	"math"
	"path/filepath"
	"sort"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
)

// disaggSpec is benchmark-1.5 on the simulator's disaggregated
// deployment, shortened (40 formal requests of up to 32 tokens, 1 s
// baseline and release hold), its GPUs opened as --telemetry auto does.
func disaggSpec(t *testing.T, msgs *syncBuffer) Spec {
	var logged []string
	s := testSpec(t, msgs)
	s.Profile = "benchmark-1.5"
	s.Engine.Settings = engines.Settings{"sim-preset": "disaggregated"}
	s.Sets = []string{"request_count=40", "max_tokens=32", "warmup_requests=4", "baseline=1s", "release_hold=1s",
		"window=10", "min_windows=2", "accept_unsteady=true"}
	s.OpenTelemetry = testTelemetry(t, &logged, "sim").Open
	s.Out = filepath.Join(t.TempDir(), "run")
	return s
}

// TestRunDisaggregatedPreset: `run benchmark-1.5 --sim-preset
// disaggregated` archives the deployment's parts, devices with host and
// role on two hosts, every request served through the router, the
// decode node's clock offset (0.75 s, injected) measured within half the
// round trip at the start and the end, the decode node's samples on the
// run clock, and the two hosts' GPU energy over the formal stage adding
// up to the formal energy.
func TestRunDisaggregatedPreset(t *testing.T) {
	if testing.Short() {
		t.Skip("a run of about 15 s")
	}
	var msgs syncBuffer
	s := disaggSpec(t, &msgs)
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatalf("run: %v\n%s", err, msgs.String())
	}
	run, err := archive.Load(s.Out)
	if err != nil {
		t.Fatal(err)
	}
	m := run.Meta
	if m.Status != record.StatusComplete || !m.Simulated {
		t.Fatalf("status %q (%s), simulated %v", m.Status, m.Reason, m.Simulated)
	}
	// The parts: prefill and decode on their hosts, the router the entry.
	dep := m.Deployment
	if dep == nil || dep.Entry != "router" || len(dep.Parts) != 3 || !dep.Simulated {
		t.Fatalf("deployment %+v", dep)
	}
	for i, w := range []struct{ name, role, host string }{
		{"prefill", record.RolePrefill, "sim-node-0"}, {"decode", record.RoleDecode, "sim-node-1"}, {"router", record.RoleRouter, "sim-node-0"},
	} {
		p := dep.Parts[i]
		if p.Name != w.name || p.Role != w.role || p.Host != w.host || !p.Managed || p.URL == "" || len(p.Command) == 0 ||
			p.Identity == nil || p.Identity.Model != "sim-llm-8b" {
			t.Errorf("part %d = %+v, want %s (%s on %s) with its identity", i, p, w.name, w.role, w.host)
		}
	}
	if m.Engine.URL != dep.Parts[2].URL {
		t.Errorf("engine URL %s, want the router's %s", m.Engine.URL, dep.Parts[2].URL)
	}
	// Devices: two per host, each with the host's role.
	hostOf := map[string]string{}
	roles := map[string]string{}
	for _, d := range m.Hardware.Devices {
		hostOf[d.ID] = d.Host
		roles[d.Host] += d.Role + " "
	}
	if len(hostOf) != 4 || roles["sim-node-0"] != "prefill prefill " || roles["sim-node-1"] != "decode decode " {
		t.Fatalf("devices %+v", m.Hardware.Devices)
	}
	// Every request went through the router and succeeded.
	formal := 0
	for _, r := range run.Requests {
		if !r.OK {
			t.Errorf("request %s failed: %s", r.ID, r.Error)
		}
		if r.Phase == "formal" {
			formal++
		}
	}
	if formal != 40 {
		t.Errorf("%d formal requests, want 40", formal)
	}
	// The decode node's clock: +0.75 s, measured within half the round
	// trip at the start and at the end.
	var cs *record.ClockSync
	for i := range m.Telemetry.ClockSync {
		if m.Telemetry.ClockSync[i].Host == "sim-node-1" {
			cs = &m.Telemetry.ClockSync[i]
		}
	}
	if cs == nil || cs.EndOffsetS == nil || cs.EndRTTS == nil {
		t.Fatalf("clock sync %+v: want the decode node's, start and end", m.Telemetry.ClockSync)
	}
	if math.Abs(cs.StartOffsetS-0.75) > cs.StartRTTS/2+1e-6 || math.Abs(*cs.EndOffsetS-0.75) > *cs.EndRTTS/2+1e-6 || cs.StartRTTS > 0.05 {
		t.Errorf("decode node offset %+v, want 0.75 s within half the round trip", *cs)
	}
	// Both nodes are read at one instant of the run clock: mapped, their
	// samples carry the same times (unmapped, the decode node's would be
	// 0.75 s later).
	times := map[string][]float64{}
	for _, p := range run.Power {
		times[hostOf[p.Device]] = append(times[hostOf[p.Device]], p.T)
	}
	t0, t1 := times["sim-node-0"], times["sim-node-1"]
	if len(t0) == 0 || len(t0) != len(t1) {
		t.Fatalf("%d prefill-node and %d decode-node samples", len(t0), len(t1))
	}
	sort.Float64s(t0)
	sort.Float64s(t1)
	for i := range t0 {
		if d := math.Abs(t1[i] - t0[i]); d > 0.05 {
			t.Fatalf("sample %d: decode node at %.6f, prefill node at %.6f: %.3f s apart", i, t1[i], t0[i], d)
		}
	}
	// The two hosts' GPU energy over the formal stage (each device's
	// counter read at the stage's ends, interpolated between samples)
	// adds up to the formal energy.
	st, _ := m.StageByName("formal")
	perHost := map[string]float64{}
	for dev, host := range hostOf {
		perHost[host] += counterAt(run.Power, dev, st.End) - counterAt(run.Power, dev, st.Start)
	}
	want, ok := run.Results.Values["formal_energy_j"].Value.(float64)
	if !ok || want <= 0 {
		t.Fatalf("formal_energy_j = %v", run.Results.Values["formal_energy_j"])
	}
	got := perHost["sim-node-0"] + perHost["sim-node-1"]
	if perHost["sim-node-0"] <= 0 || perHost["sim-node-1"] <= 0 || math.Abs(got-want) > 0.01*want {
		t.Errorf("formal energy per host %v, sum %.1f J; formal_energy_j %.1f J", perHost, got, want)
	}
	// The per-phase figures: every device has a role of one phase, so
	// prefill + decode is the formal energy (within 1 %), each phase the
	// energy of its host's devices, and both per-token figures exist.
	val := func(name string) float64 {
		v, ok := run.Results.Values[name].Value.(float64)
		if !ok {
			t.Errorf("%s = %v", name, run.Results.Values[name])
		}
		return v
	}
	pre, dec := val("prefill_energy_j"), val("decode_energy_j")
	if math.Abs(pre+dec-want) > 0.01*want || math.Abs(pre-perHost["sim-node-0"]) > 0.01*want || math.Abs(dec-perHost["sim-node-1"]) > 0.01*want {
		t.Errorf("prefill %.1f J + decode %.1f J, formal %.1f J, per host %v", pre, dec, want, perHost)
	}
	if val("prefill_j_per_input_token") <= 0 || val("decode_j_per_output_token") <= 0 {
		t.Error("no per-token phase figure")
	}
	if c := run.Results.Values["power_clocks_aligned"]; c.Passed == nil || !*c.Passed {
		t.Errorf("power_clocks_aligned %+v, want passed", c)
	}
}

// counterAt is device dev's energy counter at t, linear between the
// samples around it.
func counterAt(power []record.PowerSample, dev string, t float64) float64 {
	var prev *record.PowerSample
	for i := range power {
		p := &power[i]
		if p.Device != dev {
			continue
		}
		if p.T >= t {
			if prev == nil || p.T == prev.T {
				return p.EnergyJ
			}
			return prev.EnergyJ + (p.EnergyJ-prev.EnergyJ)*(t-prev.T)/(p.T-prev.T)
		}
		prev = p
	}
	if prev == nil {
		return math.NaN()
	}
	return prev.EnergyJ
}
