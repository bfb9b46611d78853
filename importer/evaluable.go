package importer

import (
	"strconv"

	"github.com/joulebench/joulebench/internal/exitcode"
)

// checkEvaluable refuses a recording whose archive analyze could not
// evaluate (exit 4 there): a window reaching beyond the samples every
// device has (no energy can be integrated outside them), and an output
// token count no system generates in the window (above maxTokenRate, the
// bound the loadgen's own token rates are read with). The count's cap,
// MaxImportTokens, is checked with the flags.
func (q Request) checkEvaluable(rec *Recording) error {
	if lo, hi, beyond := rec.BeyondSamples(); beyond {
		return exitcode.Invalidf("import %s: the window [%s, %s] (%s) reaches beyond the samples every device has [%s, %s] in %s: no energy can be worked out outside them (analyze would fail); give a window inside the recording",
			q.Format, fmtTime(rec.Begin), fmtTime(rec.End), rec.Window, fmtTime(lo), fmtTime(hi), q.File)
	}
	begin, end := rec.Begin, rec.End
	if begin == 0 && end == 0 {
		begin, end = rec.Covered()
	}
	if span := end - begin; rec.OutputTokens > 0 && span > 0 && float64(rec.OutputTokens)/span > maxTokenRate {
		return exitcode.Invalidf("import %s: %d output tokens (%s) over the %s s window is %.4g tokens/s, above %g tokens/s, more than any system generates: is it the count of a longer run, or a wrong --output-tokens?",
			q.Format, rec.OutputTokens, rec.TokensFrom, strconv.FormatFloat(span, 'f', -1, 64), float64(rec.OutputTokens)/span, float64(maxTokenRate))
	}
	return nil
}
