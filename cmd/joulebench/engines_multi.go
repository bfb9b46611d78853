package main

import (
	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/compare"
)

// multiEngineFlags are the run flags of the asiai protocol: the format of
// the side-by-side and winner tables, and a JSON object merged into every
// request body.
func multiEngineFlags(f *pflag.FlagSet) {
	f.String("extra-body", "", `JSON object merged into every request body, e.g. '{"think": false}' (recorded in run.json as the label extra_body)`)
	f.String("sweep", "", "run once per value of a profile parameter: NAME=v1,v2,... or NAME for the profile's own list (its parameter sweep_NAME), e.g. --sweep context_tokens or --sweep burst=1,4,8; one result row per value and engine")
	f.Float64("cooldown-idle-w", 0, "before the baseline, wait for the GPUs' summed power to come back within the profile's release tolerance of this idle level in W (a sweep passes it to each point against a running server)")
	_ = f.MarkHidden("cooldown-idle-w")
	f.Bool("steady-requests", false, "raise request_count to window × min_windows, the successful formal requests steady state needs, when it is below (a campaign search's steady_requests: true)")
}

// winnerTable prints the asiai winner table of the runs in dirs:
// the winner by median tok/s, each engine's change against it, TTFT and
// power deltas, memory in use and the gates each failed.
func (a *app) winnerTable(dirs []string, format string) error {
	engines := compare.AsiaiWinnerOfDirs(dirs) // a failed engine has no row: reported above
	if len(engines) == 0 {
		return nil
	}
	return compare.RenderAsiaiWinner(a.out, engines, format)
}
