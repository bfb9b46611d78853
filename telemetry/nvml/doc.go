// Package nvml is the NVIDIA GPU telemetry source: energy counter, power,
// memory, SM clock and clock-event (throttle) reasons of local GPUs through
// NVML (github.com/NVIDIA/go-nvml).
//
// It is the only package of joulebench that imports go-nvml. go-nvml needs
// cgo, so the real implementation (nvml.go) builds only with cgo; without
// cgo (CGO_ENABLED=0, cross builds) stub_nocgo.go provides the same API and
// Open reports "built without cgo: NVML unavailable". Both wrap
// ErrUnavailable, so callers can fall back with errors.Is.
//
// go.mod holds go-nvml at v0.12.9-0 (the CUDA 12.9 nvml.h): v0.13's CUDA 13
// header marks 31 functions DEPRECATED(13.0), and gcc warns once for each
// when cgo compiles go-nvml, so every first build printed ~150 lines. cgo
// flags are per package, so joulebench cannot silence them from here. Every
// NVML function used here is in both headers; architectures newer than the
// header (Rubin) are named by the value the driver returns (archName).
//
// Per selected device the source records, at every Read:
//   - the cumulative energy counter (nvmlDeviceGetTotalEnergyConsumption,
//     mJ, Volta and newer), archived raw in power.csv energy_j (J). A device
//     without one has Method "power": its energy is integrated from the
//     power samples. A counter that goes backwards (driver reload, GPU
//     reset, wrap) is logged and listed by Anomalies; the archive keeps the
//     raw value and the analysis treats the decrease as a reset, so energy
//     is never negative.
//   - power: the NVML_FI_DEV_POWER_INSTANT field value where the device has
//     it, else nvmlDeviceGetPowerUsage (on Ampere and newer a 1 s average);
//     Device.PowerField says which.
//   - memory in use, the SM clock and the clock-event reasons; the reasons
//     that slow the clocks (power cap, thermal, power brake, ...) are
//     reported through telemetry.ThrottleReporter.
//
// The NVML library is an nvml.Interface given to New (tests pass go-nvml's
// simulated servers); Open uses the system library. If Init fails, nothing
// else of NVML is called and the error says why (no library, no driver, no
// permission) and what to use instead.
package nvml

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/telemetry"
)

// ErrUnavailable is wrapped by every error that means "NVML cannot be used
// on this machine or build" (no library, no driver, no permission, no GPU,
// built without cgo).
var ErrUnavailable = errors.New("NVML unavailable")

// Power fields as recorded in record.Device.PowerField.
const (
	PowerFieldInstant = "NVML_FI_DEV_POWER_INSTANT"
	PowerFieldUsage   = "nvmlDeviceGetPowerUsage"
)

// Energy methods as recorded in record.Device.Method.
const (
	MethodCounter = "counter"
	MethodPower   = "power"
)

// Options configure a source.
type Options struct {
	// GPUs selects devices by NVML index ("0") or UUID ("GPU-…"); empty
	// means every device.
	GPUs []string
	// Clock stamps anomalies (nil: telemetry.WallClock).
	Clock telemetry.Clock
	// Logf, when not nil, gets one line per notable event (counter reset).
	Logf func(string)
}

// DeviceInfo is what a device is and what it can measure.
type DeviceInfo struct {
	// Index is the NVML index; ID ("gpu<index>") the power.csv key.
	Index int    `json:"index"`
	ID    string `json:"id"`
	Name  string `json:"name"`
	UUID  string `json:"uuid"`
	// Architecture is "volta", "ampere", "hopper", ... ("unknown").
	Architecture string `json:"architecture"`
	// MemTotalBytes is the device memory, -1 when unknown.
	MemTotalBytes int64 `json:"mem_total_bytes"`
	// Method is "counter" (cumulative energy counter) or "power" (energy
	// integrated from power samples); EnergyNote says why there is no
	// counter.
	Method     string `json:"method"`
	EnergyNote string `json:"energy_note,omitempty"`
	// PowerField is PowerFieldInstant or PowerFieldUsage.
	PowerField string `json:"power_field"`
	// PowerLimitW is the enforced power limit in W (0: not readable); the
	// sampler and the power audit bound plausible readings by it.
	PowerLimitW float64 `json:"power_limit_w,omitempty"`
	// Memory, SMClock and ClockEvents say whether memory in use, the SM
	// clock and the clock-event reasons can be read.
	Memory      bool `json:"memory"`
	SMClock     bool `json:"sm_clock"`
	ClockEvents bool `json:"clock_events"`
}

// Inventory is the NVML view of the machine: versions and the selected
// devices.
type Inventory struct {
	Driver string `json:"driver,omitempty"`
	NVML   string `json:"nvml,omitempty"`
	// CUDA is the CUDA version the driver supports, "12.4".
	CUDA    string       `json:"cuda,omitempty"`
	Devices []DeviceInfo `json:"devices"`
}

// Summary is a one-line description for run.json's telemetry note:
// "driver 550.54.15 (CUDA 12.4); gpu0 NVIDIA H100 80GB HBM3 (hopper): counter, NVML_FI_DEV_POWER_INSTANT; ...".
func (inv Inventory) Summary() string {
	var b strings.Builder
	b.WriteString("driver " + orUnknown(inv.Driver))
	if inv.CUDA != "" {
		b.WriteString(" (CUDA " + inv.CUDA + ")")
	}
	for _, d := range inv.Devices {
		fmt.Fprintf(&b, "; %s %s (%s): %s, %s", d.ID, d.Name, d.Architecture, d.Method, d.PowerField)
	}
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// deviceID is the power.csv key of the device with NVML index i.
func deviceID(i int) string { return "gpu" + strconv.Itoa(i) }

// ParseGPUs splits a --gpus value ("0,1,3" or UUIDs) into selectors; ""
// and "all" mean every device (nil).
func ParseGPUs(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		return nil, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("--gpus %q: empty entry", s)
		}
		if n, err := strconv.Atoi(p); err == nil {
			if n < 0 {
				return nil, fmt.Errorf("--gpus %q: negative index %d", s, n)
			}
			p = strconv.Itoa(n)
		} else if !strings.HasPrefix(p, "GPU-") && !strings.HasPrefix(p, "MIG-") {
			return nil, fmt.Errorf("--gpus %q: %q is neither an index nor a UUID (GPU-…)", s, p)
		}
		if seen[p] {
			return nil, fmt.Errorf("--gpus %q: %s listed twice", s, p)
		}
		seen[p] = true
		out = append(out, p)
	}
	return out, nil
}

// alternatives is appended to "NVML unavailable" errors.
const alternatives = "use --telemetry none (energy metrics not applicable), or --telemetry dcgm --dcgm-url http://HOST:9400/metrics to measure GPUs through a dcgm-exporter"
