package archive

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// runJSON is run.json decoded for editing (numbers kept as written).
type runJSON = map[string]any

// editRunJSON decodes dir's run.json, applies edit and writes it back.
func editRunJSON(t *testing.T, dir string, edit func(m runJSON)) {
	t.Helper()
	path := filepath.Join(dir, RunFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m runJSON
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// obj is the object at keys in m (keys are member names and indexes).
func obj(m runJSON, keys ...any) map[string]any {
	var v any = m
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v.(map[string]any)
}

// dropDevice removes device id from dir's power.csv.
func dropDevice(t *testing.T, dir, id string) {
	t.Helper()
	path := filepath.Join(dir, PowerFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if !strings.Contains(line, ","+id+",") {
			keep = append(keep, line)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(keep, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// appendPower appends rows to dir's power.csv.
func appendPower(t *testing.T, dir, rows string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, PowerFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(rows); err != nil {
		t.Fatal(err)
	}
}

// twoHostCopy is the sample run made into what `run --sim-preset
// disaggregated` writes, on two hosts of one GPU each: gpu0 on node-a the
// prefill part's, gpu1 on node-b the decode part's, the router the entry
// on node-a without a GPU; the simulator's two nodes each with its
// clock_sync entry (start and end: the run is complete). The engine is
// the prefill part's, tensor parallel 1 on its one GPU.
func twoHostCopy(t *testing.T) string {
	t.Helper()
	dir := sampleCopy(t)
	editRunJSON(t, dir, func(m runJSON) {
		obj(m, "engine")["tensor_parallel"] = 1
		for i, d := range []struct{ host, role string }{{"node-a", "prefill"}, {"node-b", "decode"}} {
			dev := obj(m, "hardware", "devices", i)
			dev["host"], dev["role"] = d.host, d.role
		}
		tel := obj(m, "telemetry")
		tel["source"] = "sim"
		tel["clock_sync"] = []any{
			map[string]any{"source": "sim node-a", "host": "node-a", "start_offset_s": 0, "start_rtt_s": 0.001, "end_offset_s": 0, "end_rtt_s": 0.001, "probes": 8},
			map[string]any{"source": "sim node-b", "host": "node-b", "start_offset_s": 0.75, "start_rtt_s": 0.001, "end_offset_s": 0.75, "end_rtt_s": 0.001, "probes": 8},
		}
		m["deployment"] = map[string]any{"entry": "router", "simulated": true, "parts": []any{
			map[string]any{"name": "prefill", "role": "prefill", "host": "node-a", "kind": "sim", "managed": true, "devices": []any{"gpu0"}},
			map[string]any{"name": "decode", "role": "decode", "host": "node-b", "kind": "sim", "managed": true, "devices": []any{"gpu1"}},
			map[string]any{"name": "router", "role": "router", "host": "node-a", "kind": "sim-router", "managed": true},
		}}
	})
	return dir
}

// tpTwoPrefill makes twoHostCopy's engine tensor parallel 2: a second GPU,
// gpu2, on node-a in the prefill part (with two power samples), the
// decode part left with its one GPU.
func tpTwoPrefill(t *testing.T, dir string) {
	t.Helper()
	editRunJSON(t, dir, func(m runJSON) {
		obj(m, "engine")["tensor_parallel"] = 2
		hw := obj(m, "hardware")
		hw["devices"] = append(hw["devices"].([]any), map[string]any{"id": "gpu2", "name": "Simulated NVIDIA H100 80GB HBM3",
			"uuid": "GPU-00000000-0000-0000-0000-000000000002", "host": "node-a", "role": "prefill", "method": "counter", "power_field": "power_usage", "simulated": true})
		part(m, 0)["devices"] = []any{"gpu0", "gpu2"}
	})
	appendPower(t, dir, "1717405200,gpu2,60,3000000,536870912\n1717405230,gpu2,60,3001800,536870912\n")
}

// part is deployment.parts[i] of m.
func part(m runJSON, i int) map[string]any { return obj(m, "deployment", "parts", i) }

// deviceCase is an edit of an archive and the error Load must give,
// naming run.json and the field ("" for an edit the writer makes too,
// which must load).
type deviceCase struct {
	name string
	base func(*testing.T) string
	edit func(t *testing.T, dir string)
	msg  string
}

func runEdit(edit func(m runJSON)) func(*testing.T, string) {
	return func(t *testing.T, dir string) { editRunJSON(t, dir, edit) }
}

// deviceCases are the edits of the third adversarial pass on devices,
// roles, hosts, parts, entry, clocks, domains and parallelism.
func deviceCases() []deviceCase {
	return []deviceCase{
		{name: "two hosts as written", base: twoHostCopy, edit: runEdit(func(runJSON) {})},
		// Item 3: roles swapped on the devices, the parts unchanged: the
		// prefill GPU's energy would count to decode and back.
		{name: "roles swapped", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			obj(m, "hardware", "devices", 0)["role"], obj(m, "hardware", "devices", 1)["role"] = "decode", "prefill"
		}), msg: `hardware.devices[0] (device "gpu0"): role "decode" contradicts deployment part "prefill" (role "prefill"), which owns the device`},
		{name: "part owns a device that does not exist", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			part(m, 0)["devices"] = []any{"gpu0", "gpu7"}
		}), msg: `deployment.parts[0].devices[1]: part "prefill" owns device "gpu7", which hardware.devices does not list (gpu0, gpu1)`},
		// Every device in the prefill part, the decode part's list
		// emptied: gpu1 still has decode's role.
		{name: "every device in one part", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			part(m, 0)["devices"], part(m, 1)["devices"] = []any{"gpu0", "gpu1"}, []any{}
		}), msg: `hardware.devices[1] (device "gpu1"): role "decode" contradicts deployment part "prefill" (role "prefill")`},
		// ... and the role moved with it: the host still says node-b.
		{name: "every device in one part, roles too", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			part(m, 0)["devices"], part(m, 1)["devices"] = []any{"gpu0", "gpu1"}, []any{}
			obj(m, "hardware", "devices", 1)["role"] = "prefill"
		}), msg: `hardware.devices[1] (device "gpu1"): host "node-b" contradicts deployment part "prefill" (host "node-a")`},
		// ... and the host as well: the simulator's node-b clock has no
		// device left.
		{name: "every device in one part, roles and hosts too", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			part(m, 0)["devices"], part(m, 1)["devices"] = []any{"gpu0", "gpu1"}, []any{}
			obj(m, "hardware", "devices", 1)["role"], obj(m, "hardware", "devices", 1)["host"] = "prefill", "node-a"
		}), msg: `telemetry.clock_sync[1]: the simulator's node "node-b" has no device in hardware.devices`},
		{name: "a role no part gives", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			part(m, 1)["devices"] = []any{}
		}), msg: `hardware.devices[1] (device "gpu1"): role "decode", but no part of deployment.parts owns the device`},
		{name: "entry names no part", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			obj(m, "deployment")["entry"] = "gateway"
		}), msg: `deployment.entry "gateway" names no part (parts: prefill, decode, router)`},
		{name: "no entry", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			delete(obj(m, "deployment"), "entry")
		}), msg: `deployment.entry "" names no part`},
		{name: "no parts", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			obj(m, "deployment")["parts"] = []any{}
		}), msg: `deployment.parts is empty`},
		{name: "a part named twice", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			part(m, 2)["name"] = "decode"
		}), msg: `deployment.parts[2].name "decode": a part of that name comes before it`},
		{name: "a part's role unknown", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			part(m, 2)["role"] = "gateway"
		}), msg: `deployment.parts[2].role "gateway" (part "router") is not a device role`},
		{name: "a device in two parts", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			part(m, 2)["devices"] = []any{"gpu1"}
		}), msg: `deployment.parts[2].devices[0]: device "gpu1" is part "decode"'s already`},
		// The simulator's nodes each keep a clock: removing the entries
		// of a run over two hosts hides whether node-b's samples were
		// placed on the run clock.
		{name: "clock_sync removed", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			delete(obj(m, "telemetry"), "clock_sync")
		}), msg: `hardware.devices[0] (device "gpu0"): host "node-a" has no telemetry.clock_sync entry, but the simulated devices are on 2 hosts (node-a, node-b)`},
		{name: "node-b's clock_sync removed", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			tel := obj(m, "telemetry")
			tel["clock_sync"] = tel["clock_sync"].([]any)[:1]
		}), msg: `hardware.devices[1] (device "gpu1"): host "node-b" has no telemetry.clock_sync entry`},
		{name: "agents without clock_sync", edit: runEdit(func(m runJSON) {
			obj(m, "telemetry")["source"] = "nvml+agent"
		}), msg: `telemetry.clock_sync is absent, but telemetry.source "nvml+agent" reads joulebench agents`},
		// Item 9b: a GPU relabelled node. Its uuid says GPU; without the
		// uuid, its power field or the source say it.
		{name: "a GPU relabelled node", edit: runEdit(func(m runJSON) {
			obj(m, "hardware", "devices", 1)["domain"] = "node"
		}), msg: `hardware.devices[1] (device "gpu1"): domain "node", but its uuid "GPU-00000000-0000-0000-0000-000000000001" is a GPU's: the device is a GPU (domain gpu)`},
		{name: "a GPU relabelled cpu, no uuid, NVML's field", edit: runEdit(func(m runJSON) {
			dev := obj(m, "hardware", "devices", 1)
			dev["domain"], dev["power_field"] = "cpu", "NVML_FI_DEV_POWER_INSTANT"
			delete(dev, "uuid")
			obj(m, "telemetry")["source"] = "nvml+rapl"
		}), msg: `domain "cpu", but its power_field "NVML_FI_DEV_POWER_INSTANT" is a GPU's board power`},
		{name: "a GPU relabelled node, no uuid, the simulator's source", edit: runEdit(func(m runJSON) {
			dev := obj(m, "hardware", "devices", 1)
			dev["domain"] = "node"
			delete(dev, "uuid")
		}), msg: `domain "node", but telemetry.source "sim" measures GPUs alone`},
		// A node meter of an import (a PTDaemon at the wall) is read.
		{name: "an imported node meter", edit: runEdit(func(m runJSON) {
			obj(m, "telemetry")["source"] = "import:ptdaemon"
			obj(m, "engine")["tensor_parallel"] = 0
			for i := range 2 {
				dev := obj(m, "hardware", "devices", i)
				dev["domain"], dev["power_field"] = "node", "ptdaemon:Watts"
				delete(dev, "uuid")
			}
		})},
		{name: "a node meter beside the GPUs", edit: func(t *testing.T, dir string) {
			editRunJSON(t, dir, func(m runJSON) {
				obj(m, "telemetry")["source"] = "sim+ipmi"
				obj(m, "hardware")["devices"] = append(obj(m, "hardware")["devices"].([]any),
					map[string]any{"id": "ipmi0", "method": "power", "power_field": "dcmi instantaneous power reading", "domain": "node"})
			})
			appendPower(t, dir, "1717405200,ipmi0,900,,\n1717405230,ipmi0,900,,\n")
		}},
		// Item 9c: one of the two GPUs of a tensor parallel 2 engine
		// removed, from run.json and power.csv.
		{name: "a GPU of tensor parallel 2 removed", edit: func(t *testing.T, dir string) {
			editRunJSON(t, dir, func(m runJSON) {
				hw := obj(m, "hardware")
				hw["devices"] = hw["devices"].([]any)[:1]
			})
			dropDevice(t, dir, "gpu1")
		}, msg: `engine.tensor_parallel is 2 but hardware.devices has 1 GPU device(s) (gpu0): an engine of tensor parallel 2 runs on 2 GPUs`},
		// Item 9c in the disaggregated run: --sim-preset disaggregated
		// (engine.extra.deployment) runs its prefill and decode parts as
		// one engine configuration (tensor parallel 2 on two GPUs of each
		// node); the decode part's second GPU removed halved decode's
		// energy (J/token 0.285 -> 0.165, exit 0), as the served (prefill)
		// part alone was held to it.
		{name: "a decode GPU of the disaggregated preset removed", base: twoHostCopy, edit: func(t *testing.T, dir string) {
			tpTwoPrefill(t, dir)
			editRunJSON(t, dir, func(m runJSON) {
				obj(m, "engine", "extra")["deployment"] = "disaggregated"
			})
		}, msg: `engine.tensor_parallel is 2 but deployment part "decode" of --sim-preset disaggregated has 1 GPU device(s) (gpu1): the preset runs its parts as one engine configuration, tensor parallel 2 on 2 GPUs each, and every one is measured`},
		// A user's deployment of simulated parts gives each part its own
		// settings (docs/engines.md: the idle part on one GPU): only the
		// served part's parallelism is recorded, the others are read.
		{name: "a user's simulated deployment, a part on fewer GPUs", base: twoHostCopy, edit: tpTwoPrefill},
		// ... or relabelled cpu, with nothing else saying it is a GPU.
		{name: "a GPU of tensor parallel 2 relabelled cpu", edit: runEdit(func(m runJSON) {
			dev := obj(m, "hardware", "devices", 1)
			dev["domain"], dev["power_field"] = "cpu", "energy_uj"
			delete(dev, "uuid")
			obj(m, "telemetry")["source"] = "sim+rapl"
		}), msg: `engine.tensor_parallel is 2 but hardware.devices has 1 GPU device(s)`},
		// The simulator's tensor parallel 2 is its fiction when another
		// source than its own GPUs measured it (an agent's one GPU), and
		// power played back is a recording's, not the engine's.
		{name: "the simulator read by an agent's one GPU", edit: func(t *testing.T, dir string) {
			editRunJSON(t, dir, func(m runJSON) {
				hw := obj(m, "hardware")
				hw["devices"] = hw["devices"].([]any)[:1]
				obj(m, "telemetry")["source"] = "agent"
				obj(m, "telemetry")["clock_sync"] = []any{map[string]any{"source": "agent http://127.0.0.1:9400", "host": "sample-host",
					"start_offset_s": 0, "start_rtt_s": 0.001, "end_offset_s": 0, "end_rtt_s": 0.001, "probes": 8}}
			})
			dropDevice(t, dir, "gpu1")
		}},
		{name: "one GPU played back under tensor parallel 2", edit: func(t *testing.T, dir string) {
			editRunJSON(t, dir, func(m runJSON) {
				hw := obj(m, "hardware")
				hw["devices"] = hw["devices"].([]any)[:1]
				obj(m, "telemetry")["source"] = "replay"
			})
			dropDevice(t, dir, "gpu1")
		}},
		{name: "a vLLM of tensor parallel 2 on one GPU", edit: func(t *testing.T, dir string) {
			editRunJSON(t, dir, func(m runJSON) {
				hw := obj(m, "hardware")
				hw["devices"] = hw["devices"].([]any)[:1]
				obj(m, "engine")["kind"] = "vllm"
				obj(m, "telemetry")["source"] = "nvml"
			})
			dropDevice(t, dir, "gpu1")
		}, msg: `engine.tensor_parallel is 2 but hardware.devices has 1 GPU device(s) (gpu0)`},
		// In a deployment, the engine run.json describes is the served
		// part's (the prefill part behind the router): its GPUs count.
		{name: "tensor parallel 2 on a part of one GPU", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			obj(m, "engine")["tensor_parallel"] = 2
		}), msg: `engine.tensor_parallel is 2 but deployment part "prefill" (the engine run.json's engine describes) has 1 GPU device(s)`},
		{name: "tensor parallel 2 on a part of two GPUs", base: twoHostCopy, edit: runEdit(func(m runJSON) {
			obj(m, "engine")["tensor_parallel"] = 2
			part(m, 0)["devices"], part(m, 1)["devices"] = []any{"gpu0", "gpu1"}, []any{}
			dev := obj(m, "hardware", "devices", 1)
			dev["role"], dev["host"] = "prefill", "node-a"
			obj(m, "telemetry")["clock_sync"] = obj(m, "telemetry")["clock_sync"].([]any)[:1]
		})},
	}
}

// TestDevicesHeldToDeploymentClocksAndParallelism: every edit of the
// third adversarial pass on devices is refused by Load, with run.json
// and the field; what the writer writes loads.
func TestDevicesHeldToDeploymentClocksAndParallelism(t *testing.T) {
	for _, tc := range deviceCases() {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.base
			if base == nil {
				base = sampleCopy
			}
			dir := base(t)
			tc.edit(t, dir)
			_, err := Load(dir)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("an archive the writer makes is refused: %v", err)
				}
				return
			}
			where := filepath.Join(dir, RunFile) + ":"
			if err == nil || !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v\nwant %q and %q", err, where, tc.msg)
			}
		})
	}
}

// TestDeviceRulesAmongMetaRules: the rules a run checks before it
// measures (CheckDevices) are the reader's, held in the same order.
func TestDeviceRulesAmongMetaRules(t *testing.T) {
	name := func(f func(*metaDoc) error) string { return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name() }
	var meta []string
	for _, f := range metaRules() {
		meta = append(meta, name(f))
	}
	var dev []string
	for _, f := range deviceRules() {
		dev = append(dev, name(f))
	}
	i := slices.Index(meta, dev[0])
	if i < 0 || i+len(dev) > len(meta) || !slices.Equal(meta[i:i+len(dev)], dev) {
		t.Errorf("metaRules %v do not hold deviceRules %v in order", meta, dev)
	}
}

// TestCheckDevices: a run.json not yet written is held to the device
// rules, the error naming the part, the device and the devices measured,
// with no file position.
func TestCheckDevices(t *testing.T) {
	m := &record.Meta{
		Deployment: &record.Deployment{Entry: "p", Parts: []record.DeploymentPart{{Name: "p", Role: record.RoleReplica, Devices: []string{"gpu7"}}}},
		Hardware:   record.Hardware{Devices: []record.Device{{ID: "gpu0"}, {ID: "gpu1"}}},
	}
	err := CheckDevices(m)
	want := `deployment.parts[0].devices[0]: part "p" owns device "gpu7", which hardware.devices does not list (gpu0, gpu1)`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("deployment: %v, want %q", err, want)
	}
	// Tensor parallel 2 over one GPU measured by NVML; the same over
	// two GPUs is the run the writer makes.
	m = &record.Meta{Engine: record.EngineInfo{Kind: "vllm", TensorParallel: 2}, Telemetry: record.TelemetryInfo{Source: "nvml"},
		Hardware: record.Hardware{Devices: []record.Device{{ID: "gpu0"}}}}
	want = "engine.tensor_parallel is 2 but hardware.devices has 1 GPU device(s) (gpu0)"
	if err := CheckDevices(m); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("parallelism: %v, want %q", err, want)
	}
	m.Hardware.Devices = append(m.Hardware.Devices, record.Device{ID: "gpu1"})
	if err := CheckDevices(m); err != nil {
		t.Errorf("two GPUs for tensor parallel 2: %v", err)
	}
}
