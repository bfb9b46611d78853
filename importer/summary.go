package importer

import "fmt"

// Summary is what an import says when done: the samples imported from q's
// file into q's directory and the failed readings left out; without output
// tokens, what the run then lacks.
func (q Request) Summary(rec *Recording) string {
	s := fmt.Sprintf("imported %s (%d samples, %d failed readings left out as gaps) into %s\n",
		q.File, len(rec.Samples), rec.FailedSamples, q.Out)
	if q.OutputTokens == 0 {
		s += "no --output-tokens: energy and power only; J/token is not applicable, and analyze's formal_requests_succeeded fails (no request)\n"
	}
	return s
}

// BeyondWarning is the warning for a window that reaches beyond the
// samples every device has (the power audit then excludes the run); ""
// when it does not.
func (rec *Recording) BeyondWarning() string {
	lo, hi, beyond := rec.BeyondSamples()
	if !beyond {
		return ""
	}
	return fmt.Sprintf("the window [%g, %g] reaches beyond the samples every device has [%g, %g]: the power audit (power_devices_present) will exclude the run",
		rec.Begin, rec.End, lo, hi)
}
