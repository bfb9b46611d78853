package prometheus

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/redact"
	"github.com/joulebench/joulebench/telemetry"
)

// Name is the source's name (--telemetry prometheus).
const Name = "prometheus"

// The source's flags.
const (
	flagURL          = "prometheus-url"
	flagSelector     = "prometheus-selector"
	flagPowerMetric  = "prometheus-power-metric"
	flagEnergyMetric = "prometheus-energy-metric"
	flagMemMetric    = "prometheus-mem-metric"
)

// Descriptor is the Prometheus source: the GPUs' exporter as a Prometheus
// server scrapes it.
func Descriptor() telemetry.Descriptor {
	return telemetry.Descriptor{
		Name: Name,
		Flags: func(f *pflag.FlagSet) {
			f.String(flagURL, "", "Prometheus server that scrapes the GPUs' exporter, e.g. http://prometheus:9090 (--telemetry prometheus)")
			f.String(flagSelector, "", `label matchers of the engine's GPUs, e.g. 'Hostname="node1",gpu=~"0|1"' (--telemetry prometheus)`)
			f.String(flagPowerMetric, DefaultPowerMetric, "power gauge in W (--telemetry prometheus)")
			f.String(flagEnergyMetric, DefaultEnergyMetric, "cumulative energy counter in mJ, or - for none (--telemetry prometheus)")
			f.String(flagMemMetric, DefaultMemMetric, "GPU memory used in MiB, or - for none (--telemetry prometheus)")
		},
		Check: func(v telemetry.Values, sel telemetry.Selection) error {
			url := strings.TrimSpace(v.GetString(flagURL))
			if url != "" && !sel.Has(Name) {
				return fmt.Errorf("--prometheus-url is for --telemetry prometheus, not %s", sel)
			}
			if sel.Has(Name) && url == "" {
				return fmt.Errorf("--telemetry prometheus needs --prometheus-url http://HOST:9090 (and usually --prometheus-selector)")
			}
			return nil
		},
		Open: open,
	}
}

func open(ctx context.Context, v telemetry.Values, env telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*DefaultTimeout)
	defer cancel()
	po := Options{
		URL:          strings.TrimSpace(v.GetString(flagURL)),
		Selector:     strings.TrimSpace(v.GetString(flagSelector)),
		PowerMetric:  strings.TrimSpace(v.GetString(flagPowerMetric)),
		EnergyMetric: strings.TrimSpace(v.GetString(flagEnergyMetric)),
		MemMetric:    strings.TrimSpace(v.GetString(flagMemMetric)),
		Clock:        env.Clock,
		Logf:         env.Logf,
	}
	src, err := Open(ctx, po)
	if err != nil {
		return nil, record.TelemetryInfo{}, err
	}
	devs, _ := src.Devices(ctx)
	power := po.PowerMetric
	if power == "" {
		power = DefaultPowerMetric
	}
	return src, record.TelemetryInfo{Source: Name, Note: fmt.Sprintf("Prometheus %s, %s{%s} (samples at their scrape times; scrape interval seen recorded as events scrape_interval_*); %s",
		redact.URL(po.URL), power, po.Selector, telemetry.DeviceSummary(devs))}, nil
}
