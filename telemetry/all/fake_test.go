package all_test

// A power source in one file and one registration: fakeDescriptor is
// registered beside the built-ins, takes its flag, is checked, opened by
// name, side by side with a built-in, and listed.

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/telemetry/all"
	"github.com/joulebench/joulebench/telemetry/sim"
)

// fakeSource is one node drawing a fixed power.
type fakeSource struct{ watts float64 }

func (fakeSource) Name() string { return "fake" }
func (fakeSource) Devices(context.Context) ([]record.Device, error) {
	return []record.Device{{ID: "fake0", Domain: record.DomainNode, Name: "Fake node", Method: "power", PowerField: "fake_watts"}}, nil
}
func (s fakeSource) Read(context.Context) ([]telemetry.Reading, error) {
	return []telemetry.Reading{{Device: "fake0", PowerW: s.watts, MemUsedBytes: -1}}, nil
}
func (fakeSource) Close() error { return nil }

func fakeDescriptor() telemetry.Descriptor {
	return telemetry.Descriptor{
		Name:  "fake",
		Flags: func(f *pflag.FlagSet) { f.Float64("fake-watts", 0, "power of the fake node in W (--telemetry fake)") },
		Check: func(v telemetry.Values, sel telemetry.Selection) error {
			if v.GetFloat64("fake-watts") != 0 && !sel.Has("fake") {
				return fmt.Errorf("--fake-watts is for --telemetry fake, not %s", sel)
			}
			return nil
		},
		Open: func(ctx context.Context, v telemetry.Values, _ telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
			src := fakeSource{watts: v.GetFloat64("fake-watts")}
			devs, _ := src.Devices(ctx)
			return src, record.TelemetryInfo{Source: "fake", Note: "a fake node; " + telemetry.DeviceSummary(devs)}, nil
		},
	}
}

func simGPUs() func(telemetry.Clock) telemetry.Source { return sim.GPUs(sim.DefaultConfig(), nil) }

func TestFakeSourceOneRegistration(t *testing.T) {
	r := all.Registry()
	if err := r.Register(fakeDescriptor()); err != nil {
		t.Fatal(err)
	}
	if n := r.Names(); n[len(n)-1] != "fake" {
		t.Errorf("names %v", n)
	}
	ctx := context.Background()

	// Opened by name, with its flag.
	v, given := parse(t, r, "--telemetry", "fake", "--fake-watts", "250")
	sel, err := r.Check(given, v)
	if err != nil {
		t.Fatal(err)
	}
	src, info, err := r.Open(ctx, sel, v, telemetry.Env{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := src.Read(ctx)
	if err != nil || len(rs) != 1 || rs[0].Device != "fake0" || rs[0].PowerW != 250 {
		t.Errorf("read %+v, %v", rs, err)
	}
	if info.Source != "fake" || info.Note != "a fake node; energy method per device: fake0 power" {
		t.Errorf("info %+v", info)
	}

	// Listed for `joulebench devices`: one reading says memory is unknown.
	l, err := r.Probe(ctx, sel, v, telemetry.Env{})
	want := []telemetry.DeviceInfo{{ID: "fake0", Domain: "node", Name: "Fake node", Energy: "power", PowerField: "fake_watts", Memory: "no"}}
	if err != nil || l.Source != "fake" || l.Detail != info.Note || !slices.Equal(l.Devices, want) {
		t.Errorf("listing %+v, %v", l, err)
	}

	// Side by side with the simulated engine's GPUs: 2 sim GPUs + 1 node.
	v, given = parse(t, r, "--telemetry", "sim", "--telemetry", "fake")
	sel, err = r.Check(given, v)
	if err != nil {
		t.Fatal(err)
	}
	src, info, err = r.Open(ctx, sel, v, telemetry.Env{SimulatedGPUs: simGPUs()})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	devs, _ := src.Devices(ctx)
	if info.Source != "sim+fake" || !info.Simulated || len(devs) != 3 || devs[2].ID != "fake0" {
		t.Errorf("info %+v, devices %v", info, devs)
	}

	// Its flag without it is refused, as a built-in's is.
	v, given = parse(t, r, "--telemetry", "none", "--fake-watts", "1")
	if _, err := r.Check(given, v); err == nil || err.Error() != "--fake-watts is for --telemetry fake, not none" {
		t.Errorf("err = %v", err)
	}
}
