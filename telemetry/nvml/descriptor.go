package nvml

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// Name is the source's name (--telemetry nvml).
const Name = "nvml"

// flagGPUs selects the GPUs.
const flagGPUs = "gpus"

// Descriptor is the NVML source: local NVIDIA GPUs, auto's choice when
// NVML is there (after the simulated engine's GPUs).
func Descriptor() telemetry.Descriptor {
	return telemetry.Descriptor{
		Name: Name,
		Flags: func(f *pflag.FlagSet) {
			f.String(flagGPUs, "", "NVML GPUs to measure: indexes or UUIDs, comma-separated (default: all)")
		},
		Check: check,
		Open: func(_ context.Context, v telemetry.Values, env telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
			src, err := open(v, env)
			if err != nil {
				return nil, record.TelemetryInfo{}, err
			}
			return src, record.TelemetryInfo{Source: Name, Note: "NVML: " + src.Inventory().Summary()}, nil
		},
		Probe: func(_ context.Context, v telemetry.Values, env telemetry.Env) (telemetry.Listing, error) {
			src, err := open(v, env)
			if err != nil {
				return telemetry.Listing{}, err
			}
			defer src.Close()
			return listing(src.Inventory()), nil
		},
		Auto: &telemetry.AutoRole{Rank: 2, How: "NVIDIA GPU found",
			// NVML works but the GPUs cannot be measured as asked.
			Fatal: func(err error) bool { return !errors.Is(err, ErrUnavailable) }},
	}
}

func check(v telemetry.Values, sel telemetry.Selection) error {
	gpus := strings.TrimSpace(v.GetString(flagGPUs))
	if _, err := ParseGPUs(gpus); err != nil {
		return err
	}
	if gpus != "" && !sel.Has(Name) && !sel.Has(telemetry.Auto) {
		return fmt.Errorf("--gpus selects NVML GPUs: it is for --telemetry nvml (or auto), not %s", sel)
	}
	return nil
}

func open(v telemetry.Values, env telemetry.Env) (*Source, error) {
	gpus, err := ParseGPUs(v.GetString(flagGPUs))
	if err != nil {
		return nil, err
	}
	return Open(Options{GPUs: gpus, Clock: env.Clock, Logf: env.Logf})
}

// listing is the devices command's view of inv.
func listing(inv Inventory) telemetry.Listing {
	detail := "driver " + orDash(inv.Driver)
	if inv.CUDA != "" {
		detail += ", CUDA " + inv.CUDA
	}
	if inv.NVML != "" {
		detail += ", NVML " + inv.NVML
	}
	l := telemetry.Listing{Source: Name, Detail: detail}
	for _, d := range inv.Devices {
		mem := "no"
		if d.Memory {
			mem = "yes"
			if d.MemTotalBytes > 0 {
				mem = fmt.Sprintf("%.0f GiB", float64(d.MemTotalBytes)/(1<<30))
			}
		}
		ce := d.ClockEvents
		l.Devices = append(l.Devices, telemetry.DeviceInfo{
			ID: d.ID, Domain: record.DomainGPU, Name: d.Name, UUID: d.UUID, Architecture: d.Architecture,
			Energy: d.Method, EnergyNote: d.EnergyNote, PowerField: d.PowerField,
			Memory: mem, ClockEvents: &ce,
		})
	}
	return l
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
