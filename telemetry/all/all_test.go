package all_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/telemetry/all"
)

// parse registers r's flags and parses args.
func parse(t *testing.T, r *telemetry.Registry, args ...string) (telemetry.Values, []string) {
	t.Helper()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	r.Flags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	given, _ := fs.GetStringArray(telemetry.SelectFlag)
	return telemetry.FlagValues(fs), given
}

func TestBuiltins(t *testing.T) {
	r := all.Registry()
	// The choices as --telemetry has always listed them.
	if got, want := r.Names(), []string{"auto", "nvml", "powermetrics", "dcgm", "sim", "replay", "none", "prometheus", "rapl", "redfish", "ipmi", "agent"}; !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	r.Flags(fs)
	for _, f := range []string{"telemetry", "gpus", "dcgm-url", "replay", "replay-offset", "prometheus-url", "prometheus-selector",
		"prometheus-power-metric", "prometheus-energy-metric", "prometheus-mem-metric", "rapl-root",
		"redfish-url", "redfish-user", "redfish-chassis", "redfish-session", "redfish-insecure", "ipmitool", "ipmi-arg"} {
		if fs.Lookup(f) == nil {
			t.Errorf("--%s is not registered", f)
		}
	}
	if got := fs.Lookup("telemetry").Usage; got != all.Usage {
		t.Errorf("--telemetry usage %q", got)
	}
	// Auto prefers what a flag names (dcgm, replay), then the simulated
	// engine's GPUs, NVML, powermetrics.
	var ranked []string
	for _, n := range r.Names()[1:] {
		if d, _ := r.Lookup(n); d.Auto != nil && d.Auto.Rank > 0 {
			ranked = append(ranked, n)
		}
	}
	slices.SortStableFunc(ranked, func(a, b string) int {
		da, _ := r.Lookup(a)
		db, _ := r.Lookup(b)
		return da.Auto.Rank - db.Auto.Rank
	})
	if want := []string{"sim", "nvml", "powermetrics"}; !slices.Equal(ranked, want) {
		t.Errorf("auto tries %v, want %v", ranked, want)
	}
}

// With the simulated engine, auto opens its GPUs; with --replay, the
// recording, even beside the simulated engine.
func TestAutoBuiltins(t *testing.T) {
	r := all.Registry()
	for _, tc := range []struct {
		args   []string
		source string
		note   string
	}{
		{nil, "sim", "auto (the simulated engine runs): simulated GPU power tied to the simulated engine's load; energy method per device: sim0 counter, sim1 counter"},
		{[]string{"--replay", "../replay/testdata/run"}, "replay", "auto (--replay given): REPLAYED power data"},
	} {
		v, given := parse(t, r, tc.args...)
		sel, err := r.Check(given, v)
		if err != nil {
			t.Fatal(err)
		}
		src, info, err := r.Open(context.Background(), sel, v, telemetry.Env{SimulatedGPUs: simGPUs()})
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		_ = src.Close()
		if info.Source != tc.source || !strings.HasPrefix(info.Note, tc.note) {
			t.Errorf("%v: info %+v, want %s %q", tc.args, info, tc.source, tc.note)
		}
	}
}
