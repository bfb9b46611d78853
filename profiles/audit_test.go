package profiles_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// The sample run's formal stage is [t0, t0+10] with t0 = 1717405210; both
// devices are sampled every second from t0-10 to t0+20 (interval_s 1, so
// the largest allowed gap is min(3 × 1, 3) = 3 s).
const sampleT0 = 1717405210

// auditCases are hand-made archives: the sample run with one defect each.
// check is the audit check that must fail (with want in its detail), ""
// for the clean run where every power_* check passes.
var auditCases = []struct {
	name    string
	edit    func(r *record.Run)
	check   string
	exclude bool
	want    []string
}{
	{name: "sample run as shipped", edit: func(*record.Run) {}},
	{
		// gpu0 loses t0+2 … t0+5: a 5 s gap from t0+1 to t0+6.
		name: "gap",
		edit: func(r *record.Run) {
			r.Power = slices.DeleteFunc(r.Power, func(s record.PowerSample) bool {
				return s.Device == "gpu0" && s.T >= sampleT0+2 && s.T <= sampleT0+5
			})
		},
		check: "power_samples_dense", exclude: true,
		want: []string{"device gpu0: 5 s without samples in stage formal", "t=1717405211 to t=1717405216", "max_sample_gap 3 s"},
	},
	{
		name: "device in hardware.devices never sampled",
		edit: func(r *record.Run) {
			r.Meta.Hardware.Devices = append(r.Meta.Hardware.Devices, record.Device{ID: "gpu2", Method: "counter"})
		},
		check: "power_devices_present", exclude: true,
		want: []string{"device gpu2 has no power samples at all", "stage formal"},
	},
	{
		// The recording stops at t0+5 for every device (a replay that
		// ended, an exporter that died).
		name: "recording ends mid-stage",
		edit: func(r *record.Run) {
			r.Power = slices.DeleteFunc(r.Power, func(s record.PowerSample) bool { return s.T > sampleT0+5 })
		},
		check: "power_devices_present", exclude: true,
		want: []string{"device gpu0: samples end at t=1717405215, 5 s before stage formal ends", "the recording stopped"},
	},
	{
		// One reading of 10^7 W with gpu0's limit known (700 W): above
		// 1.2 × 700 = 840 W.
		name: "power above the limit",
		edit: func(r *record.Run) {
			r.Meta.Hardware.Devices[0].PowerLimitW = 700
			for i := range r.Power {
				if r.Power[i].Device == "gpu0" && r.Power[i].T == sampleT0+4 {
					r.Power[i].PowerW = 1e7
				}
			}
		},
		check: "power_within_bounds",
		want:  []string{"device gpu0: 10000000 W at t=1717405214 in stage formal", "above the plausible 840 W (1.2 × its power limit 700 W)"},
	},
	{
		// No limit known: the sanity bound, 2000 W.
		name: "power above the sanity bound",
		edit: func(r *record.Run) {
			for i := range r.Power {
				if r.Power[i].Device == "gpu1" && r.Power[i].T == sampleT0+4 {
					r.Power[i].PowerW = 2500
				}
			}
		},
		check: "power_within_bounds",
		want:  []string{"device gpu1: 2500 W at t=1717405214", "above the plausible 2000 W (the profile's bound for a gpu device whose power limit is not known)"},
	},
	{
		name: "all zero",
		edit: func(r *record.Run) {
			for i := range r.Power {
				if r.Power[i].Device == "gpu1" {
					r.Power[i].PowerW = 0
				}
			}
		},
		check: "power_not_all_zero",
		want:  []string{"device gpu1: 0 W on every sample of stage formal (11 samples)"},
	},
	{
		// gpu0's rows at t0+3 and t0+4 written in the wrong order.
		name: "time goes back",
		edit: func(r *record.Run) {
			a := slices.IndexFunc(r.Power, func(s record.PowerSample) bool { return s.Device == "gpu0" && s.T == sampleT0+3 })
			b := slices.IndexFunc(r.Power, func(s record.PowerSample) bool { return s.Device == "gpu0" && s.T == sampleT0+4 })
			r.Power[a], r.Power[b] = r.Power[b], r.Power[a]
		},
		check: "power_time_increasing", exclude: true,
		want: []string{"device gpu0: time goes back", "t=1717405213 comes after t=1717405214 (1 s back)"},
	},
}

var auditChecks = []string{"power_samples_dense", "power_devices_present", "power_time_increasing", "power_within_bounds", "power_not_all_zero"}

// TestPowerAuditChecks evaluates the benchmark profiles over each hand-made
// archive: the check of the defect fails with the reason in its detail,
// power_valid lists it, the others pass; an exclude check marks the run
// excluded.
func TestPowerAuditChecks(t *testing.T) {
	for _, prof := range []string{"benchmark-1.0", "benchmark-1.5"} {
		src, err := profiles.Read(prof)
		if err != nil {
			t.Fatal(err)
		}
		l, err := workflow.Load(src, prof+".yaml", workflow.Options{Registry: steps.Registry()})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range auditCases {
			t.Run(prof+"/"+c.name, func(t *testing.T) {
				run, err := archive.Load("../archive/testdata/sample-run")
				if err != nil {
					t.Fatal(err)
				}
				c.edit(run)
				res, _ := workflow.Evaluate(context.Background(), l, run)
				if res == nil {
					t.Fatal("no results")
				}
				for _, name := range append(auditChecks, "power_valid") {
					r, ok := res.Values[name]
					if !ok || r.Passed == nil {
						t.Fatalf("check %s missing or not evaluated: %+v", name, r)
					}
					wantFail := name == c.check || (name == "power_valid" && c.check != "")
					if *r.Passed == wantFail {
						t.Errorf("check %s passed = %v, want %v (%q)", name, *r.Passed, !wantFail, r.Message)
					}
					if wantFail {
						for _, w := range c.want {
							if !strings.Contains(r.Message, w) {
								t.Errorf("check %s: message %q does not contain %q", name, r.Message, w)
							}
						}
					}
				}
				if c.exclude && (!res.Excluded || !strings.Contains(res.ExcludeReason, c.check)) {
					t.Errorf("excluded = %v (%q), want excluded by %s", res.Excluded, res.ExcludeReason, c.check)
				}
			})
		}
	}
}

// TestPowerAuditAsiai: the asiai profile audits its monitor window (the
// formal stage [10, 20] of asiaiRun, 1 s samples): clean it passes; with
// t = 12 … 16 gone, a 6 s gap from t = 11 to 17 excludes the run.
func TestPowerAuditAsiai(t *testing.T) {
	res := evalAsiai(t, asiaiRun(), nil)
	if r := res.Values["power_valid"]; r.Passed == nil || !*r.Passed {
		t.Fatalf("power_valid on the clean run = %+v, want pass", r)
	}
	run := asiaiRun()
	run.Power = slices.DeleteFunc(run.Power, func(s record.PowerSample) bool { return s.T >= 12 && s.T <= 16 })
	res = evalAsiai(t, run, nil)
	r := res.Values["power_samples_dense"]
	if r.Passed == nil || *r.Passed || !strings.Contains(r.Message, "device 0: 6 s without samples in stage formal, from t=11 to t=17") {
		t.Errorf("power_samples_dense = %+v, want a failure naming the 6 s gap", r)
	}
	if !res.Excluded {
		t.Errorf("run not excluded by the gap")
	}
}

// TestExporterDeadPrometheus: Prometheus up, the exporter dead: power.csv
// holds one row per device from before the stages. The stored samples say
// so (the Prometheus scrape interval did not): scrape_interval_fine fails
// with the formal stage's 10 s uncovered (benchmark-1.5: the release's
// 10 s too), and the run is excluded for the missing devices.
func TestExporterDeadPrometheus(t *testing.T) {
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
			run, err := archive.Load("../archive/testdata/sample-run")
			if err != nil {
				t.Fatal(err)
			}
			run.Meta.Telemetry.Source = "prometheus"
			run.Power = slices.DeleteFunc(run.Power, func(s record.PowerSample) bool { return s.T > sampleT0-10 })
			res, _ := workflow.Evaluate(context.Background(), l, run)
			if res == nil {
				t.Fatal("no results")
			}
			r := res.Values["scrape_interval_fine"]
			if r.Passed == nil || *r.Passed || !strings.Contains(r.Message, "inside a measured stage 10 s") {
				t.Errorf("scrape_interval_fine = %+v, want a failure naming the 10 s without samples", r)
			}
			r = res.Values["power_devices_present"]
			if r.Passed == nil || *r.Passed || !strings.Contains(r.Message, "device gpu0 has no samples in stage formal") {
				t.Errorf("power_devices_present = %+v", r)
			}
			if !res.Excluded {
				t.Error("run not excluded")
			}
		})
	}
}

// TestCounterGlitchRepairedOrExcluded: a counter spike of 10^6 J that
// comes back is repaired (formal energy as shipped, no exclusion); a jump
// of 10^6 J that stays cannot be repaired and excludes the run.
func TestCounterGlitchRepairedOrExcluded(t *testing.T) {
	src, err := profiles.Read("benchmark-1.0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := workflow.Load(src, "benchmark-1.0.yaml", workflow.Options{Registry: steps.Registry()})
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
	clean := eval(func(*record.Run) {})
	want := clean.Values["avg_gpu_power_w"].Value.(float64)
	for _, c := range []struct {
		name    string
		from    float64 // gpu0's counter + 10^6 J from this time …
		to      float64 // … up to this one (inclusive)
		exclude bool
	}{
		{"spike that comes back", sampleT0 + 4, sampleT0 + 4, false},
		{"jump that stays", sampleT0 + 4, sampleT0 + 20, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := eval(func(r *record.Run) {
				for i := range r.Power {
					if s := &r.Power[i]; s.Device == "gpu0" && s.T >= c.from && s.T <= c.to {
						s.EnergyJ += 1e6
					}
				}
			})
			chk := res.Values["counter_plausible"]
			if chk.Passed == nil || *chk.Passed == c.exclude || res.Excluded != c.exclude {
				t.Fatalf("counter_plausible = %+v, excluded %v (%s); want excluded %v", chk, res.Excluded, res.ExcludeReason, c.exclude)
			}
			if !c.exclude {
				// The sample run's formal power, 617 W, unchanged: the
				// spike's energy is removed.
				got := res.Values["avg_gpu_power_w"].Value.(float64)
				if diff := got - want; diff > 1e-6 || diff < -1e-6 {
					t.Errorf("avg_gpu_power_w = %v, want %v as without the spike", got, want)
				}
			}
		})
	}
}

// TestPowerMeasured: a benchmark run is expected to measure power
// (require_power, default true). The sample run with its power samples
// and devices removed (a source that recorded nothing, or none found)
// is excluded by power_measured; the same run whose telemetry says the
// user declined power (--telemetry none) is not, and the check says why;
// --set require_power=false lets it through as well.
func TestPowerMeasured(t *testing.T) {
	for _, prof := range []string{"benchmark-1.0", "benchmark-1.5"} {
		src, err := profiles.Read(prof)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name     string
			declined bool
			sets     map[string]string
			passed   *bool // nil: not applicable
			excluded bool
		}{
			{name: "power expected, none recorded", passed: ptr(false), excluded: true},
			{name: "declined", declined: true},
			{name: "not required", sets: map[string]string{"require_power": "false"}, passed: ptr(true)},
		} {
			t.Run(prof+"/"+c.name, func(t *testing.T) {
				l, err := workflow.Load(src, prof+".yaml", workflow.Options{Registry: steps.Registry(), Overrides: c.sets})
				if err != nil {
					t.Fatal(err)
				}
				run, err := archive.Load("../archive/testdata/sample-run")
				if err != nil {
					t.Fatal(err)
				}
				run.Power, run.Meta.Hardware.Devices = nil, nil
				run.Meta.Telemetry = record.TelemetryInfo{Source: "none", Declined: c.declined}
				res, _ := workflow.Evaluate(context.Background(), l, run)
				if res == nil {
					t.Fatal("no results")
				}
				r := res.Values["power_measured"]
				switch {
				case c.passed == nil && (r.Passed != nil || !strings.Contains(r.Note, "energy not measured")):
					t.Errorf("power_measured = %+v, want not applicable: energy not measured", r)
				case c.passed != nil && (r.Passed == nil || *r.Passed != *c.passed):
					t.Errorf("power_measured = %+v, want passed %v", r, *c.passed)
				}
				if res.Excluded != c.excluded || c.excluded && !strings.Contains(res.ExcludeReason, "power_measured") {
					t.Errorf("excluded %v (%q), want %v", res.Excluded, res.ExcludeReason, c.excluded)
				}
			})
		}
	}
}

func ptr(b bool) *bool { return &b }
