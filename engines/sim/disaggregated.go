package sim

import (
	"io"
	"strconv"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// Hosts of the simulated disaggregated deployment (--sim-preset
// disaggregated).
const (
	PrefillHost = "sim-node-0"
	DecodeHost  = "sim-node-1"
)

// DisaggConfig is the simulated disaggregated deployment: a prefill
// engine and a decode engine, each on its own simulated node with its own
// GPUs and power clock, behind a router.
type DisaggConfig struct {
	// Prefill and Decode are the two engines' configurations.
	Prefill, Decode Config
	// GPU is each node's GPUs (the decode node's seeded one higher).
	GPU simtel.Config
	// KVPerTokenS is the KV cache's transfer time per prompt token, at
	// speed 1.
	KVPerTokenS float64
	// DecodeClockOffsetS is how far the decode node's power clock is
	// ahead of the run clock: the run measures it and corrects for it.
	DecodeClockOffsetS float64
}

// Defaults of the disaggregated preset.
const (
	// DefaultKVPerTokenS moves a prompt token's KV cache in 20 µs (a
	// 1000-token prompt in 20 ms at speed 1).
	DefaultKVPerTokenS = 20e-6
	// DefaultDecodeClockOffsetS is the decode node's power clock offset.
	DefaultDecodeClockOffsetS = 0.75
)

// DefaultDisagg is the disaggregated preset over an engine's and a GPU's
// configuration: both engines as cfg, the GPUs as gpu.
func DefaultDisagg(cfg Config, gpu simtel.Config) DisaggConfig {
	return DisaggConfig{Prefill: cfg, Decode: cfg, GPU: gpu, KVPerTokenS: DefaultKVPerTokenS, DecodeClockOffsetS: DefaultDecodeClockOffsetS}
}

// Disaggregated is the simulated disaggregated deployment as one engine
// (engines.Deployment): parts prefill (on PrefillHost), decode (on
// DecodeHost) and the router (entry, on the prefill node, without GPUs).
// Its GPUs are two simulated nodes (SimulatedNodes).
type Disaggregated struct {
	*engines.Deployment
	prefill, decode *Engine
	nodes           []simtel.Node
}

// NewDisaggregated builds the deployment (nothing runs until Start).
func NewDisaggregated(dc DisaggConfig) (*Disaggregated, error) {
	// The parts share engine.log: each line says whose it is.
	log := dc.Decode.Log
	dc.Prefill.Log, dc.Decode.Log = partLog(dc.Prefill.Log, "prefill"), partLog(log, "decode")
	prefill, decode := New(dc.Prefill), New(dc.Decode)
	router := NewRouter(prefill, decode, dc.KVPerTokenS, decode.cfg.Speed, partLog(log, "router"))
	node := func(host, role string, base int, seed int64, load simtel.Load, off float64) simtel.Node {
		g := dc.GPU
		g.Host, g.Role, g.IDBase, g.Seed = host, role, base, seed
		return simtel.Node{Config: g, Load: load, OffsetS: off}
	}
	n0 := node(PrefillHost, record.RolePrefill, 0, dc.GPU.Seed, prefill, 0)
	n1 := node(DecodeHost, record.RoleDecode, max(1, dc.GPU.Devices), dc.GPU.Seed+1, decode, dc.DecodeClockOffsetS)
	ids := func(n simtel.Node) []string {
		out := make([]string, max(1, n.Config.Devices))
		for i := range out {
			out[i] = simtel.Name + strconv.Itoa(n.Config.IDBase+i)
		}
		return out
	}
	dep, err := engines.NewDeployment([]engines.Part{
		{Name: "prefill", Role: record.RolePrefill, Host: PrefillHost, Devices: ids(n0), Engine: prefill},
		{Name: "decode", Role: record.RoleDecode, Host: DecodeHost, Devices: ids(n1), Engine: decode},
		{Name: "router", Role: record.RoleRouter, Host: PrefillHost, Engine: router},
	}, "router")
	if err != nil {
		return nil, err
	}
	return &Disaggregated{Deployment: dep, prefill: prefill, decode: decode, nodes: []simtel.Node{n0, n1}}, nil
}

// SimulatedNodes are the deployment's two simulated nodes: each one's
// GPUs follow its engine.
func (d *Disaggregated) SimulatedNodes() []simtel.Node { return d.nodes }

// Engines are the prefill and the decode engine.
func (d *Disaggregated) Engines() (prefill, decode *Engine) { return d.prefill, d.decode }

// SetGPUSettings puts both nodes' GPUs under a run's power limit and
// locked clocks.
func (d *Disaggregated) SetGPUSettings(g *simtel.GPUSettings) {
	for _, e := range []*Engine{d.prefill, d.decode} {
		e.SetGPUSettings(g)
	}
	for i := range d.nodes {
		d.nodes[i].Config.Settings = g
	}
}

// Info is the prefill engine's configuration at the router's URL, marked
// as the disaggregated deployment.
func (d *Disaggregated) Info() record.EngineInfo {
	info := d.Deployment.Info()
	extra := map[string]any{}
	for k, v := range info.Extra {
		extra[k] = v
	}
	extra["deployment"] = "disaggregated"
	info.Extra = extra
	return info
}

// MetricsURL is the decode engine's /metrics: its running batch is the
// deployment's.
func (d *Disaggregated) MetricsURL() string { return d.decode.MetricsURL() }

// prefixLog prefixes each write, a whole log line of the simulator's, with
// the part's name.
type prefixLog struct {
	w      io.Writer
	prefix string
}

func partLog(w io.Writer, name string) io.Writer {
	if w == nil {
		return nil
	}
	return &prefixLog{w: w, prefix: "[" + name + "] "}
}

func (p *prefixLog) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}
