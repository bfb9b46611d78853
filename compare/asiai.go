package compare

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/measure"
)

// AsiaiRow is one engine (on one model) of the asiai comparison: M1 median
// tok/s (the headline), mean ± pooled std (M8), stability, M6 power and M7
// tok/s/W.
//
// One run: its own values. Several runs of the same engine and model: the
// median of their median tok/s, the mean of their means, the pooled std
// sqrt(mean of the runs' variances std²), the mean power, tok/s/W = median
// tok/s / mean power, and the stability class recomputed from CV = std /
// mean × 100 with the profile's thresholds. TokSMin–TokSMax is the range of
// the runs' median tok/s.
type AsiaiRow struct {
	Model     string   `json:"model"`
	Engine    string   `json:"engine"`
	Runs      int      `json:"runs"`
	RunIDs    []string `json:"run_ids"`
	Simulated bool     `json:"simulated"`
	TokS      *float64 `json:"tok_per_sec"`
	// TokSMin and TokSMax are the range of the runs' median tok/s.
	TokSMin   *float64 `json:"tok_per_sec_min"`
	TokSMax   *float64 `json:"tok_per_sec_max"`
	TokSMean  *float64 `json:"tok_per_sec_mean"`
	TokSStd   *float64 `json:"std_dev_tok_s"`
	CVPct     *float64 `json:"cv_pct"`
	Stability string   `json:"stability"`
	PowerW    *float64 `json:"power_watts"`
	TokSPerW  *float64 `json:"tok_per_sec_per_watt"`
	// Flagged counts the runs of this engine left out (see the flagged list).
	Flagged int      `json:"flagged"`
	Notes   []string `json:"notes,omitempty"`
}

type asiaiRun struct {
	run   Run
	flags []Flag
}

func (p *Profile) asiaiRows(runs []asiaiRun) []AsiaiRow {
	out := []AsiaiRow{}
	var keys []string
	by := map[string][]asiaiRun{}
	for _, r := range runs {
		k := orDash(r.run.Meta.Engine.Model) + "\x00" + orDash(r.run.Meta.Engine.Kind)
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], r)
	}
	for _, k := range keys {
		out = append(out, p.asiaiRow(by[k]))
	}
	slices.SortStableFunc(out, func(a, b AsiaiRow) int {
		return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Engine, b.Engine))
	})
	return out
}

func (p *Profile) asiaiRow(runs []asiaiRun) AsiaiRow {
	m := p.Asiai.Metrics
	first := runs[0].run.Meta
	row := AsiaiRow{Model: orDash(first.Engine.Model), Engine: orDash(first.Engine.Kind), RunIDs: []string{}}
	var tps, means, vars, powers, perW []float64
	var stability string
	var notes []string
	for _, r := range runs {
		if r.run.Meta.Simulated {
			row.Simulated = true
		}
		if len(r.flags) > 0 {
			row.Flagged++
			continue
		}
		row.Runs++
		row.RunIDs = append(row.RunIDs, r.run.Meta.RunID)
		res := r.run.Results
		add := func(dst *[]float64, name string) {
			if v, ok, note := number(res, name); ok {
				*dst = append(*dst, v)
			} else {
				notes = append(notes, r.run.Meta.RunID+": "+note)
			}
		}
		add(&tps, m.TokS)
		add(&means, m.TokSMean)
		add(&powers, m.PowerW)
		add(&perW, m.TokSPerW)
		if v, ok, note := number(res, m.TokSStd); ok {
			vars = append(vars, v*v)
		} else {
			notes = append(notes, r.run.Meta.RunID+": "+note)
		}
		if s, ok := res.Values[m.Stability]; ok {
			if str, isStr := s.Value.(string); isStr {
				stability = str
			}
		}
	}
	if row.Runs == 0 {
		row.Notes = []string{"every run of this engine is flagged"}
		row.Stability = "-"
		return row
	}
	row.Notes = notes
	single := row.Runs == 1
	if len(tps) > 0 {
		v, _ := measure.Median(tps)
		lo, hi := slices.Min(tps), slices.Max(tps)
		row.TokS, row.TokSMin, row.TokSMax = &v, &lo, &hi
	}
	if len(means) > 0 {
		v, _ := measure.Mean(means)
		row.TokSMean = &v
	}
	if len(vars) > 0 {
		v, _ := measure.Mean(vars)
		s := math.Sqrt(v)
		row.TokSStd = &s
	}
	if len(powers) > 0 {
		v, _ := measure.Mean(powers)
		row.PowerW = &v
	}
	switch {
	case single && len(perW) == 1:
		row.TokSPerW = &perW[0]
	case row.TokS != nil && row.PowerW != nil && *row.PowerW > 0:
		v := *row.TokS / *row.PowerW
		row.TokSPerW = &v
	}
	if row.TokSStd != nil && row.TokSMean != nil && *row.TokSMean > 0 {
		cv := *row.TokSStd / *row.TokSMean * 100
		row.CVPct = &cv
	}
	switch {
	case single && stability != "":
		row.Stability = stability
	case row.CVPct != nil:
		row.Stability = p.stabilityOf(*row.CVPct)
	default:
		row.Stability = "-"
	}
	if len(row.Notes) > 0 {
		slices.Sort(row.Notes)
		row.Notes = slices.Compact(row.Notes)
	}
	return row
}

// stabilityOf is the asiai stability class of a CV in percent.
func (p *Profile) stabilityOf(cvPct float64) string {
	switch {
	case cvPct < p.Asiai.StableCVPct:
		return "stable"
	case cvPct < p.Asiai.VariableCVPct:
		return "variable"
	}
	return "unstable"
}

// noteList joins notes for a table cell.
func noteList(notes []string) string { return strings.Join(notes, "; ") }
