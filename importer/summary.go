package importer

import (
	"fmt"
	"strings"
)

// Summary is what an import says when done: the samples imported from q's
// file into q's directory and the failed readings left out; the output
// tokens and where they came from, or what the run lacks without them;
// the model, or that none is known; a ranging run said so.
func (q Request) Summary(rec *Recording) string {
	var b strings.Builder
	fmt.Fprintf(&b, "imported %s (%d samples, %d failed readings left out as gaps) into %s\n",
		q.File, len(rec.Samples), rec.FailedSamples, q.Out)
	switch {
	case rec.OutputTokens == 0:
		b.WriteString("no --output-tokens: energy and power only; J/token, throughput and the request checks are not applicable (n/a, exit 0)\n")
	case rec.TokensFrom != "" && rec.TokensFrom != "given with --output-tokens":
		fmt.Fprintf(&b, "output tokens: %d, %s; --output-tokens overrides\n", rec.OutputTokens, rec.TokensFrom)
	}
	if rec.Format == "ptdaemon" && rec.Model == "" {
		b.WriteString("model: not named by the logs or their directory (results/SYSTEM/MODEL/SCENARIO/performance/run_1/); give --model\n")
	}
	if rec.Validity != "" && !strings.EqualFold(rec.Validity, "VALID") {
		fmt.Fprintf(&b, "MLPerf result_validity %s (%s): the loadgen judged this run invalid (a constraint of its scenario was not met); imported as it is, marked in run.json's import record (validity) and in every analyze and report\n",
			rec.Validity, rec.ValidityWhy)
	}
	if rec.Ranging {
		b.WriteString("RANGING run (the power analyzer's range-finding pass, not MLPerf's measured run_1): marked engine kind " + EngineKindRanging + ", label mlperf_run=ranging\n")
	}
	return b.String()
}

// BeyondWarning is the warning for a window that reaches beyond the
// samples every device has (the power audit then excludes the run); ""
// when it does not.
func (rec *Recording) BeyondWarning() string {
	lo, hi, beyond := rec.BeyondSamples()
	if !beyond {
		return ""
	}
	return fmt.Sprintf("the window [%s, %s] reaches beyond the samples every device has [%s, %s]: the power audit (power_devices_present) will exclude the run",
		fmtTime(rec.Begin), fmtTime(rec.End), fmtTime(lo), fmtTime(hi))
}
