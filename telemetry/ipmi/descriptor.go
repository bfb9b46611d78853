package ipmi

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// Name is the source's name (--telemetry ipmi).
const Name = "ipmi"

// The source's flags.
const (
	flagBinary = "ipmitool"
	flagArg    = "ipmi-arg"
)

// Descriptor is the IPMI source: whole-node power from ipmitool's DCMI
// power reading.
func Descriptor() telemetry.Descriptor {
	return telemetry.Descriptor{
		Name: Name,
		Flags: func(f *pflag.FlagSet) {
			f.String(flagBinary, "", "ipmitool binary of --telemetry ipmi (default: ipmitool on PATH)")
			f.StringArray(flagArg, nil, "ipmitool argument before 'dcmi power reading' (repeatable), e.g. --ipmi-arg=-I --ipmi-arg=lanplus --ipmi-arg=-H --ipmi-arg=bmc1 --ipmi-arg=-U --ipmi-arg=admin --ipmi-arg=-E (password in IPMI_PASSWORD)")
		},
		Check: func(v telemetry.Values, sel telemetry.Selection) error {
			if o := optionsOf(v); (o.Binary != "" || len(o.Args) > 0) && !sel.Has(Name) {
				return fmt.Errorf("--ipmitool and --ipmi-arg are for --telemetry ipmi, not %s", sel)
			}
			return nil
		},
		Open: open,
	}
}

func optionsOf(v telemetry.Values) Options {
	return Options{Binary: strings.TrimSpace(v.GetString(flagBinary)), Args: v.GetStringSlice(flagArg)}
}

func open(ctx context.Context, v telemetry.Values, env telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*DefaultTimeout)
	defer cancel()
	o := optionsOf(v)
	src, err := Open(ctx, o)
	if err != nil {
		return nil, record.TelemetryInfo{}, err
	}
	devs, _ := src.Devices(ctx)
	bin := o.Binary
	if bin == "" {
		bin = DefaultBinary
	}
	return telemetry.NewTolerant(src, telemetry.NodeReadFailures, env.Clock), record.TelemetryInfo{Source: Name, Note: fmt.Sprintf("IPMI DCMI (%s dcmi power reading, run per sample): whole-node power (domain node); %s; %s",
		bin, telemetry.DeviceSummary(devs), telemetry.TolerantNote())}, nil
}
