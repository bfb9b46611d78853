package rapl

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// Name is the source's name (--telemetry rapl).
const Name = "rapl"

// flagRoot replaces the powercap directory.
const flagRoot = "rapl-root"

// Descriptor is the RAPL source: CPU package and DRAM energy counters,
// beside a GPU source.
func Descriptor() telemetry.Descriptor {
	return telemetry.Descriptor{
		Name: Name,
		Flags: func(f *pflag.FlagSet) {
			f.String(flagRoot, "", "powercap sysfs directory of --telemetry rapl (default "+DefaultRoot+"; a copy or fake tree for tests)")
		},
		Check: func(v telemetry.Values, sel telemetry.Selection) error {
			if rootOf(v) != "" && !sel.Has(Name) {
				return fmt.Errorf("--rapl-root is for --telemetry rapl, not %s", sel)
			}
			return nil
		},
		Open: func(ctx context.Context, v telemetry.Values, env telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
			root := rootOf(v)
			src, err := Open(Options{Root: root, Clock: env.Clock, Logf: env.Logf})
			if err != nil {
				return nil, record.TelemetryInfo{}, err
			}
			if root == "" {
				root = DefaultRoot
			}
			devs, _ := src.Devices(ctx)
			return src, record.TelemetryInfo{Source: Name, Note: fmt.Sprintf("RAPL energy counters (powercap sysfs %s): CPU package (domain cpu) and DRAM (domain dram); %s",
				root, telemetry.DeviceSummary(devs))}, nil
		},
	}
}

func rootOf(v telemetry.Values) string { return strings.TrimSpace(v.GetString(flagRoot)) }
