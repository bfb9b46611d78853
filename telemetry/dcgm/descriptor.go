package dcgm

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/redact"
	"github.com/joulebench/joulebench/telemetry"
)

// Name is the source's name (--telemetry dcgm).
const Name = "dcgm"

// flagURL names the endpoints.
const flagURL = "dcgm-url"

// Descriptor is the dcgm-exporter source: GPUs of one or more hosts,
// auto's choice when --dcgm-url is given.
func Descriptor() telemetry.Descriptor {
	return telemetry.Descriptor{
		Name: Name,
		Flags: func(f *pflag.FlagSet) {
			f.StringArray(flagURL, nil, "dcgm-exporter endpoint to scrape, e.g. http://node1:9400/metrics (repeatable; GPUs of several hosts)")
		},
		Check: func(v telemetry.Values, sel telemetry.Selection) error {
			urls := urlsOf(v)
			if len(urls) > 0 && !sel.Has(Name) && !sel.Has(telemetry.Auto) {
				return fmt.Errorf("--dcgm-url is for --telemetry dcgm (or auto), not %s", sel)
			}
			if sel.Has(Name) && len(urls) == 0 {
				return fmt.Errorf("--telemetry dcgm needs at least one --dcgm-url http://HOST:9400/metrics")
			}
			return nil
		},
		Open: open,
		Auto: &telemetry.AutoRole{
			Flag:     flagURL,
			Named:    func(v telemetry.Values) bool { return len(urlsOf(v)) > 0 },
			Hint:     "For GPUs on other hosts use --telemetry dcgm --dcgm-url http://HOST:9400/metrics",
			ProbeWhy: "dcgm: no --dcgm-url given (GPUs on other hosts: --dcgm-url http://HOST:9400/metrics)",
		},
	}
}

// urlsOf are the --dcgm-url values given, trimmed, without empty ones.
func urlsOf(v telemetry.Values) []string {
	var out []string
	for _, u := range v.GetStringSlice(flagURL) {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

func open(ctx context.Context, v telemetry.Values, env telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*DefaultTimeout)
	defer cancel()
	urls := urlsOf(v)
	src, err := Open(ctx, Options{URLs: urls, Clock: env.Clock, Logf: env.Logf})
	if err != nil {
		return nil, record.TelemetryInfo{}, err
	}
	devs, _ := src.Devices(ctx)
	shown := make([]string, len(urls))
	for i, u := range urls {
		shown[i] = redact.URL(u)
	}
	return src, record.TelemetryInfo{Source: Name, Note: fmt.Sprintf("dcgm-exporter endpoints %s; %s",
		strings.Join(shown, ", "), telemetry.DeviceSummary(devs))}, nil
}
