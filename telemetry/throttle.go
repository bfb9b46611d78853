package telemetry

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// ThrottleReporter is an optional ability of a Source: it says whether a
// device slowed its clocks (thermal, power cap, power brake, ...) so that a
// step can warn (asiai protocol, rule 5). Sources that cannot tell do not
// implement it.
type ThrottleReporter interface {
	// Throttled reports whether any reading since the previous call (the
	// first call: since the source opened) saw a device throttled, and a
	// one-line reason naming the devices, the causes and how many readings
	// showed each. Each call starts a new window.
	Throttled() (bool, string)
}

// Anomaly is something a source noticed in the data that a reader of the
// archive must know about, e.g. an energy counter that went backwards.
type Anomaly struct {
	// T is the run-clock time the source noticed it.
	T float64 `json:"t"`
	// Device is the record.Device ID, empty when it concerns the source.
	Device string `json:"device,omitempty"`
	// Kind is one of the Anomaly* constants.
	Kind string `json:"kind"`
	// Detail is a human-readable sentence.
	Detail string `json:"detail"`
	// Note marks a measurement note rather than a fault (e.g. the scrape
	// interval seen): recorded as an event all the same, logged once per
	// detail at info level instead of a warning each.
	Note bool `json:"note,omitempty"`
}

// Anomaly kinds.
const (
	// AnomalyCounterReset: a cumulative energy counter decreased (driver
	// reload, GPU reset, counter wrap). power.csv keeps the raw counter;
	// the analysis treats the decrease as a reset (measure), so energy
	// is never negative.
	AnomalyCounterReset = "energy_counter_reset"
	// AnomalyStaleCounter: a counter stayed constant while the device drew
	// power (e.g. dcgm-exporter collecting less often than we scrape).
	AnomalyStaleCounter = "energy_counter_stale"
	// AnomalyCounterInvalid: a counter read a value power.csv cannot hold
	// (negative, NaN); the reading is written with its power, without
	// energy.
	AnomalyCounterInvalid = "energy_counter_invalid"
)

// AnomalyReporter is an optional ability of a Source: the anomalies seen so
// far, oldest first (a copy).
type AnomalyReporter interface {
	Anomalies() []Anomaly
}

// ThrottleLog accumulates throttle observations between two Report calls;
// sources that implement ThrottleReporter embed one. Safe for concurrent
// use. The zero value is ready.
type ThrottleLog struct {
	mu       sync.Mutex
	seen     map[string]map[string]int // device -> cause -> readings
	minClock map[string]float64        // device -> lowest clock while throttled (MHz)
	order    []string
}

// Observe records that device showed the given causes in one reading, with
// its clock in MHz at that moment (0 when unknown). Nothing is recorded when
// causes is empty.
func (l *ThrottleLog) Observe(device string, causes []string, clockMHz float64) {
	if len(causes) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]map[string]int{}
		l.minClock = map[string]float64{}
	}
	m, ok := l.seen[device]
	if !ok {
		m = map[string]int{}
		l.seen[device] = m
		l.order = append(l.order, device)
	}
	for _, c := range causes {
		m[c]++
	}
	if clockMHz > 0 {
		if old, ok := l.minClock[device]; !ok || clockMHz < old {
			l.minClock[device] = clockMHz
		}
	}
}

// Report returns what was observed since the previous Report and starts a
// new window: "gpu0: hw_thermal_slowdown (3 readings), sw_power_cap (1
// reading), clock down to 1200 MHz; gpu2: ...".
func (l *ThrottleLog) Report() (bool, string) {
	l.mu.Lock()
	seen, order, minClock := l.seen, l.order, l.minClock
	l.seen, l.order, l.minClock = nil, nil, nil
	l.mu.Unlock()
	if len(order) == 0 {
		return false, ""
	}
	parts := make([]string, 0, len(order))
	for _, d := range order {
		causes := make([]string, 0, len(seen[d]))
		for c := range seen[d] {
			causes = append(causes, c)
		}
		slices.Sort(causes)
		for i, c := range causes {
			n := seen[d][c]
			unit := "readings"
			if n == 1 {
				unit = "reading"
			}
			causes[i] = fmt.Sprintf("%s (%d %s)", c, n, unit)
		}
		if mhz, ok := minClock[d]; ok {
			causes = append(causes, fmt.Sprintf("clock down to %.0f MHz", mhz))
		}
		parts = append(parts, d+": "+strings.Join(causes, ", "))
	}
	return true, strings.Join(parts, "; ")
}

// Clock-event (throttle) reason bits, as NVML's
// nvmlDeviceGetCurrentClocksEventReasons and dcgm-exporter's
// DCGM_FI_DEV_CLOCKS_EVENT_REASONS / DCGM_FI_DEV_CLOCK_THROTTLE_REASONS
// report them. Only the reasons that slow the clocks are named; idle,
// application and display clock settings and sync boost are not
// throttling.
var clockEventCauses = []struct {
	bit  uint64
	name string
}{
	{0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"},
	{0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"},
	{0x80, "hw_power_brake_slowdown"},
	{0x200, "board_limit"},
	{0x400, "reliability"},
}

// ClockEventCauses names the throttling reasons set in a clock-event
// reasons bit mask (nil when none).
func ClockEventCauses(bits uint64) []string {
	var out []string
	for _, c := range clockEventCauses {
		if bits&c.bit != 0 {
			out = append(out, c.name)
		}
	}
	return out
}
