package compare

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/internal/doc"
)

// Render writes the comparison in format (report.FormatTable, ...).
func Render(w io.Writer, rep *Report, format string) error {
	return doc.Render(w, Doc(rep), format)
}

// Doc is the comparison as a document: its JSON the report, its data one
// value per row (section, scenario, ..., name, value, unit, note).
func Doc(rep *Report) *doc.Document {
	b := newBuilder()
	b.d.JSON = rep
	b.d.Data = csvData(rep)
	renderTables(b, rep)
	return b.d
}

// builder builds a comparison's document: sections under headings, lines
// of text, tables.
type builder struct{ d *doc.Document }

func newBuilder() *builder { return &builder{d: &doc.Document{Loose: true, JSONKeepHTML: true}} }

// section starts a section under title.
func (b *builder) section(title string) { b.d.AddSection(title) }

// line adds a sentence under a table or in place of one.
func (b *builder) line(text string) { b.d.Add(&doc.Text{Text: text}) }

func (b *builder) table(head []string, rows [][]string) {
	t := &doc.Table{Columns: doc.Cols(head...), MaxWidth: 60}
	t.Add(rows...)
	b.d.Add(t)
}

// Number formats.
func fmtF(v *float64, prec int) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}

func fmtJ(v *float64) string { return fmtF(v, 4) }

func fmtCount(v *float64) string { return fmtF(v, 0) }

// fmtParams writes a parameter count with a suffix: 8B, 7.6B, 1.5T, 560M.
func fmtParams(v *float64) string {
	if v == nil {
		return "-"
	}
	x := *v
	switch {
	case x >= 1e12:
		return strconv.FormatFloat(x/1e12, 'g', 4, 64) + "T"
	case x >= 1e9:
		return strconv.FormatFloat(x/1e9, 'g', 4, 64) + "B"
	case x >= 1e6:
		return strconv.FormatFloat(x/1e6, 'g', 4, 64) + "M"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// raw formats a number for CSV: shortest exact form.
func raw(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

func flagNames(flags []Flag) string {
	if len(flags) == 0 {
		return "-"
	}
	names := make([]string, len(flags))
	for i, f := range flags {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

func renderTables(b *builder, rep *Report) {
	if rep.Simulated {
		b.d.Add(&doc.Note{Text: simulatedNote(rep.SimHardware)})
	}
	included, flagged := 0, 0
	for _, r := range rep.Runs {
		if r.Included {
			included++
		}
		if len(r.Flags) > 0 {
			flagged++
		}
	}
	summary := fmt.Sprintf("Comparison (%s): %d benchmark run(s), %d in the statistics, %d flagged (%d out entirely); %d asiai engine row(s).",
		rep.CompareProfile, len(rep.Runs), included, flagged, len(rep.Runs)-included, len(rep.Asiai))
	if len(rep.Runs) > 0 && rep.Decision != nil {
		decisionSection(b, rep)
		b.section("")
		b.d.Add(&doc.Blank{})
	}
	b.d.Add(&doc.Title{Text: summary})

	if len(rep.Runs) > 0 {
		runsTable(b, rep)

		rows := [][]string{}
		b.section(fmt.Sprintf("Engine pairs (compared only when %s are equal and |T1 - T2| / max(T1, T2) <= %s on formal output tokens)",
			orDash(strings.Join(rep.PairSame, ", ")), pct(rep.PairTolerance)))
		if len(rep.Pairs) == 0 {
			b.line("No engine pair: no runs of both engines of a pair on the same model and scenario.")
		} else {
			rows = rows[:0]
			for _, p := range rep.Pairs {
				comparable := "yes"
				steady, full := fmtJ(p.A.SteadyJPerToken)+" / "+fmtJ(p.B.SteadyJPerToken), fmtJ(p.A.FullJPerToken)+" / "+fmtJ(p.B.FullJPerToken)
				if !p.Comparable {
					comparable = "NOT COMPARABLE: " + p.Reason
					steady, full = "-", "-"
				} else if fl := append(append([]Flag(nil), p.A.Flags...), p.B.Flags...); len(fl) > 0 {
					comparable = "yes (flagged: " + flagNames(fl) + ")"
				}
				rows = append(rows, []string{p.Scenario, p.Model, p.A.Engine + " / " + p.B.Engine, p.A.RunID + " / " + p.B.RunID,
					fmtCount(p.A.OutputTokens) + " / " + fmtCount(p.B.OutputTokens), pctPtr(p.TokenDiff), comparable, steady, full})
			}
			b.table([]string{"scenario", "model", "engines", "runs", "output tokens", "token difference",
				"comparable", "steady J/token", "full-lifecycle J/token"}, rows)
		}

		b.section("Per scenario and size group (values in the statistics; a configuration run several times counts once, with its median)")
		groupTable(b, rep.Groups)

		b.section("Model orders within each size group (rank 1 = lowest J/token; ties share the average rank; n, median, min–max and spread of repeated runs)")
		rows = rows[:0]
		for _, s := range rep.Groups {
			for _, c := range s.Configs {
				row := append([]string{s.Scenario, s.SizeGroup, c.Model, c.Engine}, settingCells(c.Configuration, c.Load)...)
				rows = append(rows, append(row, strconv.Itoa(c.Runs),
					fmtSpread(c.Steady), fmtRankPtr(c.SteadyRank), fmtSpread(c.Full), fmtRankPtr(c.FullRank)))
			}
		}
		head := append([]string{"scenario", "size group", "model", "engine"}, settingHeads(rep)...)
		if len(rows) == 0 {
			b.line("No run in the statistics.")
		} else {
			b.table(append(head, "runs",
				"steady J/token: n, median (min–max, spread)", "steady rank", "full-lifecycle J/token: n, median (min–max, spread)", "full rank"), rows)
		}

		b.section("Cross-group view, per scenario over all size groups (not a comparison the method makes: models are compared within a size group)")
		groupTable(b, rep.CrossGroup)
		frontierTables(b, rep)
		renderGPUSettings(b, rep)
	}

	notApplicableTable(b, rep.NotApplicable)

	if len(rep.Asiai) > 0 {
		b.section("asiai, per engine (median tok/s is the headline)")
		rows := make([][]string, 0, len(rep.Asiai))
		for _, a := range rep.Asiai {
			rows = append(rows, []string{a.Model, a.Engine, strconv.Itoa(a.Runs), fmtF(a.TokS, 1), fmtF(a.TokSMin, 1) + "–" + fmtF(a.TokSMax, 1),
				fmtF(a.TokSMean, 1) + " ± " + fmtF(a.TokSStd, 2), fmtF(a.CVPct, 1), a.Stability,
				fmtF(a.PowerW, 1), fmtF(a.TokSPerW, 3), orDash(noteList(flaggedNote(a)))})
		}
		b.table([]string{"model", "engine", "runs", "median tok/s", "min–max tok/s", "mean ± pooled std tok/s", "CV %",
			"stability", "W", "tok/s/W", "note"}, rows)
	}

	b.section("Flagged runs (shown, with the values each flag leaves out of the statistics)")
	if len(rep.Flagged) == 0 {
		b.line("None.")
		return
	}
	rows := [][]string{}
	for _, f := range rep.Flagged {
		for _, fl := range f.Flags {
			rows = append(rows, []string{f.RunID, f.Scenario, f.Model, f.Engine, fl.Name, removesText(fl.Removes), orDash(fl.Detail)})
		}
	}
	b.table([]string{"run", "scenario", "model", "engine", "flag", "leaves out", "why"}, rows)
}

func flaggedNote(a AsiaiRow) []string {
	notes := append([]string(nil), a.Notes...)
	if a.Flagged > 0 {
		notes = append(notes, fmt.Sprintf("%d flagged run(s) left out", a.Flagged))
	}
	return notes
}

func pctPtr(v *float64) string {
	if v == nil {
		return "-"
	}
	return pct(*v)
}

func fmtRank(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }

func fmtRankPtr(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmtRank(*r)
}

func fmtE(v *float64) string { return fmtF(v, 1) }

// fmtSpread writes "n=3: 0.2400 (0.2300–0.2600, 12.5 %)", or the value
// alone for one run.
func fmtSpread(s *Spread) string {
	if s == nil {
		return "-"
	}
	if s.N == 1 {
		return "n=1: " + fmtJ(&s.Median)
	}
	return fmt.Sprintf("n=%d: %s (%s–%s, %s)", s.N, fmtJ(&s.Median), fmtJ(&s.Min), fmtJ(&s.Max), pctShortPtr(s.SpreadPct))
}

func pctShortPtr(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 1, 64) + " %"
}

// runsTable writes the table of runs.
func runsTable(b *builder, rep *Report) {
	b.section("Runs by scenario, size group, model and engine")
	rows := make([][]string, 0, len(rep.Runs))
	for _, r := range rep.Runs {
		val := func(v *float64, name string, f func(*float64) string) string {
			if v != nil && !r.Uses(name) {
				return "[" + f(v) + "]"
			}
			return f(v)
		}
		row := append([]string{r.Scenario, r.SizeGroup, fmtParams(r.Params), r.Model, r.Engine}, settingCells(r.Configuration, r.Load)...)
		rows = append(rows, append(row, r.RunID,
			val(r.SteadyJPerToken, ValueSteady, fmtJ), val(r.FullJPerToken, ValueFull, fmtJ),
			val(r.StartupEnergyJ, ValueStartup, fmtE), val(r.ReleaseEnergyJ, ValueRelease, fmtE),
			fmtCount(r.OutputTokens), flagNames(r.Flags)))
	}
	head := append([]string{"scenario", "size group", "params", "model", "engine"}, settingHeads(rep)...)
	b.table(append(head, "run",
		"steady J/token", "full-lifecycle J/token", "startup J", "release J", "output tokens", "flags"), rows)
	if len(rep.ConfigurationColumns)+len(rep.LoadColumns) > 0 {
		b.line("Runs of one model and engine that differ in " + strings.Join(settingHeads(rep), ", ") +
			" are different configurations (load: load points of one configuration), never repetitions.")
	}
	b.line("[x]: a value its flag leaves out of the statistics (see the flagged runs).")
}

// settingHeads are the headings of the configuration and load columns.
func settingHeads(rep *Report) []string {
	var out []string
	for _, f := range rep.ConfigurationColumns {
		out = append(out, columnName(f))
	}
	for _, f := range rep.LoadColumns {
		out = append(out, "load: "+columnName(f))
	}
	return out
}

func settingCells(cfg, load []FieldValue) []string {
	out := make([]string, 0, len(cfg)+len(load))
	for _, v := range append(slices.Clone(cfg), load...) {
		out = append(out, v.Value)
	}
	return out
}

// notApplicableTable lists the combinations that do not apply: n/a, not
// failures.
func notApplicableTable(b *builder, na []NotApplicable) {
	if len(na) == 0 {
		return
	}
	b.section("Not applicable (not measured because they do not apply; neither failures nor in the statistics)")
	rows := make([][]string, 0, len(na))
	for _, n := range na {
		var set []string
		for _, v := range n.Setting {
			set = append(set, columnName(v.Field)+"="+v.Value)
		}
		rows = append(rows, []string{n.Scenario, n.Model, n.Engine, orDash(strings.Join(set, ", ")), orDash(n.RunID), "n/a", n.Reason})
	}
	b.table([]string{"scenario", "model", "engine", "setting", "run", "steady J/token", "why"}, rows)
}

// removesText says what a flag leaves out, in words.
func removesText(vs []string) string {
	if slices.Contains(vs, ValueAll) {
		return "the whole run"
	}
	if slices.Contains(vs, ValueNone) {
		return "nothing (shown only)"
	}
	names := map[string]string{ValueSteady: "steady J/token", ValueFull: "full-lifecycle J/token", ValueStartup: "startup J", ValueRelease: "release J"}
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, names[v])
	}
	return orDash(strings.Join(out, ", "))
}

func groupTable(b *builder, groups []GroupStats) {
	rows := make([][]string, 0, len(groups))
	for _, s := range groups {
		rows = append(rows, []string{s.Scenario, s.SizeGroup, strconv.Itoa(s.Included) + " of " + strconv.Itoa(s.Runs),
			fmtJ(s.MedianSteady), fmtJ(s.MedianFull), fmtF(s.Ratio, 3), fmtF(s.Spearman, 3), fmtE(s.MedianStartup), fmtE(s.MedianRelease), orDash(noteList(s.Notes))})
	}
	b.table([]string{"scenario", "size group", "runs", "median steady J/token", "median full-lifecycle J/token",
		"full / steady", "Spearman rho", "median startup J", "median release J", "note"}, rows)
}

// csvData is the comparison as one tidy table: one value per row.
func csvData(rep *Report) *doc.Table {
	t := &doc.Table{Columns: doc.Cols("section", "scenario", "size_group", "model", "engine", "run_id", "name", "value", "unit", "note", "simulated")}
	sim := strconv.FormatBool(rep.Simulated)
	put := func(sec, scen, group, model, engine, run, name, value, unit, note string) {
		t.Add([]string{sec, scen, group, model, engine, run, name, value, unit, note, sim})
	}
	m := rep.Metrics
	for _, r := range rep.Runs {
		put("run", r.Scenario, r.SizeGroup, r.Model, r.Engine, r.RunID, "model_params", raw(r.Params), "parameters", r.ParamsNote)
		for _, v := range []struct {
			name, value string
			x           *float64
			unit        string
		}{{m.SteadyJPerToken, ValueSteady, r.SteadyJPerToken, "J/token"}, {m.FullJPerToken, ValueFull, r.FullJPerToken, "J/token"},
			{m.StartupEnergyJ, ValueStartup, r.StartupEnergyJ, "J"}, {m.ReleaseEnergyJ, ValueRelease, r.ReleaseEnergyJ, "J"}} {
			note := ""
			if v.x != nil && !r.Uses(v.value) {
				note = "left out of the statistics"
			}
			put("run", r.Scenario, r.SizeGroup, r.Model, r.Engine, r.RunID, v.name, raw(v.x), v.unit, note)
		}
		put("run", r.Scenario, r.SizeGroup, r.Model, r.Engine, r.RunID, m.OutputTokens, raw(r.OutputTokens), "tokens", "")
		put("run", r.Scenario, r.SizeGroup, r.Model, r.Engine, r.RunID, "included", strconv.FormatBool(r.Included), "", "")
		put("run", r.Scenario, r.SizeGroup, r.Model, r.Engine, r.RunID, "gpu_setting", r.GPUSetting.Text, "", "label "+r.Label)
		for _, v := range r.Configuration {
			put("run", r.Scenario, r.SizeGroup, r.Model, r.Engine, r.RunID, "configuration:"+v.Field, v.Value, "", "")
		}
		for _, v := range r.Load {
			put("run", r.Scenario, r.SizeGroup, r.Model, r.Engine, r.RunID, "load:"+v.Field, v.Value, "", "")
		}
		for _, f := range r.Flags {
			put("run", r.Scenario, r.SizeGroup, r.Model, r.Engine, r.RunID, "flag", f.Name, "", strings.TrimSpace(f.Detail+" (leaves out: "+removesText(f.Removes)+")"))
		}
	}
	for _, n := range rep.NotApplicable {
		var set []string
		for _, v := range n.Setting {
			set = append(set, v.Field+"="+v.Value)
		}
		put("not_applicable", n.Scenario, "", n.Model, n.Engine, n.RunID, "setting", strings.Join(set, " "), "", n.Reason)
	}
	for _, p := range rep.Pairs {
		engines, runs := p.A.Engine+"/"+p.B.Engine, p.A.RunID+"/"+p.B.RunID
		put("pair", p.Scenario, "", p.Model, engines, runs, "token_diff", raw(p.TokenDiff), "fraction", "")
		for _, d := range p.Differs {
			put("pair", p.Scenario, "", p.Model, engines, runs, "differs", d.Field, "", d.A+" vs "+d.B)
		}
		put("pair", p.Scenario, "", p.Model, engines, runs, "comparable", strconv.FormatBool(p.Comparable), "", p.Reason)
	}
	for _, sec := range []struct {
		name   string
		groups []GroupStats
	}{{"group", rep.Groups}, {"cross_group", rep.CrossGroup}} {
		for _, s := range sec.groups {
			note := noteList(s.Notes)
			g := s.SizeGroup
			put(sec.name, s.Scenario, g, "", "", "", "runs", strconv.Itoa(s.Runs), "runs", "")
			put(sec.name, s.Scenario, g, "", "", "", "included", strconv.Itoa(s.Included), "runs", "")
			put(sec.name, s.Scenario, g, "", "", "", "median_"+m.SteadyJPerToken, raw(s.MedianSteady), "J/token", "")
			put(sec.name, s.Scenario, g, "", "", "", "median_"+m.FullJPerToken, raw(s.MedianFull), "J/token", "")
			put(sec.name, s.Scenario, g, "", "", "", "median_"+m.StartupEnergyJ, raw(s.MedianStartup), "J", "")
			put(sec.name, s.Scenario, g, "", "", "", "median_"+m.ReleaseEnergyJ, raw(s.MedianRelease), "J", "")
			put(sec.name, s.Scenario, g, "", "", "", "ratio_full_to_steady", raw(s.Ratio), "", fmt.Sprintf("over %d configuration(s) with both", s.RatioConfigs))
			put(sec.name, s.Scenario, g, "", "", "", "spearman", raw(s.Spearman), "", note)
			if sec.name != "group" {
				continue
			}
			for _, c := range s.Configs {
				for _, v := range []struct {
					name string
					sp   *Spread
					rank *float64
					unit string
				}{{m.SteadyJPerToken, c.Steady, c.SteadyRank, "J/token"}, {m.FullJPerToken, c.Full, c.FullRank, "J/token"},
					{m.StartupEnergyJ, c.Startup, nil, "J"}, {m.ReleaseEnergyJ, c.Release, nil, "J"}} {
					if v.sp == nil {
						continue
					}
					put("order", s.Scenario, g, c.Model, c.Engine, "", v.name+"_median", raw(&v.sp.Median), v.unit, "n="+strconv.Itoa(v.sp.N))
					put("order", s.Scenario, g, c.Model, c.Engine, "", v.name+"_min", raw(&v.sp.Min), v.unit, "")
					put("order", s.Scenario, g, c.Model, c.Engine, "", v.name+"_max", raw(&v.sp.Max), v.unit, "")
					put("order", s.Scenario, g, c.Model, c.Engine, "", v.name+"_spread", raw(v.sp.SpreadPct), "%", "")
					if v.rank != nil {
						put("order", s.Scenario, g, c.Model, c.Engine, "", v.name+"_rank", fmtRank(*v.rank), "", "")
					}
				}
			}
		}
	}
	for _, a := range rep.Asiai {
		run := strings.Join(a.RunIDs, "/")
		note := noteList(flaggedNote(a))
		put("asiai", "", "", a.Model, a.Engine, run, "tok_per_sec", raw(a.TokS), "tok/s", note)
		put("asiai", "", "", a.Model, a.Engine, run, "tok_per_sec_min", raw(a.TokSMin), "tok/s", "")
		put("asiai", "", "", a.Model, a.Engine, run, "tok_per_sec_max", raw(a.TokSMax), "tok/s", "")
		put("asiai", "", "", a.Model, a.Engine, run, "tok_per_sec_mean", raw(a.TokSMean), "tok/s", "")
		put("asiai", "", "", a.Model, a.Engine, run, "std_dev_tok_s", raw(a.TokSStd), "tok/s", "")
		put("asiai", "", "", a.Model, a.Engine, run, "stability", a.Stability, "", "")
		put("asiai", "", "", a.Model, a.Engine, run, "power_watts", raw(a.PowerW), "W", "")
		put("asiai", "", "", a.Model, a.Engine, run, "tok_per_sec_per_watt", raw(a.TokSPerW), "tok/s/W", "")
	}
	frontierCSV(put, rep)
	decisionCSV(put, rep)
	return t
}

// RenderEstimate writes a lifecycle estimate in format (report.FormatTable,
// ...).
func RenderEstimate(w io.Writer, est *Estimate, format string) error {
	return doc.Render(w, EstimateDoc(est), format)
}

// EstimateDoc is a lifecycle estimate as a document: its JSON the
// estimate; its data rows "estimate", E(N) at each N asked for, and rows
// "overhead_under", the smallest N whose fixed share is under share_limit,
// with E(N) there.
func EstimateDoc(est *Estimate) *doc.Document {
	b := newBuilder()
	b.d.JSON = est
	data := &doc.Table{Columns: doc.Cols("run_id", "row", "n", "energy_j", "energy_per_request_j", "fixed_overhead_per_request_j", "fixed_share", "share_limit", "note", "simulated")}
	sim := strconv.FormatBool(est.Simulated)
	for _, p := range est.Points {
		data.Add([]string{est.RunID, "estimate", strconv.FormatInt(p.N, 10), g(p.EnergyJ), g(p.PerRequestJ), g(p.FixedPerRequestJ), g(p.FixedShare), "", est.Caveat, sim})
	}
	for _, t := range est.Thresholds {
		if t.N == 0 {
			data.Add([]string{est.RunID, "overhead_under", "", "", "", "", "", g(t.Share), t.Note, sim})
			continue
		}
		n := float64(t.N)
		e := est.FixedJ + n*est.PerRequestJ
		data.Add([]string{est.RunID, "overhead_under", strconv.FormatInt(t.N, 10), g(e), g(e / n), g(est.FixedJ / n), g(est.FixedJ / e), g(t.Share), "", sim})
	}
	b.d.Data = data

	if est.Simulated {
		b.d.Add(&doc.Note{Text: doc.SimulatedNote})
	}
	b.d.Add(&doc.Title{Text: fmt.Sprintf("Lifecycle estimate for run %s: E(N) = E_startup + N·e_ss + E_release", est.RunID)})
	b.line(fmt.Sprintf("E_startup = %s J, E_release = %s J, e_ss = %s J / %s requests in the steady window = %s J/request",
		f1(est.StartupJ), f1(est.ReleaseJ), f1(est.SteadyEnergyJ), f3(est.SteadyRequests), f3(est.PerRequestJ)))
	rows := make([][]string, 0, len(est.Points))
	for _, p := range est.Points {
		rows = append(rows, []string{strconv.FormatInt(p.N, 10), f1(p.EnergyJ), f3(p.PerRequestJ), f3(p.FixedPerRequestJ),
			strconv.FormatFloat(p.FixedShare*100, 'f', 2, 64) + " %"})
	}
	b.table([]string{"N", "E(N) J", "E(N)/N J/request", "(E_startup + E_release)/N J/request", "fixed share"}, rows)
	var ths []string
	for _, t := range est.Thresholds {
		if t.N == 0 {
			ths = append(ths, fmt.Sprintf("under %s: %s", pctShort(t.Share), t.Note))
			continue
		}
		ths = append(ths, fmt.Sprintf("under %s from N = %d", pctShort(t.Share), t.N))
	}
	if len(ths) > 0 {
		b.line("Fixed overhead per request as a share of E(N)/N: " + strings.Join(ths, "; ") + ".")
	}
	for _, f := range est.Flags {
		b.line(estimateFlagNote(f))
	}
	b.line(est.Caveat)
	return b.d
}

// estimateFlagNote says what a flag of the run means for its estimate:
// the run out of formal results, the estimate's inputs it invalidates
// (E_startup, E_release, e_ss), or none of them.
func estimateFlagNote(f Flag) string {
	head := fmt.Sprintf("NOTE: this run is flagged %s (%s); ", f.Name, orDash(f.Detail))
	if slices.Contains(f.Removes, ValueAll) {
		return head + "it is left out of formal results."
	}
	var inputs []string
	for _, v := range []struct{ value, name string }{{ValueStartup, "E_startup"}, {ValueRelease, "E_release"}, {ValueSteady, "e_ss"}} {
		if slices.Contains(f.Removes, v.value) {
			inputs = append(inputs, v.name)
		}
	}
	if len(inputs) == 0 {
		return head + "the figures this estimate uses are not affected."
	}
	verb := " is"
	if len(inputs) > 1 {
		verb = " are"
	}
	return head + strings.Join(inputs, " and ") + verb + " left out of formal results, so this estimate is not a formal result."
}

func g(v float64) string  { return strconv.FormatFloat(v, 'g', -1, 64) }
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// pctShort formats a fraction as a percentage without needless decimals.
func pctShort(f float64) string { return strconv.FormatFloat(f*100, 'g', 4, 64) + " %" }

// simulatedNote is the simulator's note naming the hardware models the
// runs ran on, when their archives say.
func simulatedNote(hw []string) string {
	if len(hw) == 0 {
		return doc.SimulatedNote
	}
	return doc.SimulatedNote + " Hardware model: " + strings.Join(hw, ", ") + " (joulebench devices --sim)."
}
