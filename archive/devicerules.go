package archive

import (
	"fmt"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
)

// The rules that hold run.json's devices, deployment and clocks to each
// other (docs/archive-v1.md, "Bounds", rows "deployment", "hardware.devices
// against the deployment", "telemetry.clock_sync against the hosts",
// "hardware.devices domain" and "engine.tensor_parallel"). Each says what
// joulebench's writer guarantees, so that an edit which moves energy from
// one phase, boundary or device count to another is refused rather than
// read as other figures.

// deviceRules are the rules of this file, in the order metaRules holds
// them (TestDeviceRulesAmongMetaRules).
func deviceRules() []func(*metaDoc) error {
	return []func(*metaDoc) error{
		deploymentWellFormed,
		partDevicesMeasured,
		devicesAgreeWithTheirParts,
		clockSyncCoversHosts,
		gpuIsInDomainGPU,
		parallelismHasItsGPUs,
	}
}

// CheckDevices holds m, a run.json not yet written (the run's devices,
// deployment, clocks and engine as a run knows them), to the rules the
// reader holds the archive to (deviceRules): the runner refuses, before it
// measures anything, a run whose archive the reader would refuse (a part
// that lists a device the power source does not have, an engine of tensor
// parallel N over fewer measured GPUs), and fails one as soon as what it
// learns later (the parallelism a started engine reports) breaks them. The
// error is the first rule broken, naming the field, the part or device
// and the devices found, without a file position.
func CheckDevices(m *record.Meta) error {
	d := &metaDoc{m: m}
	for _, rule := range deviceRules() {
		if err := rule(d); err != nil {
			return err
		}
	}
	return nil
}

// deploymentWellFormed: a deployment has parts; each part has a name,
// given once, and a device role; entry names a part; a device is owned
// by one part at most. The writer builds the deployment from a
// --deployment file read with these rules (runner.ParseDeployment), or
// from the simulator's preset.
func deploymentWellFormed(d *metaDoc) error {
	dep := d.m.Deployment
	if dep == nil {
		return nil
	}
	if len(dep.Parts) == 0 {
		return d.at("deployment.parts is empty: a deployment has at least one part", "deployment", "parts")
	}
	names := map[string]bool{}
	owner := map[string]string{}
	for i, p := range dep.Parts {
		at := func(msg string, key string) error {
			return d.at(fmt.Sprintf("deployment.parts[%d].%s", i, msg), "deployment", "parts", i, key)
		}
		switch {
		case strings.TrimSpace(p.Name) == "":
			return at("name is empty: every part has a name", "name")
		case names[p.Name]:
			return at(fmt.Sprintf("name %q: a part of that name comes before it (names are unique)", p.Name), "name")
		case !slices.Contains(record.Roles, p.Role):
			return at(fmt.Sprintf("role %q (part %q) is not a device role (%s)", p.Role, p.Name, strings.Join(record.Roles, ", ")), "role")
		}
		names[p.Name] = true
		for k, id := range p.Devices {
			if o, dup := owner[id]; dup {
				return d.at(fmt.Sprintf("deployment.parts[%d].devices[%d]: device %q is part %q's already (a device serves one part)", i, k, id, o),
					"deployment", "parts", i, "devices", k)
			}
			owner[id] = p.Name
		}
	}
	if dep.PartNamed(dep.Entry) == nil {
		return d.at(fmt.Sprintf("deployment.entry %q names no part (parts: %s)", dep.Entry, strings.Join(partNames(dep), ", ")), "deployment", "entry")
	}
	return nil
}

func partNames(dep *record.Deployment) []string {
	out := make([]string, len(dep.Parts))
	for i, p := range dep.Parts {
		out[i] = p.Name
	}
	return out
}

// partDevicesMeasured: once run.json lists the measured devices, every
// device a part owns is one of them. A part's devices are the IDs of
// power.csv; one that was never measured (removed, or renamed) leaves its
// energy out of the part's phase.
func partDevicesMeasured(d *metaDoc) error {
	dep, devs := d.m.Deployment, d.m.Hardware.Devices
	if dep == nil || len(devs) == 0 {
		return nil
	}
	listed := make(map[string]bool, len(devs))
	for _, dev := range devs {
		listed[dev.ID] = true
	}
	for i, p := range dep.Parts {
		for k, id := range p.Devices {
			if !listed[id] {
				return d.at(fmt.Sprintf("deployment.parts[%d].devices[%d]: part %q owns device %q, which hardware.devices does not list (%s): a part owns measured devices",
					i, k, p.Name, id, devicesList(devs)), "deployment", "parts", i, "devices", k)
			}
		}
	}
	return nil
}

// devicesAgreeWithTheirParts: in a run with a deployment, a device a part
// owns has that part's role and (when the part has one) its host, and a
// device with a role is owned by a part. The writer gives a device its
// role and host from the part that lists it (runner's labelDevices, the
// simulator's nodes), and no role otherwise. A device's role decides the
// phase its energy counts to: a role that contradicts its part (roles
// swapped, every device moved into one part) moves energy between phases.
func devicesAgreeWithTheirParts(d *metaDoc) error {
	dep := d.m.Deployment
	if dep == nil {
		return nil
	}
	partOf := map[string]*record.DeploymentPart{}
	for i := range dep.Parts {
		for _, id := range dep.Parts[i].Devices {
			partOf[id] = &dep.Parts[i]
		}
	}
	for i, dev := range d.m.Hardware.Devices {
		p := partOf[dev.ID]
		switch {
		case p == nil && dev.Role != "":
			return d.at(fmt.Sprintf("hardware.devices[%d] (device %q): role %q, but no part of deployment.parts owns the device (a device has the role of the part that lists it, none when no part does)",
				i, dev.ID, dev.Role), "hardware", "devices", i, "role")
		case p == nil:
		case dev.Role != p.Role:
			return d.at(fmt.Sprintf("hardware.devices[%d] (device %q): role %q contradicts deployment part %q (role %q), which owns the device",
				i, dev.ID, dev.Role, p.Name, p.Role), "hardware", "devices", i, "role")
		case p.Host != "" && dev.Host != p.Host:
			return d.at(fmt.Sprintf("hardware.devices[%d] (device %q): host %q contradicts deployment part %q (host %q), which owns the device",
				i, dev.ID, dev.Host, p.Name, p.Host), "hardware", "devices", i, "host")
		}
	}
	return nil
}

// Telemetry sources (run.json telemetry.source, several joined by "+")
// that read clocks other than the run's: the simulator's nodes and
// joulebench agents.
const (
	simSource   = "sim"
	agentSource = "agent"
)

// clockSyncCoversHosts: a run that read joulebench agents has their
// clocks in telemetry.clock_sync (the agent source records one entry per
// agent when it opens); a run of the simulator whose devices are on two
// hosts or more (its nodes, each on its own clock) has an entry for each
// of those hosts. Without the entries nothing says the samples of the
// other hosts were placed on the run clock.
func clockSyncCoversHosts(d *metaDoc) error {
	srcs := strings.Split(d.m.Telemetry.Source, "+")
	cs := d.m.Telemetry.ClockSync
	if slices.Contains(srcs, agentSource) && len(cs) == 0 {
		return d.at(fmt.Sprintf("telemetry.clock_sync is absent, but telemetry.source %q reads joulebench agents, each on its own node's clock: the run records each agent's clock offset",
			d.m.Telemetry.Source), "telemetry", "source")
	}
	if !slices.Contains(srcs, simSource) {
		return nil
	}
	var hosts []string
	for _, dev := range d.m.Hardware.Devices {
		if dev.Host != "" && !slices.Contains(hosts, dev.Host) {
			hosts = append(hosts, dev.Host)
		}
	}
	if err := simNodesHaveDevices(d, hosts); err != nil || len(hosts) < 2 {
		return err
	}
	for i, dev := range d.m.Hardware.Devices {
		if dev.Host == "" || slices.ContainsFunc(cs, func(c record.ClockSync) bool { return c.Host == dev.Host }) {
			continue
		}
		return d.at(fmt.Sprintf("hardware.devices[%d] (device %q): host %q has no telemetry.clock_sync entry, but the simulated devices are on %d hosts (%s), each on its own clock: the run records every host's clock offset",
			i, dev.ID, dev.Host, len(hosts), strings.Join(hosts, ", ")), "hardware", "devices", i, "host")
	}
	return nil
}

// simNodesHaveDevices: each clock_sync entry of the simulator's nodes
// (source "sim HOST") is a host some device is on (hosts): every
// simulated node has GPUs. Once devices are listed, a node without any
// had its GPUs moved to another host.
func simNodesHaveDevices(d *metaDoc, hosts []string) error {
	if len(d.m.Hardware.Devices) == 0 {
		return nil
	}
	for i, c := range d.m.Telemetry.ClockSync {
		if strings.HasPrefix(c.Source, simSource+" ") && !slices.Contains(hosts, c.Host) {
			return d.at(fmt.Sprintf("telemetry.clock_sync[%d]: the simulator's node %q has no device in hardware.devices (devices on %s); each simulated node has its GPUs",
				i, c.Host, strings.Join(hosts, ", ")), "telemetry", "clock_sync", i, "host")
		}
	}
	return nil
}

// gpuPowerFields are the power_field values of sources that read GPUs
// alone (telemetry/nvml, telemetry/dcgm, telemetry/sim).
var gpuPowerFields = []string{"NVML_FI_DEV_POWER_INSTANT", "nvmlDeviceGetPowerUsage", "DCGM_FI_DEV_POWER_USAGE", "sim_board_power"}

// gpuOnlySources are the telemetry sources that measure GPUs alone.
var gpuOnlySources = []string{"nvml", "dcgm", simSource}

// gpuIsInDomainGPU: a device that is a GPU by what else run.json says of
// it has domain gpu: a GPU's uuid (NVML, DCGM and the simulator name
// GPUs "GPU-…", MIG instances "MIG-…"), a GPU interface's power_field, or
// a telemetry source that reads GPUs alone. A node's boundary contains
// its GPUs; a GPU relabelled node would move its energy out of the GPU
// figures and under the node's. Imported runs (a PTDaemon at the wall,
// a csv or Prometheus recording with --domain) carry none of these.
func gpuIsInDomainGPU(d *metaDoc) error {
	srcs := strings.Split(d.m.Telemetry.Source, "+")
	gpuOnly := !slices.ContainsFunc(srcs, func(s string) bool { return !slices.Contains(gpuOnlySources, s) })
	for i, dev := range d.m.Hardware.Devices {
		if dev.DomainOrGPU() == record.DomainGPU {
			continue
		}
		var why string
		switch {
		case strings.HasPrefix(dev.UUID, "GPU-") || strings.HasPrefix(dev.UUID, "MIG-"):
			why = fmt.Sprintf("its uuid %q is a GPU's", dev.UUID)
		case slices.Contains(gpuPowerFields, dev.PowerField):
			why = fmt.Sprintf("its power_field %q is a GPU's board power", dev.PowerField)
		case gpuOnly:
			why = fmt.Sprintf("telemetry.source %q measures GPUs alone", d.m.Telemetry.Source)
		default:
			continue
		}
		return d.at(fmt.Sprintf("hardware.devices[%d] (device %q): domain %q, but %s: the device is a GPU (domain gpu)", i, dev.ID, dev.Domain, why),
			"hardware", "devices", i, "domain")
	}
	return nil
}

// measuresTheEnginesGPUs reports whether the run's power source reads the
// engine's own GPUs: not power played back from a recording, nor the
// simulator (whose tensor parallel is its fiction) read by another source
// than its own GPUs (an agent, a meter).
func measuresTheEnginesGPUs(m *record.Meta) bool {
	if m.PowerReplayed() {
		return false
	}
	return !m.SimulatedEngine() || slices.Contains(strings.Split(m.Telemetry.Source, "+"), simSource)
}

// parallelismHasItsGPUs: an engine of engine.tensor_parallel N runs on N
// GPUs, so a run that measured GPUs measured at least N: among the
// devices of the part that engine is (deployment's served part, when it
// lists devices), else among all its GPU devices. Fewer would leave GPUs
// of the engine out of its energy (a device removed halves J/token). A
// run that measured no GPU (a node or CPU boundary, or no power), or not
// the engine's GPUs (measuresTheEnginesGPUs), is not held to it.
func parallelismHasItsGPUs(d *metaDoc) error {
	tp := d.m.Engine.TensorParallel
	if tp <= 1 || !measuresTheEnginesGPUs(d.m) {
		return nil
	}
	domain := make(map[string]string, len(d.m.Hardware.Devices))
	ids, where := make([]string, 0, len(d.m.Hardware.Devices)), "hardware.devices"
	measured := false // a GPU was measured
	for _, dev := range d.m.Hardware.Devices {
		domain[dev.ID] = dev.DomainOrGPU()
		ids = append(ids, dev.ID)
		measured = measured || dev.DomainOrGPU() == record.DomainGPU
	}
	if !measured {
		return nil
	}
	if dep := d.m.Deployment; dep != nil {
		if p := dep.Served(); p != nil && len(p.Devices) > 0 {
			ids, where = p.Devices, fmt.Sprintf("deployment part %q (the engine run.json's engine describes)", p.Name)
		}
	}
	if gpus := gpusAmong(ids, domain); len(gpus) < tp {
		return d.at(fmt.Sprintf("engine.tensor_parallel is %d but %s has %d GPU device(s) (%s): an engine of tensor parallel %d runs on %d GPUs, and every one is measured",
			tp, where, len(gpus), strings.Join(gpus, ", "), tp, tp), "engine", "tensor_parallel")
	}
	return presetPartsHaveTheirGPUs(d, tp, domain)
}

// presetPartsHaveTheirGPUs: --sim-preset disaggregated (the simulator's
// engine marked engine.extra.deployment "disaggregated") runs its prefill
// and decode parts as one engine configuration, tensor parallel tp on tp
// GPUs of each node, so every part that owns devices holds at least tp
// GPUs (a decode GPU removed halved decode's energy). Other deployments
// record only the served part's parallelism (a user's deployment of
// simulated parts gives each part its own settings), so their other parts
// are not held to it.
func presetPartsHaveTheirGPUs(d *metaDoc, tp int, domain map[string]string) error {
	dep := d.m.Deployment
	if dep == nil || !dep.Simulated || !d.m.SimulatedEngine() || d.m.Engine.Extra["deployment"] != simDisaggregated {
		return nil
	}
	for _, p := range dep.Parts {
		if len(p.Devices) == 0 {
			continue
		}
		if gpus := gpusAmong(p.Devices, domain); len(gpus) < tp {
			return d.at(fmt.Sprintf("engine.tensor_parallel is %d but deployment part %q of --sim-preset disaggregated has %d GPU device(s) (%s): the preset runs its parts as one engine configuration, tensor parallel %d on %d GPUs each, and every one is measured",
				tp, p.Name, len(gpus), strings.Join(gpus, ", "), tp, tp), "engine", "tensor_parallel")
		}
	}
	return nil
}

// simDisaggregated is engine.extra.deployment of --sim-preset
// disaggregated (engines/sim.Disaggregated.Info).
const simDisaggregated = "disaggregated"

// gpusAmong is the ids whose domain is gpu, in order.
func gpusAmong(ids []string, domain map[string]string) []string {
	var gpus []string
	for _, id := range ids {
		if domain[id] == record.DomainGPU {
			gpus = append(gpus, id)
		}
	}
	return gpus
}
