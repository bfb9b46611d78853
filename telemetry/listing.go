package telemetry

import (
	"context"
	"fmt"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
)

// Listing is what `joulebench devices` shows of a source: its devices and
// what each can measure, or why there are none (WriteTable, and JSON with
// these field names).
type Listing struct {
	// Source is the source's name; Detail says how it reads (versions,
	// endpoints).
	Source string `json:"source"`
	Detail string `json:"detail,omitempty"`
	// Devices are the measured devices.
	Devices []DeviceInfo `json:"devices"`
	// Why says why there is no device (auto found no source).
	Why []string `json:"why,omitempty"`
	// Declined is true when nothing is measured by choice (--telemetry
	// none): no device is then not a failure.
	Declined bool `json:"-"`
}

// DeviceInfo is one device of a Listing.
type DeviceInfo struct {
	ID string `json:"id"`
	// Domain is what the device's power covers: gpu, cpu, dram, node.
	Domain       string `json:"domain"`
	Name         string `json:"name,omitempty"`
	UUID         string `json:"uuid,omitempty"`
	Host         string `json:"host,omitempty"`
	Architecture string `json:"architecture,omitempty"`
	// Energy is "counter" or "power".
	Energy     string `json:"energy"`
	EnergyNote string `json:"energy_note,omitempty"`
	PowerField string `json:"power_field,omitempty"`
	// Memory is "yes", "no" or the total ("80 GiB").
	Memory      string `json:"memory"`
	ClockEvents *bool  `json:"clock_events,omitempty"`
	Simulated   bool   `json:"simulated,omitempty"`
}

// ListDevices lists an open source's devices with detail; one reading says
// whether memory use is known.
func ListDevices(ctx context.Context, src Source, detail string) (Listing, error) {
	devs, err := src.Devices(ctx)
	if err != nil {
		return Listing{}, err
	}
	mem := map[string]bool{}
	if rs, err := src.Read(ctx); err == nil {
		for _, r := range rs {
			mem[r.Device] = mem[r.Device] || r.MemUsedBytes >= 0
		}
	}
	l := Listing{Source: src.Name(), Detail: detail}
	for _, d := range devs {
		e := DeviceInfo{ID: d.ID, Domain: d.DomainOrGPU(), Name: d.Name, UUID: d.UUID, Host: d.Host,
			Energy: d.Method, PowerField: d.PowerField, Memory: "no", Simulated: d.Simulated}
		if mem[d.ID] {
			e.Memory = "yes"
		}
		l.Devices = append(l.Devices, e)
	}
	return l, nil
}

// DeviceSummary is "energy method per device: gpu0 counter, gpu1 power"
// for run.json's telemetry note.
func DeviceSummary(devs []record.Device) string {
	if len(devs) == 0 {
		return "no devices"
	}
	parts := make([]string, len(devs))
	for i, d := range devs {
		parts[i] = d.ID + " " + d.Method
	}
	return "energy method per device: " + strings.Join(parts, ", ")
}

// Probe lists the devices of the one source sel names for `joulebench
// devices`; with auto, of the source auto would open, or, when there is
// none, why.
func (r *Registry) Probe(ctx context.Context, sel Selection, v Values, env Env) (Listing, error) {
	env.Logf = env.logf()
	switch names := sel.names; {
	case len(names) != 1:
		return Listing{}, fmt.Errorf("telemetry: a listing is of one source, not %d", len(names))
	case names[0] == Auto:
		return r.probeAuto(ctx, v, env)
	}
	d, ok := r.byName[sel.names[0]]
	if !ok {
		return Listing{}, fmt.Errorf("telemetry %q is not registered", sel.names[0])
	}
	l, _, err := probe(ctx, d, v, env)
	return l, err
}

// probe lists d's devices; opened is false when the error is the one of
// opening the source (a source's own Probe opens it first).
func probe(ctx context.Context, d Descriptor, v Values, env Env) (l Listing, opened bool, err error) {
	if d.Probe != nil {
		l, err := d.Probe(ctx, v, env)
		return l, err == nil, err
	}
	src, info, err := d.Open(ctx, v, env)
	if err != nil {
		return Listing{}, false, err
	}
	if src == nil {
		return Listing{Source: d.Name, Detail: info.Note, Declined: info.Declined}, true, nil
	}
	defer src.Close()
	l, err = ListDevices(ctx, src, info.Note)
	return l, true, err
}

// probeAuto is auto's choice as openAuto makes it, listed; with none, the
// reasons, each ranked source's and each source's ProbeWhy.
func (r *Registry) probeAuto(ctx context.Context, v Values, env Env) (Listing, error) {
	if named := r.named(v); len(named) > 0 {
		l, _, err := probe(ctx, named[0], v, env)
		return l, err
	}
	var why []string
	for _, d := range r.ranked() {
		if skipped(d, env, &why) {
			continue
		}
		l, opened, err := probe(ctx, d, v, env)
		switch {
		case err == nil:
			return l, nil
		case opened || (d.Auto.Fatal != nil && d.Auto.Fatal(err)):
			return Listing{}, err
		}
		why = append(why, err.Error())
	}
	for _, n := range r.order {
		if d := r.byName[n]; d.Auto != nil && d.Auto.ProbeWhy != "" {
			why = append(why, d.Auto.ProbeWhy)
		}
	}
	return Listing{Source: NoneName, Why: why,
		Detail: "no GPU telemetry on this machine: a run here has no energy metrics (--telemetry none), or use --engine sim for the simulator"}, nil
}
