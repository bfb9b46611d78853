package all_test

import (
	"testing"

	"github.com/joulebench/joulebench/telemetry/all"
)

// Each built-in refuses its flags given for another source and asks for
// the flags it needs, before anything opens; the messages are those the
// command line has always given.
func TestBuiltinChecks(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "": accepted
	}{
		{nil, ""},
		{[]string{"--telemetry", "nvml", "--gpus", "0,GPU-x"}, ""},
		{[]string{"--gpus", "0,zero"}, `--gpus "0,zero": "zero" is neither an index nor a UUID (GPU-…)`},
		{[]string{"--telemetry", "dcgm", "--dcgm-url", "http://h:9400/metrics", "--gpus", "0"}, "--gpus selects NVML GPUs: it is for --telemetry nvml (or auto), not dcgm"},
		{[]string{"--telemetry", "nvml", "--dcgm-url", "http://h"}, "--dcgm-url is for --telemetry dcgm (or auto), not nvml"},
		{[]string{"--telemetry", "nvml", "--telemetry", "rapl", "--dcgm-url", "http://h"}, "--dcgm-url is for --telemetry dcgm (or auto), not nvml + rapl"},
		{[]string{"--telemetry", "dcgm", "--dcgm-url", " "}, "--telemetry dcgm needs at least one --dcgm-url http://HOST:9400/metrics"},
		{[]string{"--telemetry", "none", "--replay", "x"}, "--replay is for --telemetry replay (or auto), not none"},
		{[]string{"--telemetry", "none", "--replay-offset", "2"}, "--replay-offset is for --replay FILE"},
		{[]string{"--telemetry", "replay"}, "--telemetry replay needs --replay FILE (a power.csv or a run directory)"},
		{[]string{"--dcgm-url", "http://h", "--replay", "x"}, "--dcgm-url and --replay name two different power sources: choose one with --telemetry"},
		{[]string{"--telemetry", "none", "--prometheus-url", "http://p"}, "--prometheus-url is for --telemetry prometheus, not none"},
		{[]string{"--telemetry", "prometheus"}, "--telemetry prometheus needs --prometheus-url http://HOST:9090 (and usually --prometheus-selector)"},
		{[]string{"--telemetry", "sim", "--telemetry", "ipmi", "--rapl-root", "x"}, "--rapl-root is for --telemetry rapl, not sim + ipmi"},
		{[]string{"--telemetry", "none", "--redfish-chassis", "1U"}, "--redfish-* flags are for --telemetry redfish, not none"},
		{[]string{"--telemetry", "redfish"}, "--telemetry redfish needs --redfish-url https://BMC (and usually --redfish-user, the password in JOULEBENCH_REDFISH_PASSWORD)"},
		{[]string{"--telemetry", "redfish", "--redfish-url", "https://b", "--redfish-session"}, "--redfish-session needs --redfish-user"},
		{[]string{"--telemetry", "rapl", "--ipmitool", "/bin/ipmitool"}, "--ipmitool and --ipmi-arg are for --telemetry ipmi, not rapl"},
		{[]string{"--telemetry", "ipmi", "--telemetry", "redfish", "--redfish-url", "https://b", "--ipmi-arg=-E"}, ""},
	} {
		r := all.Registry()
		v, given := parse(t, r, tc.args...)
		_, err := r.Check(given, v)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%q: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}
