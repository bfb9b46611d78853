package replay

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// Name is the source's name (--telemetry replay).
const Name = "replay"

// The source's flags.
const (
	flagFile   = "replay"
	flagOffset = "replay-offset"
)

// Descriptor is the replay source: an archived power.csv played back on
// the run clock (labelled simulated), auto's choice when --replay is
// given.
func Descriptor() telemetry.Descriptor {
	return telemetry.Descriptor{
		Name: Name,
		Flags: func(f *pflag.FlagSet) {
			f.String(flagFile, "", "power.csv or run directory whose power data to replay (--telemetry replay)")
			f.Float64(flagOffset, 0, "start the replay this many seconds into the recording (--replay)")
		},
		Check:   check,
		Open:    open,
		Replays: true,
		Auto:    &telemetry.AutoRole{Flag: flagFile, Named: func(v telemetry.Values) bool { return fileOf(v) != "" }},
	}
}

func fileOf(v telemetry.Values) string { return strings.TrimSpace(v.GetString(flagFile)) }

func check(v telemetry.Values, sel telemetry.Selection) error {
	file := fileOf(v)
	if file != "" && !sel.Has(Name) && !sel.Has(telemetry.Auto) {
		return fmt.Errorf("--replay is for --telemetry replay (or auto), not %s", sel)
	}
	if v.GetFloat64(flagOffset) != 0 && file == "" {
		return fmt.Errorf("--replay-offset is for --replay FILE")
	}
	if sel.Has(Name) && file == "" {
		return fmt.Errorf("--telemetry replay needs --replay FILE (a power.csv or a run directory)")
	}
	return nil
}

func open(ctx context.Context, v telemetry.Values, env telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
	offset := v.GetFloat64(flagOffset)
	src, err := Open(fileOf(v), Options{Realtime: true, Clock: env.Clock, Logf: env.Logf, OffsetS: offset})
	if err != nil {
		return nil, record.TelemetryInfo{}, err
	}
	first, last := src.Span()
	devs, _ := src.Devices(ctx)
	return src, record.TelemetryInfo{Source: Name, Simulated: true, Note: fmt.Sprintf(
		"REPLAYED power data, not measured in this run: %s (%.1f s, from %g s into it, re-stamped on this run's clock; a run shorter than that replays only its first part); %s",
		src.File(), last-first, offset, telemetry.DeviceSummary(devs))}, nil
}
