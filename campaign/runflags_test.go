package campaign

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/engines/all"
)

// runFlagSet is the part of the run command's flag set CheckRunFlags
// reads.
func runFlagSet() *pflag.FlagSet {
	f := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.StringArray("telemetry", nil, "")
	f.StringSlice("engine", nil, "")
	f.String("dataset-format", "", "")
	f.String("format", "table", "")
	f.String("out", "", "")
	return f
}

func TestCheckRunFlags(t *testing.T) {
	telemetryNames := []string{"auto", "nvml", "sim", "rapl"}
	for _, c := range []struct {
		args   []string
		errMsg string // "": valid
	}{
		{nil, ""},
		{[]string{"--telemetry", "sim", "--telemetry", "rapl"}, ""},
		{[]string{"--telemetry", "sim,rapl"}, ""},
		{[]string{"--telemetry", "sim rapl"}, ""},
		{[]string{"--telemetry", "sim,bogus"}, `--telemetry "bogus": valid are auto, nvml, sim, rapl`},
		{[]string{"--engine", "sim", "--engine", "vllm"}, ""},
		{[]string{"--engine", "sim,nosuch"}, `--engine "nosuch": valid are `},
		{[]string{"--dataset-format", "jsonl"}, ""},
		{[]string{"--dataset-format", "yaml"}, `--dataset-format "yaml": valid are sharegpt, jsonl`},
		{[]string{"--format", "markdown"}, ""},
		{[]string{"--format", "html"}, `unknown format "html" (valid: table, json, csv, markdown)`},
		{[]string{"--out", "x", "benchmark-1.5"}, `"benchmark-1.5" is not a flag: a campaign's args are run flags`},
	} {
		f := runFlagSet()
		if err := f.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := CheckRunFlags(f, all.Registry(), telemetryNames)
		switch {
		case c.errMsg == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.errMsg != "" && (err == nil || !strings.Contains(err.Error(), c.errMsg)):
			t.Errorf("%q: err %v, want %q", c.args, err, c.errMsg)
		}
	}
}
