package metricdefs

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// domainRun: GPU g at a flat 100 W, CPU package cpu0 at 30 W, its DRAM
// dram0 at 10 W and the node n at 500 W, each sampled every second on
// [0, 10]; cpu0 misses its samples at t = 4, 5, 6 (a 4 s gap). Formal
// stage [2, 8]; two requests of 40 tokens.
func domainRun(t *testing.T, extraDev ...record.Device) *record.Run {
	t.Helper()
	var power []record.PowerSample
	for i := range 11 {
		ti := float64(i)
		power = append(power,
			record.PowerSample{T: ti, Device: "g", PowerW: 100, MemUsedBytes: -1},
			record.PowerSample{T: ti, Device: "dram0", PowerW: 10, MemUsedBytes: -1},
			record.PowerSample{T: ti, Device: "n", PowerW: 500, MemUsedBytes: -1})
		if i < 4 || i > 6 {
			power = append(power, record.PowerSample{T: ti, Device: "cpu0", PowerW: 30, MemUsedBytes: -1})
		}
	}
	devs := append([]record.Device{
		{ID: "g"}, // no domain: a GPU, as in archives written before domains
		{ID: "cpu0", Domain: record.DomainCPU},
		{ID: "dram0", Domain: record.DomainDRAM},
		{ID: "n", Domain: record.DomainNode},
	}, extraDev...)
	return &record.Run{
		Meta: record.Meta{RunID: "domains", Hardware: record.Hardware{Devices: devs},
			Stages: []record.Stage{{Name: "formal", Start: 2, End: 8}}},
		Power: power,
		Requests: []record.Request{
			{ID: "r1", Phase: "formal", OK: true, SentAt: 1.5, FirstTokenAt: 2, DoneAt: 6, OutputTokens: 40},
			{ID: "r2", Phase: "formal", OK: true, SentAt: 3.5, FirstTokenAt: 4, DoneAt: 8, OutputTokens: 40},
		},
	}
}

// The method's built-ins see the GPUs only; domain_* the domains named.
func TestDomainsSeparate(t *testing.T) {
	d, err := NewData(domainRun(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Run.Domains, []string{"gpu", "cpu", "dram", "node"}) {
		t.Errorf("run.domains = %v", d.Run.Domains)
	}
	metrics := []struct {
		name, expr string
		want       float64
	}{
		// GPU only: 100 W × 6 s (with every domain it would be 640 W × 6 s).
		{"energy", `energy(2, 8, "trapz")`, 600},
		{"mean_power", `mean_power(2, 8)`, 100},
		// r1's share of the GPU's 600 J: 300 J over 40 tokens.
		{"attribute", `attribute(requests, "trapz")[0].j_per_token`, 7.5},
		// (30 + 10) W × 6 s; cpu0's gap is interpolated at 30 W.
		{"cpu_dram", `domain_energy(["cpu", "dram"], 2, 8, "trapz")`, 240},
		{"cpu_dram_per_token", `domain_energy(["cpu", "dram"], 2, 8, "auto") / 80`, 3},
		{"node", `domain_energy(["node"], 2, 8, "trapz")`, 3000},
		{"node_power", `domain_mean_power(["node"], 2, 8)`, 500},
		// The GPU audit does not see cpu0's gap; the CPU audit does: from
		// t=3 to t=7, 4 s > 3 s.
		{"gpu_audit", `float(len(power_audit(["formal"], 3, 1.2, 2000).reasons))`, 0},
		{"cpu_audit", `float(len(domain_power_audit(["cpu", "dram"], ["formal"], 3, 1.2, 2000).gaps))`, 1},
		{"cpu_audit_gap", `domain_power_audit(["cpu"], ["formal"], 3, 1.2, 2000).max_gap_s`, 4},
		{"node_audit", `float(len(domain_power_audit(["node"], ["formal"], 3, 1.2, 2000).reasons))`, 0},
		{"gpus", `float(len(filter(devices, .domain == "gpu")))`, 1},
	}
	var defs []Def
	for _, m := range metrics {
		defs = append(defs, Def{Name: "m_" + m.name, Kind: KindMetric, Expr: m.expr})
	}
	prog, errs := Compile(Spec{Defs: defs})
	if len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	res, err := prog.Evaluate(context.Background(), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range metrics {
		r := res.Values["m_"+m.name]
		got, ok := r.Value.(float64)
		if !ok || math.Abs(got-m.want) > 1e-9*max(1, math.Abs(m.want)) {
			t.Errorf("%s = %v (%s), want %v", m.name, r.Value, r.Note, m.want)
		}
	}
}

func TestDomainErrors(t *testing.T) {
	_, err := NewData(domainRun(t, record.Device{ID: "x", Domain: "gpu+cpu"}))
	if err == nil || !strings.Contains(err.Error(), `run.json: hardware.devices[4] (x): domain "gpu+cpu" is not one of gpu, cpu, dram, node`) {
		t.Errorf("bad domain: %v", err)
	}
	run := domainRun(t)
	run.Meta.Hardware.Devices = run.Meta.Hardware.Devices[:1]
	run.Power = run.Power[:0]
	for i := range 3 {
		run.Power = append(run.Power, record.PowerSample{T: float64(i), Device: "g", PowerW: 1})
	}
	d, err := NewData(run)
	if err != nil {
		t.Fatal(err)
	}
	for expr, want := range map[string]string{
		`domain_energy(["node"], 0, 2, "trapz")`:        "domain_energy: no power samples of domain node in this run",
		`domain_energy(["cpu", "disk"], 0, 2, "trapz")`: `domain_energy: domain 2 is disk: want one of gpu, cpu, dram, node`,
	} {
		prog, errs := Compile(Spec{Defs: []Def{{Name: "m", Kind: KindMetric, Expr: expr}}})
		if len(errs) > 0 {
			t.Fatalf("compile: %v", errs)
		}
		res, _ := prog.Evaluate(context.Background(), d, nil)
		if r := res.Values["m"]; !strings.Contains(r.Note, want) {
			t.Errorf("%s: note %q, want %q", expr, r.Note, want)
		}
	}
}
