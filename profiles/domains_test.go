package profiles_test

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// withDomains adds to the sample run a CPU package cpu0 (a counter rising
// 50 J/s), its DRAM dram0 (10 W flat, no counter) and the node node0
// (700 W flat), sampled every second over the same span as the GPUs
// (t0-10 … t0+20).
func withDomains(r *record.Run) {
	r.Meta.Hardware.Devices = append(r.Meta.Hardware.Devices,
		record.Device{ID: "cpu0", Method: "counter", Domain: record.DomainCPU},
		record.Device{ID: "dram0", Method: "power", Domain: record.DomainDRAM},
		record.Device{ID: "node0", Method: "power", Domain: record.DomainNode})
	for t := float64(sampleT0 - 10); t <= sampleT0+20; t++ {
		r.Power = append(r.Power,
			record.PowerSample{T: t, Device: "cpu0", PowerW: 50, EnergyJ: 50 * (t - sampleT0 + 10), HasEnergy: true, MemUsedBytes: -1},
			record.PowerSample{T: t, Device: "dram0", PowerW: 10, MemUsedBytes: -1},
			record.PowerSample{T: t, Device: "node0", PowerW: 700, MemUsedBytes: -1})
	}
}

// Adding CPU, DRAM and node power to a run leaves every value the method
// computed as it was (the figures stay GPU-only) and adds the extra
// figures: over the formal stage [t0, t0+10], CPU/DRAM (50 + 10) W × 10 s =
// 600 J and node 700 W × 10 s = 7000 J, each over the formal tokens.
func TestExtraDomainsLeaveTheMethodUnchanged(t *testing.T) {
	newNames := []string{"cpu_dram_j_per_token", "avg_cpu_dram_power_w", "node_j_per_token", "avg_node_power_w",
		"e_formal_cpu_dram", "e_formal_node", "audit_cpu_dram", "audit_node", "has_cpu_dram", "has_node",
		"power_valid_cpu_dram", "power_valid_node", "formal_energy_node_j"}
	for _, prof := range []string{"benchmark-1.0", "benchmark-1.5"} {
		t.Run(prof, func(t *testing.T) {
			src, err := profiles.Read(prof)
			if err != nil {
				t.Fatal(err)
			}
			l, err := workflow.Load(src, prof+".yaml", workflow.Options{Registry: steps.Registry()})
			if err != nil {
				t.Fatal(err)
			}
			eval := func(edit func(*record.Run)) *record.Results {
				run, err := archive.Load("../archive/testdata/sample-run")
				if err != nil {
					t.Fatal(err)
				}
				edit(run)
				res, _ := workflow.Evaluate(context.Background(), l, run)
				if res == nil {
					t.Fatal("no results")
				}
				return res
			}
			gpuOnly := eval(func(*record.Run) {})
			all := eval(withDomains)
			for name, want := range gpuOnly.Values {
				if slices.Contains(newNames, name) {
					continue
				}
				a, _ := json.Marshal(want)
				b, _ := json.Marshal(all.Values[name])
				if string(a) != string(b) {
					t.Errorf("%s changed with other domains present:\n  GPU only: %s\n  with CPU/DRAM/node: %s", name, a, b)
				}
			}
			if gpuOnly.Excluded != all.Excluded {
				t.Errorf("excluded %v → %v", gpuOnly.Excluded, all.Excluded)
			}
			var tokens float64
			switch v := all.Values["formal_tokens"].Value.(type) {
			case int64:
				tokens = float64(v)
			case float64:
				tokens = v
			default:
				t.Fatalf("formal_tokens = %T %v", v, v)
			}
			for name, want := range map[string]float64{
				"cpu_dram_j_per_token": 600 / tokens, "avg_cpu_dram_power_w": 60,
				"node_j_per_token": 7000 / tokens, "avg_node_power_w": 700,
			} {
				r := all.Values[name]
				got, ok := r.Value.(float64)
				if !ok || math.Abs(got-want) > 1e-9*want {
					t.Errorf("%s = %+v, want %g", name, r, want)
				}
				if gpuOnly.Values[name].Value != nil || !strings.Contains(gpuOnly.Values[name].Note, "in this run") {
					t.Errorf("%s without the domain = %+v, want not applicable", name, gpuOnly.Values[name])
				}
			}
			for name, b := range map[string]string{"steady_state_j_per_token": "gpu", "avg_gpu_power_w": "gpu", "cpu_dram_j_per_token": "cpu+dram", "node_j_per_token": "node"} {
				if got := all.Values[name].Boundary; got != b {
					t.Errorf("%s boundary %q, want %q", name, got, b)
				}
			}
			// The node loses t0+2 … t0+6: its audit fails and its figure is
			// not applicable; the GPU figures and the exclusion do not move.
			gap := eval(func(r *record.Run) {
				withDomains(r)
				r.Power = slices.DeleteFunc(r.Power, func(s record.PowerSample) bool {
					return s.Device == "node0" && s.T >= sampleT0+2 && s.T <= sampleT0+6
				})
			})
			if v := gap.Values["power_valid_node"]; v.Passed == nil || *v.Passed || !strings.Contains(v.Message, "device node0: 6 s without samples in stage formal") {
				t.Errorf("power_valid_node = %+v", v)
			}
			if v := gap.Values["node_j_per_token"]; v.Value != nil || !strings.Contains(v.Note, "node power audit failed") {
				t.Errorf("node_j_per_token = %+v, want not applicable", v)
			}
			if gap.Excluded != gpuOnly.Excluded || gap.Values["avg_gpu_power_w"].Value != gpuOnly.Values["avg_gpu_power_w"].Value {
				t.Errorf("a node gap moved the GPU figures or the exclusion")
			}
		})
	}
}
