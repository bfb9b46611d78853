package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/clocksync"
	"github.com/joulebench/joulebench/telemetry"
)

// Node is one simulated host of a deployment of several parts: its GPUs
// (Config, whose Host and Role its devices carry) follow the load of the
// part it runs, and its power clock is OffsetS seconds ahead of the run
// clock, as a remote node's clock may be. The run does not read OffsetS:
// it measures it (Nodes.Sync).
type Node struct {
	Config Config
	Load   Load
	// OffsetS is the node's clock minus the run clock, in seconds.
	OffsetS float64
}

// Nodes reads the GPUs of several simulated nodes, each stamping its
// readings with its own clock, and places them on the run clock: each
// node's offset is measured by round trips (clocksync.Measure, the probe
// reading that node's clock) when the source opens (Sync) and at the end
// (ClockSync with end), and each reading's time is mapped
// (clocksync.Mapping).
// Each device is read and integrated on its own; nothing is summed across
// nodes.
type Nodes struct {
	nodes []Node
	run   telemetry.Clock
	srcs  []*Source
	opts  clocksync.Options

	mu     sync.Mutex
	maps   []clocksync.Mapping
	synced bool
}

var (
	_ telemetry.Source            = (*Nodes)(nil)
	_ telemetry.ClockSyncReporter = (*Nodes)(nil)
)

// NewNodes returns the source of nodes on the run clock run (nil:
// telemetry.WallClock); Sync must measure the clocks before the first
// Read. opts bounds each measurement (zero: clocksync's defaults).
func NewNodes(nodes []Node, run telemetry.Clock, opts clocksync.Options) *Nodes {
	if run == nil {
		run = telemetry.WallClock
	}
	n := &Nodes{nodes: nodes, run: run, opts: opts, maps: make([]clocksync.Mapping, len(nodes))}
	for _, nd := range nodes {
		n.srcs = append(n.srcs, New(nd.Config, nd.Load, nodeClock(run, nd.OffsetS)))
	}
	return n
}

// nodeClock is a node's own clock: the run clock plus its offset.
func nodeClock(run telemetry.Clock, offsetS float64) telemetry.Clock {
	return func() float64 { return run() + offsetS }
}

// NodesGPUs is Env.SimulatedGPUs of a simulated deployment: the GPUs of
// nodes, their clocks measured with clocksync's default bounds.
func NodesGPUs(nodes []Node) func(telemetry.Clock) telemetry.Source {
	return func(clock telemetry.Clock) telemetry.Source { return NewNodes(nodes, clock, clocksync.Options{}) }
}

// Name returns "sim".
func (n *Nodes) Name() string { return Name }

// Node is the source of node i's GPUs (its readings on its own clock).
func (n *Nodes) Node(i int) *Source { return n.srcs[i] }

// sourceName is a node's name in run.json telemetry.clock_sync.
func (n *Nodes) sourceName(i int) string { return Name + " " + n.nodes[i].Config.Host }

// measure measures node i's offset: the probe reads its clock.
func (n *Nodes) measure(ctx context.Context, i int) (clocksync.Estimate, error) {
	clock := nodeClock(n.run, n.nodes[i].OffsetS)
	est, err := clocksync.Measure(ctx, n.run, func(context.Context) (float64, error) { return clock(), nil }, n.opts)
	if err != nil {
		return est, fmt.Errorf("simulated node %s: clock offset: %w", n.nodes[i].Config.Host, err)
	}
	return est, nil
}

// Sync measures every node's offset at the start and returns run.json's
// entries for them.
func (n *Nodes) Sync(ctx context.Context) ([]record.ClockSync, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := range n.nodes {
		est, err := n.measure(ctx, i)
		if err != nil {
			return nil, err
		}
		n.maps[i] = clocksync.NewMapping(est)
	}
	n.synced = true
	return n.entries(), nil
}

// ClockSync returns every node's entry; with end it first measures each
// node's offset at the end (once: a later call returns the same end).
func (n *Nodes) ClockSync(ctx context.Context, end bool) ([]record.ClockSync, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.synced {
		return nil, errors.New("simulated nodes: clocks never measured")
	}
	var errs []error
	for i := range n.nodes {
		if !end || n.maps[i].Ended {
			continue
		}
		est, err := n.measure(ctx, i)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n.maps[i] = n.maps[i].WithEnd(est)
	}
	return n.entries(), errors.Join(errs...)
}

// entries are the clock_sync entries of every node, as known now.
func (n *Nodes) entries() []record.ClockSync {
	out := make([]record.ClockSync, len(n.nodes))
	for i, m := range n.maps {
		out[i] = record.ClockSync{Source: n.sourceName(i), Host: n.nodes[i].Config.Host,
			StartOffsetS: m.Start.OffsetS, StartRTTS: m.Start.RTTS, Probes: m.Start.Probes}
		if m.Ended {
			end, rtt := m.End.OffsetS, m.End.RTTS
			out[i].EndOffsetS, out[i].EndRTTS = &end, &rtt
		}
	}
	return out
}

// Mapping is node i's mapping onto the run clock as measured so far.
func (n *Nodes) Mapping(i int) clocksync.Mapping {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.maps[i]
}

// Devices lists every node's GPUs, each with its host and role.
func (n *Nodes) Devices(ctx context.Context) ([]record.Device, error) {
	var out []record.Device
	for _, s := range n.srcs {
		devs, err := s.Devices(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, devs...)
	}
	return out, nil
}

// Read reads every node's GPUs and places each reading's time, taken on
// its node's clock, on the run clock.
func (n *Nodes) Read(ctx context.Context) ([]telemetry.Reading, error) {
	n.mu.Lock()
	maps, synced := append([]clocksync.Mapping(nil), n.maps...), n.synced
	n.mu.Unlock()
	if !synced {
		return nil, errors.New("simulated nodes: read before their clocks were measured")
	}
	var out []telemetry.Reading
	for i, s := range n.srcs {
		rs, err := s.Read(ctx)
		if err != nil {
			return nil, fmt.Errorf("simulated node %s: %w", n.nodes[i].Config.Host, err)
		}
		for k := range rs {
			rs[k].T = maps[i].ToRun(rs[k].T)
		}
		out = append(out, rs...)
	}
	return out, nil
}

// Close closes every node's source.
func (n *Nodes) Close() error {
	for _, s := range n.srcs {
		_ = s.Close()
	}
	return nil
}

// Note says what the source measures for run.json's telemetry note.
func (n *Nodes) Note(devs []record.Device) string {
	hosts := make([]string, len(n.nodes))
	for i, nd := range n.nodes {
		hosts[i] = fmt.Sprintf("%s (%s)", nd.Config.Host, nd.Config.Role)
	}
	return fmt.Sprintf("simulated GPU power of %d simulated nodes, %s, each following its own engine part's load on its own clock, "+
		"mapped onto the run clock by measured offsets; %s", len(n.nodes), strings.Join(hosts, ", "), telemetry.DeviceSummary(devs))
}
