// Package agent carries one node's power samples to a run on another
// node: `joulebench agent` serves its host's local power source (NVML,
// DCGM, RAPL, ...) over HTTP (Server), and the `agent` telemetry source
// (--telemetry agent --agent URL, one per node) reads one or several
// agents, measures each one's clock offset to the run clock by round trips
// (package internal/clocksync) and places their samples on the run clock.
//
// The agent carries samples only: three GET endpoints, no command, no
// file. It listens on the address it is given (there is no default) and
// answers only requests that carry the per-run token as a bearer token;
// the token is compared in constant time and never logged or echoed.
//
// Endpoints:
//
//	GET /v1/clock    {"t": 1767312000.123456} — the agent's clock, Unix seconds
//	GET /v1/devices  {"host": "node1", "source": "nvml", "interval_s": 0.1, "devices": [...]}
//	GET /v1/samples  NDJSON, one line per reading, stamped with the agent's clock:
//	                 {"t": ..., "device": "gpu0", "power_w": 312.5, "energy_j": 1234.5, "has_energy": true, "mem_used_bytes": 1073741824}
package agent

import (
	"github.com/joulebench/joulebench/archive/record"
)

// The agent's endpoints.
const (
	PathClock   = "/v1/clock"
	PathDevices = "/v1/devices"
	PathSamples = "/v1/samples"
)

// TokenEnv is the environment variable the agent source reads the token
// from when no --agent-token-file is given (never a flag: a flag's value
// would sit in the command line run.json records).
const TokenEnv = "JOULEBENCH_AGENT_TOKEN"

// Unauthorized is the body of a 401: it never says what was sent.
const Unauthorized = "bad or missing token"

// ClockReply is the answer of GET /v1/clock.
type ClockReply struct {
	// T is the agent's clock in Unix seconds.
	T float64 `json:"t"`
}

// DevicesReply is the answer of GET /v1/devices.
type DevicesReply struct {
	// Host names the agent's node (its hostname or --host).
	Host string `json:"host"`
	// Source is the agent's local power source (--telemetry).
	Source string `json:"source"`
	// IntervalS is the agent's sampling interval.
	IntervalS float64 `json:"interval_s"`
	// Devices are the source's devices, each with Host set.
	Devices []record.Device `json:"devices"`
}

// Sample is one line of GET /v1/samples: one device's reading, T on the
// agent's clock.
type Sample struct {
	T            float64 `json:"t"`
	Device       string  `json:"device"`
	PowerW       float64 `json:"power_w"`
	EnergyJ      float64 `json:"energy_j,omitempty"`
	HasEnergy    bool    `json:"has_energy,omitempty"`
	MemUsedBytes int64   `json:"mem_used_bytes"`
}
