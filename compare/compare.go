package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/measure"
)

// UnknownGroup is the size group of a run whose parameter count is unknown.
const UnknownGroup = "unknown"

// Run is one archived run evaluated with a profile.
type Run struct {
	Dir  string
	Meta archive.Meta
	// Results are the evaluated results; nil when the run could not be
	// evaluated (the run is then flagged not_evaluated).
	Results *archive.Results
}

// Flag says why a run is left out of the statistics.
type Flag struct {
	Name   string `json:"flag"`
	Detail string `json:"detail,omitempty"`
}

// RunRow is one benchmark-1.5 run as compared.
type RunRow struct {
	RunID     string `json:"run_id"`
	Dir       string `json:"dir"`
	Profile   string `json:"profile"`
	Scenario  string `json:"scenario"`
	SizeGroup string `json:"size_group"`
	// Params is the total parameter count; nil when unknown (ParamsNote
	// says why when a label was there but unreadable).
	Params          *float64 `json:"model_params"`
	ParamsNote      string   `json:"model_params_note,omitempty"`
	Model           string   `json:"model"`
	Engine          string   `json:"engine"`
	Status          string   `json:"status"`
	Simulated       bool     `json:"simulated"`
	SteadyJPerToken *float64 `json:"steady_j_per_token"`
	FullJPerToken   *float64 `json:"full_j_per_token"`
	OutputTokens    *float64 `json:"output_tokens"`
	Flags           []Flag   `json:"flags"`
	// Included is true when the run has no flag: it counts in the medians,
	// the ratio and the rank correlation.
	Included bool `json:"included"`
}

// PairSide is one run of an engine pair.
type PairSide struct {
	Engine          string   `json:"engine"`
	RunID           string   `json:"run_id"`
	OutputTokens    *float64 `json:"output_tokens"`
	SteadyJPerToken *float64 `json:"steady_j_per_token"`
	FullJPerToken   *float64 `json:"full_j_per_token"`
	Flags           []Flag   `json:"flags,omitempty"`
}

// Pair is two engines (e.g. vLLM and SGLang) on the same model and
// scenario/task.
type Pair struct {
	Scenario string   `json:"scenario"`
	Model    string   `json:"model"`
	A        PairSide `json:"a"`
	B        PairSide `json:"b"`
	// TokenDiff is |T1 - T2| / max(T1, T2) on total formal output tokens;
	// nil when a count is missing or both are 0.
	TokenDiff *float64 `json:"token_diff"`
	Tolerance float64  `json:"tolerance"`
	// Comparable is TokenDiff ≤ Tolerance.
	Comparable bool   `json:"comparable"`
	Reason     string `json:"reason,omitempty"`
}

// Config is one (model, engine) configuration of a scenario: the median of
// its included runs under each basis, and its rank under each (1 = lowest
// J/token; ties share the average rank).
type Config struct {
	Model      string  `json:"model"`
	Engine     string  `json:"engine"`
	SizeGroup  string  `json:"size_group"`
	Runs       int     `json:"runs"`
	Steady     float64 `json:"steady_j_per_token"`
	Full       float64 `json:"full_j_per_token"`
	SteadyRank float64 `json:"steady_rank"`
	FullRank   float64 `json:"full_rank"`
}

// ScenarioStats are the per-scenario statistics of the methodology, over
// the included runs only.
type ScenarioStats struct {
	Scenario string `json:"scenario"`
	Runs     int    `json:"runs"`
	Included int    `json:"included"`
	Flagged  int    `json:"flagged"`
	// Configs are the configurations in the statistics, by steady rank.
	Configs      []Config `json:"configs"`
	MedianSteady *float64 `json:"median_steady_j_per_token"`
	MedianFull   *float64 `json:"median_full_j_per_token"`
	// Ratio is MedianFull / MedianSteady.
	Ratio *float64 `json:"ratio_full_to_steady"`
	// Spearman is the rank correlation between the configuration orders
	// under the two bases.
	Spearman *float64 `json:"spearman"`
	Notes    []string `json:"notes,omitempty"`
}

// FlaggedRun is a run left out of the statistics, with why.
type FlaggedRun struct {
	RunID    string `json:"run_id"`
	Dir      string `json:"dir"`
	Profile  string `json:"profile"`
	Scenario string `json:"scenario"`
	Model    string `json:"model"`
	Engine   string `json:"engine"`
	Flags    []Flag `json:"flags"`
}

// Report is the whole comparison.
type Report struct {
	CompareProfile string          `json:"compare_profile"`
	Metrics        Metrics         `json:"metrics"`
	PairTolerance  float64         `json:"pair_tolerance"`
	Simulated      bool            `json:"simulated"`
	Runs           []RunRow        `json:"runs"`
	Pairs          []Pair          `json:"pairs"`
	Scenarios      []ScenarioStats `json:"scenarios"`
	Asiai          []AsiaiRow      `json:"asiai"`
	Flagged        []FlaggedRun    `json:"flagged"`
}

// Compare builds the comparison of evaluated runs.
func (p *Profile) Compare(runs []Run) *Report {
	rep := &Report{CompareProfile: p.Name, Metrics: p.Metrics, PairTolerance: p.Pairs.Tolerance,
		Runs: []RunRow{}, Pairs: []Pair{}, Scenarios: []ScenarioStats{}, Asiai: []AsiaiRow{}, Flagged: []FlaggedRun{}}
	var asiai []asiaiRun
	for _, r := range runs {
		if r.Meta.Simulated {
			rep.Simulated = true
		}
		prof := profileName(r)
		flags := p.flagsOf(r)
		if p.isAsiai(prof) {
			asiai = append(asiai, asiaiRun{run: r, flags: flags})
		} else {
			row := p.runRow(r, flags)
			flags = row.Flags
			rep.Runs = append(rep.Runs, row)
		}
		if len(flags) > 0 {
			rep.Flagged = append(rep.Flagged, FlaggedRun{RunID: r.Meta.RunID, Dir: r.Dir, Profile: prof,
				Scenario: p.scenarioOf(r.Meta), Model: orDash(r.Meta.Engine.Model), Engine: orDash(r.Meta.Engine.Kind), Flags: flags})
		}
	}
	slices.SortStableFunc(rep.Runs, func(a, b RunRow) int {
		return cmp.Or(cmp.Compare(a.Scenario, b.Scenario),
			cmp.Compare(p.sizeGroupIndex(a.SizeGroup), p.sizeGroupIndex(b.SizeGroup)),
			cmp.Compare(a.Model, b.Model), cmp.Compare(a.Engine, b.Engine), cmp.Compare(a.RunID, b.RunID))
	})
	rep.Pairs = p.pairs(rep.Runs)
	rep.Scenarios = p.scenarios(rep.Runs)
	rep.Asiai = p.asiaiRows(asiai)
	return rep
}

func profileName(r Run) string {
	if r.Results != nil && r.Results.Profile.Name != "" {
		return r.Results.Profile.Name
	}
	return r.Meta.Profile.Name
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// scenarioOf is the first scenario label present, else the request set's
// source, else "-".
func (p *Profile) scenarioOf(m archive.Meta) string {
	for _, l := range p.ScenarioLabels {
		if v := strings.TrimSpace(m.Labels[l]); v != "" {
			return v
		}
	}
	return orDash(m.RequestSet.Source)
}

// paramsOf reads the parameter count from the label, else from
// engine.extra. ok is false when absent; note says why a value present was
// not usable.
func (p *Profile) paramsOf(m archive.Meta) (v float64, ok bool, note string) {
	if p.ParamsLabel == "" {
		return 0, false, ""
	}
	raw, found := m.Labels[p.ParamsLabel]
	if !found {
		switch x := m.Engine.Extra[p.ParamsLabel].(type) {
		case float64:
			raw, found = strconv.FormatFloat(x, 'g', -1, 64), true
		case string:
			raw, found = x, true
		}
	}
	if !found || strings.TrimSpace(raw) == "" {
		return 0, false, ""
	}
	v, err := ParseParams(raw)
	if err != nil {
		return 0, false, fmt.Sprintf("%s %q: %v", p.ParamsLabel, raw, err)
	}
	return v, true, ""
}

// ParseParams reads a parameter count: a plain number (8e9, 8000000000) or a
// number with a suffix K, M, B (or G) or T, case-insensitive (7.6B, 70b,
// 1.5T). It must be positive and finite.
func ParseParams(s string) (float64, error) {
	s = strings.TrimSpace(s)
	mult := 1.0
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			mult = 1e3
		case 'm', 'M':
			mult = 1e6
		case 'b', 'B', 'g', 'G':
			mult = 1e9
		case 't', 'T':
			mult = 1e12
		}
		if mult != 1 {
			s = strings.TrimSpace(s[:len(s)-1])
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("not a parameter count (use e.g. 8e9 or 7.6B)")
	}
	v *= mult
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0, fmt.Errorf("parameter count must be a positive number")
	}
	return v, nil
}

// number reads a numeric result. ok is false when it is absent or not
// applicable; note then says why.
func number(res *archive.Results, name string) (float64, bool, string) {
	if res == nil {
		return 0, false, "run not evaluated"
	}
	r, found := res.Values[name]
	if !found {
		return 0, false, fmt.Sprintf("no %s in the results of profile %s", name, res.Profile.Name)
	}
	switch v := r.Value.(type) {
	case float64:
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			return v, true, ""
		}
	case int64:
		return float64(v), true, ""
	case int:
		return float64(v), true, ""
	case uint64:
		return float64(v), true, ""
	case nil:
		if r.Note != "" {
			return 0, false, fmt.Sprintf("%s: %s", name, r.Note)
		}
		return 0, false, fmt.Sprintf("%s has no value", name)
	}
	return 0, false, fmt.Sprintf("%s is not a number (%v)", name, r.Value)
}

func ptr(v float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &v
}

// flagsOf applies the profile's flag rules to a run.
func (p *Profile) flagsOf(r Run) []Flag {
	var flags []Flag
	if r.Results == nil {
		flags = append(flags, Flag{Name: "not_evaluated", Detail: "the run could not be evaluated"})
	}
	excludeCheckFlagged := false
	for _, rule := range p.Flags {
		switch {
		case rule.Check != "":
			if r.Results == nil {
				continue
			}
			c, ok := r.Results.Values[rule.Check]
			if !ok || c.Kind != "check" || c.Passed == nil || *c.Passed {
				continue
			}
			detail := c.Message
			if c.Note != "" && !strings.Contains(detail, c.Note) {
				detail = strings.TrimSpace(detail + " (" + c.Note + ")")
			}
			flags = append(flags, Flag{Name: rule.Flag, Detail: detail})
			if c.Severity == "exclude" {
				excludeCheckFlagged = true
			}
		case rule.Excluded:
			excluded, reason := r.Meta.Excluded, r.Meta.ExcludeReason
			if r.Results != nil {
				excluded, reason = r.Results.Excluded, r.Results.ExcludeReason
			}
			if excluded && !excludeCheckFlagged {
				flags = append(flags, Flag{Name: rule.Flag, Detail: reason})
			}
		case rule.Incomplete:
			if r.Meta.Status != archive.StatusComplete {
				d := "status " + orDash(r.Meta.Status)
				if r.Meta.Reason != "" {
					d += ": " + r.Meta.Reason
				}
				flags = append(flags, Flag{Name: rule.Flag, Detail: d})
			}
		}
	}
	return flags
}

func (p *Profile) runRow(r Run, flags []Flag) RunRow {
	m := r.Meta
	row := RunRow{RunID: m.RunID, Dir: r.Dir, Profile: profileName(r), Scenario: p.scenarioOf(m),
		Model: orDash(m.Engine.Model), Engine: orDash(m.Engine.Kind), Status: m.Status, Simulated: m.Simulated,
		SizeGroup: UnknownGroup, Flags: flags}
	if v, ok, note := p.paramsOf(m); ok {
		row.Params = &v
		row.SizeGroup = p.SizeGroupOf(v)
	} else {
		row.ParamsNote = note
	}
	var missing []string
	get := func(name string) *float64 {
		v, ok, note := number(r.Results, name)
		if !ok {
			missing = append(missing, note)
		}
		return ptr(v, ok)
	}
	row.SteadyJPerToken = get(p.Metrics.SteadyJPerToken)
	row.FullJPerToken = get(p.Metrics.FullJPerToken)
	row.OutputTokens = get(p.Metrics.OutputTokens)
	if len(row.Flags) == 0 && len(missing) > 0 && r.Results != nil {
		// Not flagged by a rule, yet a value is missing: say so rather
		// than leave the run out silently.
		row.Flags = append(row.Flags, Flag{Name: "missing_value", Detail: strings.Join(missing, "; ")})
	}
	if row.Flags == nil {
		row.Flags = []Flag{}
	}
	row.Included = len(row.Flags) == 0
	return row
}

// pairs forms every engine pair for the same scenario and model.
func (p *Profile) pairs(rows []RunRow) []Pair {
	out := []Pair{}
	for _, ep := range p.Pairs.Engines {
		for i := range rows {
			a := &rows[i]
			if !strings.EqualFold(a.Engine, ep[0]) {
				continue
			}
			for j := range rows {
				b := &rows[j]
				if !strings.EqualFold(b.Engine, ep[1]) || a.Scenario != b.Scenario || a.Model != b.Model {
					continue
				}
				out = append(out, p.pair(a, b))
			}
		}
	}
	return out
}

func side(r *RunRow) PairSide {
	return PairSide{Engine: r.Engine, RunID: r.RunID, OutputTokens: r.OutputTokens,
		SteadyJPerToken: r.SteadyJPerToken, FullJPerToken: r.FullJPerToken, Flags: r.Flags}
}

// pair applies the output-token rule: comparable when |T1 - T2| /
// max(T1, T2) ≤ tolerance.
func (p *Profile) pair(a, b *RunRow) Pair {
	pr := Pair{Scenario: a.Scenario, Model: a.Model, A: side(a), B: side(b), Tolerance: p.Pairs.Tolerance}
	switch {
	case a.OutputTokens == nil || b.OutputTokens == nil:
		pr.Reason = fmt.Sprintf("no %s for one of the runs", p.Metrics.OutputTokens)
		return pr
	case max(*a.OutputTokens, *b.OutputTokens) <= 0:
		pr.Reason = "neither run has output tokens"
		return pr
	}
	d := TokenDiff(*a.OutputTokens, *b.OutputTokens)
	pr.TokenDiff = &d
	pr.Comparable = d <= p.Pairs.Tolerance
	if !pr.Comparable {
		pr.Reason = fmt.Sprintf("output tokens differ by %s > %s", pct(d), pct(p.Pairs.Tolerance))
	}
	return pr
}

// TokenDiff is |t1 - t2| / max(t1, t2); 0 when both are 0.
func TokenDiff(t1, t2 float64) float64 {
	m := max(t1, t2)
	if m <= 0 {
		return 0
	}
	return math.Abs(t1-t2) / m
}

// pct formats a fraction as a percentage with one decimal.
func pct(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + " %" }

// scenarios computes the statistics of each scenario over its included runs.
func (p *Profile) scenarios(rows []RunRow) []ScenarioStats {
	var names []string
	by := map[string][]*RunRow{}
	for i := range rows {
		s := rows[i].Scenario
		if _, ok := by[s]; !ok {
			names = append(names, s)
		}
		by[s] = append(by[s], &rows[i])
	}
	slices.Sort(names)
	out := make([]ScenarioStats, 0, len(names))
	for _, s := range names {
		out = append(out, p.scenarioStats(s, by[s]))
	}
	return out
}

func (p *Profile) scenarioStats(name string, rows []*RunRow) ScenarioStats {
	st := ScenarioStats{Scenario: name, Runs: len(rows), Configs: []Config{}}
	type acc struct {
		cfg          Config
		steady, full []float64
	}
	var keys []string
	cfgs := map[string]*acc{}
	for _, r := range rows {
		if !r.Included {
			st.Flagged++
			continue
		}
		st.Included++
		k := r.Model + "\x00" + r.Engine
		c, ok := cfgs[k]
		if !ok {
			c = &acc{cfg: Config{Model: r.Model, Engine: r.Engine, SizeGroup: r.SizeGroup}}
			cfgs[k] = c
			keys = append(keys, k)
		}
		c.cfg.Runs++
		c.steady = append(c.steady, *r.SteadyJPerToken)
		c.full = append(c.full, *r.FullJPerToken)
	}
	if st.Flagged > 0 {
		st.Notes = append(st.Notes, fmt.Sprintf("%d flagged run(s) left out", st.Flagged))
	}
	if len(keys) == 0 {
		st.Notes = append(st.Notes, "no run without a flag: no statistics")
		return st
	}
	var steady, full []float64
	for _, k := range keys {
		c := cfgs[k]
		// The values are finite (checked when read), so Median cannot fail.
		c.cfg.Steady, _ = measure.Median(c.steady)
		c.cfg.Full, _ = measure.Median(c.full)
		steady = append(steady, c.cfg.Steady)
		full = append(full, c.cfg.Full)
	}
	if ms, err := measure.Median(steady); err == nil {
		st.MedianSteady = &ms
	}
	if mf, err := measure.Median(full); err == nil {
		st.MedianFull = &mf
	}
	if st.MedianSteady != nil && st.MedianFull != nil {
		if *st.MedianSteady > 0 {
			r := *st.MedianFull / *st.MedianSteady
			st.Ratio = &r
		} else {
			st.Notes = append(st.Notes, "ratio: median steady-state J/token is 0")
		}
	}
	rs, rf := measure.Ranks(steady), measure.Ranks(full)
	for i, k := range keys {
		c := cfgs[k]
		c.cfg.SteadyRank, c.cfg.FullRank = rs[i], rf[i]
		st.Configs = append(st.Configs, c.cfg)
	}
	slices.SortStableFunc(st.Configs, func(a, b Config) int {
		return cmp.Or(cmp.Compare(a.SteadyRank, b.SteadyRank), cmp.Compare(a.FullRank, b.FullRank),
			cmp.Compare(a.Model, b.Model), cmp.Compare(a.Engine, b.Engine))
	})
	switch rho, err := measure.Spearman(steady, full); {
	case len(keys) < 2:
		st.Notes = append(st.Notes, "Spearman needs at least 2 configurations (model, engine)")
	case err != nil:
		st.Notes = append(st.Notes, strings.Replace(err.Error(), "spearman: ", "Spearman: ", 1))
	default:
		st.Spearman = &rho
	}
	return st
}
