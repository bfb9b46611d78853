package compare

import (
	"cmp"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/internal/doc"
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
		if s, ok := res.Values[asiaiStability]; ok {
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

// AsiaiEngine is one engine of an asiai multi-engine run: the winner table
// names the winner by median tok/s (M1) among the ranked engines and shows
// each engine's change against it. An engine whose run failed a check of
// severity exclude (a quality gate) is shown but not ranked.
type AsiaiEngine struct {
	Engine string   `json:"engine"`
	Model  string   `json:"model"`
	RunID  string   `json:"run_id"`
	Ranked bool     `json:"ranked"`
	Winner bool     `json:"winner"`
	TokS   *float64 `json:"tok_per_sec"`
	// Ratio is tok/s / the winner's tok/s (×); DeltaPct is (Ratio − 1) × 100.
	Ratio    *float64 `json:"ratio"`
	DeltaPct *float64 `json:"delta_pct"`
	TTFTMs   *float64 `json:"ttft_ms"`
	// TTFTDeltaMs and PowerDeltaW are this engine's value minus the winner's.
	TTFTDeltaMs *float64 `json:"ttft_delta_ms"`
	PowerW      *float64 `json:"power_watts"`
	PowerDeltaW *float64 `json:"power_delta_w"`
	MemUsedGB   *float64 `json:"gpu_mem_used_gb"`
	Stability   string   `json:"stability"`
	// Gates lists the checks this engine's run failed, "name (severity)".
	Gates []string `json:"gates"`
}

// The results of the asiai profile the winner table reads.
const (
	asiaiTokS      = "tok_per_sec"
	asiaiTTFT      = "ttft_ms"
	asiaiPower     = "power_watts"
	asiaiMem       = "gpu_mem_used_gb"
	asiaiStability = "stability"
)

// AsiaiWinner builds the winner table of asiai runs, one per engine, in
// the order given.
func AsiaiWinner(runs []Run) []AsiaiEngine {
	out := make([]AsiaiEngine, 0, len(runs))
	for _, r := range runs {
		e := AsiaiEngine{Engine: orDash(r.Meta.Engine.Kind), Model: orDash(r.Meta.Engine.Model), RunID: r.Meta.RunID, Stability: "-", Gates: []string{}}
		get := func(name string) *float64 {
			if v, ok, _ := number(r.Results, name); ok {
				return &v
			}
			return nil
		}
		e.TokS, e.TTFTMs, e.PowerW, e.MemUsedGB = get(asiaiTokS), get(asiaiTTFT), get(asiaiPower), get(asiaiMem)
		if r.Results != nil {
			if s, ok := r.Results.Values[asiaiStability].Value.(string); ok {
				e.Stability = s
			}
			for _, name := range r.Results.Order {
				v := r.Results.Values[name]
				if v.Passed != nil && !*v.Passed {
					e.Gates = append(e.Gates, name+" ("+v.Severity+")")
				}
			}
		}
		e.Ranked = r.Results != nil && !r.Results.Excluded && e.TokS != nil
		out = append(out, e)
	}
	best := -1
	for i, e := range out {
		if e.Ranked && (best < 0 || *e.TokS > *out[best].TokS) {
			best = i
		}
	}
	if best < 0 {
		return out
	}
	w := out[best]
	out[best].Winner = true
	for i := range out {
		e := &out[i]
		if e.TokS != nil && *w.TokS > 0 {
			ratio := *e.TokS / *w.TokS
			d := (ratio - 1) * 100
			e.Ratio, e.DeltaPct = &ratio, &d
		}
		if e.TTFTMs != nil && w.TTFTMs != nil {
			d := *e.TTFTMs - *w.TTFTMs
			e.TTFTDeltaMs = &d
		}
		if e.PowerW != nil && w.PowerW != nil {
			d := *e.PowerW - *w.PowerW
			e.PowerDeltaW = &d
		}
	}
	return out
}

// RenderAsiaiWinner writes the winner table as a table, Markdown (to paste
// into an issue or pull request), CSV or JSON.
func RenderAsiaiWinner(w io.Writer, engines []AsiaiEngine, format string) error {
	return doc.Render(w, AsiaiWinnerDoc(engines), format)
}

// AsiaiWinnerDoc is the winner table as a document: its JSON the engines,
// its data the table.
func AsiaiWinnerDoc(engines []AsiaiEngine) *doc.Document {
	head := []string{"engine", "model", "rank", "median tok/s", "vs winner", "TTFT ms", "Δ TTFT ms", "W", "Δ W", "GPU mem GB", "stability", "gates failed"}
	rows := make([][]string, 0, len(engines))
	winner := ""
	for _, e := range engines {
		rank := "not ranked"
		switch {
		case e.Winner:
			rank, winner = "winner", e.Engine
		case e.Ranked:
			rank = "ranked"
		}
		vs := "-"
		if e.Ratio != nil && !e.Winner {
			vs = strconv.FormatFloat(*e.Ratio, 'f', 2, 64) + "× (" + signed(*e.DeltaPct, 1) + " %)"
		}
		rows = append(rows, []string{e.Engine, e.Model, rank, fmtF(e.TokS, 1), vs, fmtF(e.TTFTMs, 1), signedPtr(e.TTFTDeltaMs, 1),
			fmtF(e.PowerW, 1), signedPtr(e.PowerDeltaW, 1), fmtF(e.MemUsedGB, 2), e.Stability, orDash(strings.Join(e.Gates, ", "))})
	}
	b := newBuilder()
	b.d.JSON = engines
	b.d.Data = &doc.Table{Columns: doc.Cols(head...)}
	b.d.Data.Add(rows...)
	title := "Winner: none (no engine could be ranked)"
	if winner != "" {
		title = "Winner by median tok/s: " + winner
	}
	b.section(title)
	b.table(head, rows)
	return b.d
}

func signed(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if v >= 0 {
		s = "+" + s
	}
	return s
}

func signedPtr(v *float64, prec int) string {
	if v == nil {
		return "-"
	}
	return signed(*v, prec)
}
