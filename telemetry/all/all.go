// Package all is the registry of joulebench's built-in power sources.
// Adding a source is one package that exports its telemetry.Descriptor
// and one line here.
package all

import (
	"fmt"

	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/telemetry/agent"
	"github.com/joulebench/joulebench/telemetry/dcgm"
	"github.com/joulebench/joulebench/telemetry/ipmi"
	"github.com/joulebench/joulebench/telemetry/nvml"
	"github.com/joulebench/joulebench/telemetry/powermetrics"
	"github.com/joulebench/joulebench/telemetry/prometheus"
	"github.com/joulebench/joulebench/telemetry/rapl"
	"github.com/joulebench/joulebench/telemetry/redfish"
	"github.com/joulebench/joulebench/telemetry/replay"
	"github.com/joulebench/joulebench/telemetry/sim"
)

// Usage is the help of --telemetry.
const Usage = "power source: auto (NVML if an NVIDIA GPU is there, powermetrics on macOS, the simulator's GPU with --engine sim, else none), nvml, powermetrics, dcgm, prometheus, sim, replay, none; rapl (CPU package and DRAM), redfish or ipmi (whole node); agent (joulebench agents on other nodes, --agent URL each); repeatable: several sources side by side, e.g. --telemetry nvml --telemetry rapl"

// Descriptors are the built-in sources in the order --telemetry's choices
// list them (after auto). Auto's preference is each one's AutoRole: a
// source its flag names (dcgm, replay), else the simulated engine's GPUs,
// NVML, powermetrics on macOS.
func Descriptors() []telemetry.Descriptor {
	return []telemetry.Descriptor{
		nvml.Descriptor(),
		powermetrics.Descriptor(),
		dcgm.Descriptor(),
		sim.Descriptor(),
		replay.Descriptor(),
		telemetry.NoneDescriptor(),
		prometheus.Descriptor(),
		rapl.Descriptor(),
		redfish.Descriptor(),
		ipmi.Descriptor(),
		agent.Descriptor(),
	}
}

// Registry returns a new registry of the built-in sources.
func Registry() *telemetry.Registry {
	r := telemetry.NewRegistry(Usage)
	for _, d := range Descriptors() {
		if err := r.Register(d); err != nil {
			// The built-ins are fixed at compile time; a test registers them.
			panic(fmt.Sprintf("built-in telemetry sources: %v", err))
		}
	}
	return r
}
