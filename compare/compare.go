package compare

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"

	"github.com/joulebench/joulebench/internal/num"
)

// UnknownGroup is the size group of a run whose parameter count is unknown.
const UnknownGroup = "unknown"

// Run is one archived run evaluated with a profile.
type Run struct {
	Dir  string
	Meta record.Meta
	// Results are the evaluated results; nil when the run could not be
	// evaluated (the run is then flagged not_evaluated).
	Results *record.Results
}

// Flag is a finding on a run and the values it removes from the
// statistics (Removes: steady, full, startup, release, or all).
type Flag struct {
	Name string `json:"flag"`
	// Check is the failed check the flag stands for, if any.
	Check   string   `json:"check,omitempty"`
	Detail  string   `json:"detail,omitempty"`
	Removes []string `json:"removes"`
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
	Params     *float64 `json:"model_params"`
	ParamsNote string   `json:"model_params_note,omitempty"`
	Model      string   `json:"model"`
	Engine     string   `json:"engine"`
	Status     string   `json:"status"`
	Simulated  bool     `json:"simulated"`
	// GPUSetting is the GPU setting the run applied (run.json
	// gpu_settings); Label names the run in every view: its short load and
	// setting, "c32 · 250 W" (PointLabel).
	GPUSetting      GPUSetting `json:"gpu_setting"`
	Label           string     `json:"label"`
	SteadyJPerToken *float64   `json:"steady_j_per_token"`
	FullJPerToken   *float64   `json:"full_j_per_token"`
	StartupEnergyJ  *float64   `json:"startup_energy_j"`
	ReleaseEnergyJ  *float64   `json:"release_energy_j"`
	OutputTokens    *float64   `json:"output_tokens"`
	Flags           []Flag     `json:"flags"`
	// Removed lists the values its flags leave out of the statistics
	// ("all" for the whole run).
	Removed []string `json:"removed"`
	// Included is true when the run counts in the statistics with at
	// least one value (no flag removes all).
	Included bool `json:"included"`
	// Configuration is the run's value of each configuration field that
	// differs between runs of the same scenario, model and engine
	// (Report.ConfigurationColumns); Load likewise for the load fields.
	Configuration []FieldValue `json:"configuration,omitempty"`
	Load          []FieldValue `json:"load,omitempty"`
	// same holds the pair-rule fields of run.json; setting and load the
	// configuration fields (canonical JSON by dotted path).
	same, setting, load map[string]string
	// method is the run's method (profile name and sha256): runs of
	// different methods are never pooled.
	method method
	// slo is the SLO of the run's parameters (nil: none).
	slo *SLO
}

// FieldValue is a run.json field (dotted path) and its value as shown.
type FieldValue struct {
	Field string `json:"field"`
	Value string `json:"value"`
}

// NotApplicable is a combination that was not measured because it does
// not apply (a campaign's excluded combination, a model whose context the
// prompts do not fit): shown as n/a, never as a failure or an absence.
type NotApplicable struct {
	Scenario string `json:"scenario"`
	Model    string `json:"model"`
	Engine   string `json:"engine"`
	// RunID and Dir name the run, when one was made.
	RunID string `json:"run_id,omitempty"`
	Dir   string `json:"dir,omitempty"`
	// Setting is the rest of the combination (axis values).
	Setting []FieldValue `json:"setting,omitempty"`
	Reason  string       `json:"reason"`
}

// Uses reports whether the run's value v (ValueSteady, ...) counts in the
// statistics.
func (r *RunRow) Uses(v string) bool {
	return r.Included && !slices.Contains(r.Removed, v)
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

// FieldDiff is a configuration field on which the two runs of a pair
// differ.
type FieldDiff struct {
	Field string `json:"field"`
	A     string `json:"a"`
	B     string `json:"b"`
}

// Pair is two engines (e.g. vLLM and SGLang) on the same model and
// scenario/task.
type Pair struct {
	Scenario string   `json:"scenario"`
	Model    string   `json:"model"`
	A        PairSide `json:"a"`
	B        PairSide `json:"b"`
	// Differs lists the pair-rule fields (pairs.same) that differ.
	Differs []FieldDiff `json:"differs"`
	// TokenDiff is |T1 - T2| / max(T1, T2) on total formal output tokens;
	// nil when a count is missing or both are 0.
	TokenDiff *float64 `json:"token_diff"`
	Tolerance float64  `json:"tolerance"`
	// Comparable: no field differs and TokenDiff ≤ Tolerance.
	Comparable bool   `json:"comparable"`
	Reason     string `json:"reason,omitempty"`
}

// Spread summarises the runs of one configuration under one basis: n,
// median, min–max and the spread (max − min) / median × 100.
type Spread struct {
	N         int      `json:"n"`
	Median    float64  `json:"median"`
	Min       float64  `json:"min"`
	Max       float64  `json:"max"`
	SpreadPct *float64 `json:"spread_pct"`
}

func spreadOf(xs []float64) *Spread {
	if len(xs) == 0 {
		return nil
	}
	// The values are finite (checked when read), so Median cannot fail.
	m, _ := measure.Median(xs)
	sp := &Spread{N: len(xs), Median: m, Min: slices.Min(xs), Max: slices.Max(xs)}
	if m > 0 {
		v := (sp.Max - sp.Min) / m * 100
		sp.SpreadPct = &v
	}
	return sp
}

// Config is one (model, engine) configuration of a group: its runs under
// each basis (the median counts), and its rank under the two J/token bases
// (1 = lowest; ties share the average rank; nil when the basis has no
// value in the statistics).
type Config struct {
	Model     string `json:"model"`
	Engine    string `json:"engine"`
	SizeGroup string `json:"size_group"`
	// Configuration and Load are the configuration's values of the fields
	// that differ (as RunRow's).
	Configuration []FieldValue `json:"configuration,omitempty"`
	Load          []FieldValue `json:"load,omitempty"`
	Runs          int          `json:"runs"`
	Steady        *Spread      `json:"steady_j_per_token"`
	Full          *Spread      `json:"full_j_per_token"`
	Startup       *Spread      `json:"startup_energy_j"`
	Release       *Spread      `json:"release_energy_j"`
	SteadyRank    *float64     `json:"steady_rank"`
	FullRank      *float64     `json:"full_rank"`
}

// GroupStats are the statistics of one scenario within one size group (or,
// in Report.CrossGroup, over all size groups: SizeGroup "all"), over the
// values in the statistics only.
type GroupStats struct {
	Scenario  string `json:"scenario"`
	SizeGroup string `json:"size_group"`
	Runs      int    `json:"runs"`
	Included  int    `json:"included"`
	Flagged   int    `json:"flagged"`
	// Configs are the configurations in the statistics, by steady rank.
	Configs       []Config `json:"configs"`
	MedianSteady  *float64 `json:"median_steady_j_per_token"`
	MedianFull    *float64 `json:"median_full_j_per_token"`
	MedianStartup *float64 `json:"median_startup_energy_j"`
	MedianRelease *float64 `json:"median_release_energy_j"`
	// Ratio is the median full-lifecycle J/token over the median
	// steady-state J/token, both over the same configurations: those with
	// both values (RatioConfigs of them).
	Ratio        *float64 `json:"ratio_full_to_steady"`
	RatioConfigs int      `json:"ratio_configurations"`
	// Spearman is the rank correlation between the configuration orders
	// under the two bases, over the configurations with both.
	Spearman *float64 `json:"spearman"`
	Notes    []string `json:"notes,omitempty"`
}

// CrossGroup labels the statistics over all size groups of a scenario.
const CrossGroup = "all (cross-group)"

// FlaggedRun is a run with a flag, with why and what it removes.
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
	// Decision is the answer: the configuration and load with the lowest
	// objective (J/token) meeting the SLO, over every configuration
	// compared; it opens every rendering.
	Decision *Decision `json:"decision"`
	// Decisions are the decisions per SLO and method: one when every
	// point compared shares them (Decision is then that one), else one
	// per SLO and method, tightest SLO first, and Decision chooses
	// nothing and says why: runs of different SLOs or methods are never
	// decided together.
	Decisions []*Decision `json:"decisions"`
	// Points are every point Decision weighed, as every view draws them
	// (DecidedPoints); nil when it chose nothing.
	Points         *DecidedPoints `json:"decided_points,omitempty"`
	CompareProfile string         `json:"compare_profile"`
	Metrics        Metrics        `json:"metrics"`
	PairTolerance  float64        `json:"pair_tolerance"`
	PairSame       []string       `json:"pair_same"`
	Simulated      bool           `json:"simulated"`
	// SimHardware lists the simulator's hardware models the simulated
	// runs ran on (run.json engine.extra.sim_hardware), in order of first
	// appearance; empty when none says.
	SimHardware []string `json:"sim_hardware,omitempty"`
	// ConfigurationColumns are the configuration fields that differ between
	// runs of the same scenario, model and engine; LoadColumns the load
	// fields that do.
	ConfigurationColumns []string `json:"configuration_columns"`
	LoadColumns          []string `json:"load_columns"`
	Runs                 []RunRow `json:"runs"`
	// NotApplicable are the combinations not measured because they do not
	// apply.
	NotApplicable []NotApplicable `json:"not_applicable"`
	Pairs         []Pair          `json:"pairs"`
	// Groups are the method's statistics: per scenario and size group.
	Groups []GroupStats `json:"groups"`
	// CrossGroup is the same per scenario over all size groups: not a
	// comparison the method makes, shown apart and labelled.
	CrossGroup []GroupStats `json:"cross_group"`
	Asiai      []AsiaiRow   `json:"asiai"`
	Flagged    []FlaggedRun `json:"flagged"`
	// Frontier is the energy–latency frontier of every configuration
	// measured at two loads or more: its load points, by latency.
	Frontier []FrontierPoint `json:"frontier"`
	// GPUSettings are the lowest J/token meeting the SLO over GPU settings
	// × load, where runs differ in their GPU settings (gpusettings.go).
	GPUSettings []GPUSettingsChoice `json:"gpu_settings,omitempty"`
}

// Compare builds the comparison of evaluated runs. na are combinations
// known not to apply (a campaign's exclusions); a run that did not
// complete for a reason the profile's not_applicable rules name joins them.
func (p *Profile) Compare(runs []Run, na ...NotApplicable) *Report {
	return p.CompareWith(runs, FrontierOptions{}, na...)
}

// CompareWith is Compare with the frontier's options.
func (p *Profile) CompareWith(runs []Run, fo FrontierOptions, na ...NotApplicable) *Report {
	rep := &Report{CompareProfile: p.Name, Metrics: p.Metrics, PairTolerance: p.Pairs.Tolerance, PairSame: p.Pairs.Same,
		ConfigurationColumns: []string{}, LoadColumns: []string{}, Runs: []RunRow{}, NotApplicable: slices.Clone(na),
		Pairs: []Pair{}, Groups: []GroupStats{}, CrossGroup: []GroupStats{}, Asiai: []AsiaiRow{}, Flagged: []FlaggedRun{}}
	if rep.NotApplicable == nil {
		rep.NotApplicable = []NotApplicable{}
	}
	var asiai []asiaiRun
	for _, r := range runs {
		if r.Meta.Simulated {
			rep.Simulated = true
		}
		if hw := r.Meta.SimHardware(); hw != "" && !slices.Contains(rep.SimHardware, hw) {
			rep.SimHardware = append(rep.SimHardware, hw)
		}
		if why, ok := p.NotApplicableReason(r.Meta.Reason); ok && r.Meta.Status != record.StatusComplete {
			rep.NotApplicable = append(rep.NotApplicable, NotApplicable{Scenario: p.scenarioOf(r.Meta), Model: orDash(r.Meta.Engine.Model),
				Engine: orDash(r.Meta.Engine.Kind), RunID: r.Meta.RunID, Dir: r.Dir, Reason: why + " (" + r.Meta.Reason + ")"})
			continue
		}
		prof := profileName(r)
		flags := p.flagsOf(r)
		if f, ok := methodFlag(methodOf(r)); ok {
			flags = append(flags, f)
		}
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
	slices.SortStableFunc(rep.NotApplicable, func(a, b NotApplicable) int {
		return cmp.Or(cmp.Compare(a.Scenario, b.Scenario), cmp.Compare(a.Model, b.Model), cmp.Compare(a.Engine, b.Engine), cmp.Compare(a.RunID, b.RunID))
	})
	rep.ConfigurationColumns, rep.LoadColumns = p.configurationColumns(rep.Runs)
	rep.Pairs = p.pairs(rep.Runs)
	rep.Groups, rep.CrossGroup = p.groups(rep.Runs)
	rep.Asiai = p.asiaiRows(asiai)
	points := p.loadPoints(rep.Runs, runs, fo)
	rep.Decision, rep.Decisions = decide(rep.Runs, points, fo)
	rep.Points = decidedPoints(rep.Decision, rep.Runs, runs)
	rep.Frontier = p.frontier(points)
	if rep.Frontier == nil {
		rep.Frontier = []FrontierPoint{}
	}
	rep.GPUSettings = gpuSettingsChoices(points)
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
func (p *Profile) scenarioOf(m record.Meta) string {
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
func (p *Profile) paramsOf(m record.Meta) (v float64, ok bool, note string) {
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
func number(res *record.Results, name string) (float64, bool, string) {
	if res == nil {
		return 0, false, "run not evaluated"
	}
	r, found := res.Values[name]
	if !found {
		return 0, false, fmt.Sprintf("no %s in the results of profile %s", name, res.Profile.Name)
	}
	if v, ok := num.Finite(r.Value); ok {
		return v, true, ""
	}
	if r.Value == nil {
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
		flags = append(flags, Flag{Name: "not_evaluated", Detail: "the run could not be evaluated", Removes: []string{ValueAll}})
	}
	byName := map[string]bool{} // checks flagged by name
	for _, rule := range p.Flags {
		if rule.Check != "" {
			byName[rule.Check] = true
		}
	}
	excludeCheckFlagged := false
	add := func(rule FlagRule, detail string) {
		flags = append(flags, Flag{Name: rule.Flag, Detail: detail, Removes: slices.Clone(rule.Removes)})
	}
	addCheck := func(flag, check string, c record.Result, rule []string, detail string) {
		removes := p.removedBy(c, rule)
		if c.Severity == "exclude" && slices.Contains(removes, ValueAll) {
			excludeCheckFlagged = true
		}
		flags = append(flags, Flag{Name: flag, Check: check, Detail: detail, Removes: removes})
	}
	failedCheck := checkFailed
	for _, rule := range p.Flags {
		switch {
		case rule.Check != "":
			if r.Results == nil {
				continue
			}
			if c, ok := r.Results.Values[rule.Check]; ok && failedCheck(c) {
				addCheck(rule.Flag, rule.Check, c, rule.Removes, checkDetail(c))
			}
		case rule.Severity != "":
			if r.Results == nil {
				continue
			}
			for _, name := range r.Results.Order {
				c := r.Results.Values[name]
				if byName[name] || c.Severity != rule.Severity || !failedCheck(c) {
					continue
				}
				addCheck(rule.Flag, name, c, rule.Removes, "check "+name+": "+checkDetail(c))
			}
		case rule.Metric != "":
			if v, ok, _ := number(r.Results, rule.Metric); ok && v > *rule.Above {
				add(rule, fmt.Sprintf("%s = %s > %s", rule.Metric, strconv.FormatFloat(v, 'g', -1, 64), strconv.FormatFloat(*rule.Above, 'g', -1, 64)))
			}
		case rule.Excluded:
			excluded, reason := r.Meta.Excluded, r.Meta.ExcludeReason
			if r.Results != nil {
				excluded, reason = r.Results.Excluded, r.Results.ExcludeReason
			}
			if excluded && !excludeCheckFlagged {
				add(rule, reason)
			}
		case rule.Incomplete:
			if r.Meta.Status != record.StatusComplete {
				add(rule, incompleteDetail(&r.Meta))
			}
		}
	}
	// A failed check that no rule names or covers by its severity, and
	// that declares what it invalidates, removes that under its own name.
	for _, name := range p.undeclaredFailures(r.Results, byName) {
		addCheck(name, name, r.Results.Values[name], nil, checkDetail(r.Results.Values[name]))
	}
	return flags
}

// undeclaredFailures are the failed checks of res (nil: none) that no
// rule of p names (byName) or covers by its severity, and that declare
// what they invalidate.
func (p *Profile) undeclaredFailures(res *record.Results, byName map[string]bool) []string {
	if res == nil {
		return nil
	}
	covered := map[string]bool{}
	for _, rule := range p.Flags {
		if rule.Severity != "" {
			covered[rule.Severity] = true
		}
	}
	var out []string
	for _, name := range res.Order {
		c := res.Values[name]
		if byName[name] || covered[c.Severity] || len(c.Invalidates) == 0 || !checkFailed(c) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// checkFailed reports whether c is a check that failed.
func checkFailed(c record.Result) bool {
	return c.Kind == "check" && c.Passed != nil && !*c.Passed
}

// checkDetail is a failed check's message, with its note when the
// message does not already carry it.
func checkDetail(c record.Result) string {
	detail := c.Message
	if c.Note != "" && !strings.Contains(detail, c.Note) {
		detail = strings.TrimSpace(detail + " (" + c.Note + ")")
	}
	return detail
}

// incompleteDetail says why a run is not complete: its status and the
// reason it gives.
func incompleteDetail(m *record.Meta) string {
	d := "status " + orDash(m.Status)
	if m.Reason != "" {
		d += ": " + m.Reason
	}
	return d
}

// removedBy is what a failed check removes from the statistics: the
// values whose metrics its own declaration (record.Result.Invalidated)
// names, all for the whole run, none when it names none of them; a warn
// check that declares nothing (results of an older profile) removes what
// the comparison profile's rule says (rule), else none.
func (p *Profile) removedBy(c record.Result, rule []string) []string {
	inv := c.Invalidated()
	if len(inv) == 0 {
		if len(rule) > 0 {
			return slices.Clone(rule)
		}
		return []string{ValueNone}
	}
	if slices.Contains(inv, record.InvalidatesAll) {
		return []string{ValueAll}
	}
	var out []string
	for _, v := range []struct{ value, metric string }{
		{ValueSteady, p.Metrics.SteadyJPerToken}, {ValueFull, p.Metrics.FullJPerToken},
		{ValueStartup, p.Metrics.StartupEnergyJ}, {ValueRelease, p.Metrics.ReleaseEnergyJ},
	} {
		if c.InvalidatesMetric(v.metric) {
			out = append(out, v.value)
		}
	}
	if len(out) == 0 {
		return []string{ValueNone}
	}
	return out
}

func (p *Profile) runRow(r Run, flags []Flag) RunRow {
	m := r.Meta
	row := RunRow{RunID: m.RunID, Dir: r.Dir, Profile: profileName(r), Scenario: p.scenarioOf(m),
		Model: orDash(m.Engine.Model), Engine: orDash(m.Engine.Kind), Status: m.Status, Simulated: m.Simulated,
		SizeGroup: UnknownGroup, Flags: flags, same: sameFields(m, p.Pairs.Same)}
	row.setting, row.load = p.configurationOf(m)
	row.GPUSetting = GPUSettingOf(m)
	row.slo = SLOOf(m)
	row.Label = PointLabel(loadParams(row.load), row.GPUSetting)
	row.method = methodOf(r)
	if v, ok, note := p.paramsOf(m); ok {
		row.Params = &v
		row.SizeGroup = p.SizeGroupOf(v)
	} else {
		row.ParamsNote = note
	}
	removed := map[string]bool{}
	for _, f := range flags {
		for _, v := range f.Removes {
			removed[v] = true
		}
	}
	var missing, missingVals []string
	get := func(name, value string) *float64 {
		v, ok, note := number(r.Results, name)
		if !ok && value != "" && !removed[value] && !removed[ValueAll] {
			missing = append(missing, note)
			missingVals = append(missingVals, value)
		}
		return ptr(v, ok)
	}
	row.SteadyJPerToken = get(p.Metrics.SteadyJPerToken, ValueSteady)
	row.FullJPerToken = get(p.Metrics.FullJPerToken, ValueFull)
	row.StartupEnergyJ = get(p.Metrics.StartupEnergyJ, ValueStartup)
	row.ReleaseEnergyJ = get(p.Metrics.ReleaseEnergyJ, ValueRelease)
	row.OutputTokens = get(p.Metrics.OutputTokens, "")
	if len(missing) > 0 && r.Results != nil {
		// A value no rule removed is missing: say so rather than leave it
		// out silently.
		row.Flags = append(row.Flags, Flag{Name: "missing_value", Detail: strings.Join(missing, "; "), Removes: missingVals})
		for _, v := range missingVals {
			removed[v] = true
		}
	}
	if row.Flags == nil {
		row.Flags = []Flag{}
	}
	row.Removed = []string{}
	for _, v := range valueNames {
		if removed[v] {
			row.Removed = append(row.Removed, v)
		}
	}
	row.Included = !removed[ValueAll]
	return row
}

// sameFields reads the pair-rule fields of run.json (dotted paths) as
// canonical JSON; an absent field is "".
func sameFields(m record.Meta, fields []string) map[string]string {
	out := map[string]string{}
	if len(fields) == 0 {
		return out
	}
	b, err := json.Marshal(m)
	if err != nil {
		return out
	}
	var doc map[string]any
	if json.Unmarshal(b, &doc) != nil {
		return out
	}
	for _, f := range fields {
		var cur any = doc
		for _, k := range strings.Split(f, ".") {
			obj, ok := cur.(map[string]any)
			if !ok {
				cur = nil
				break
			}
			cur = obj[k]
		}
		if cur == nil {
			out[f] = ""
			continue
		}
		v, _ := json.Marshal(cur)
		out[f] = string(v)
	}
	return out
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

// pair applies the pair rule: the same configuration (every field of
// pairs.same equal), then |T1 - T2| / max(T1, T2) ≤ tolerance.
func (p *Profile) pair(a, b *RunRow) Pair {
	pr := Pair{Scenario: a.Scenario, Model: a.Model, A: side(a), B: side(b), Tolerance: p.Pairs.Tolerance, Differs: []FieldDiff{}}
	var reasons []string
	for _, f := range p.Pairs.Same {
		if va, vb := a.same[f], b.same[f]; va != vb {
			pr.Differs = append(pr.Differs, FieldDiff{Field: f, A: orDash(va), B: orDash(vb)})
			reasons = append(reasons, fmt.Sprintf("%s differs (%s vs %s)", f, orDash(va), orDash(vb)))
		}
	}
	switch {
	case a.OutputTokens == nil || b.OutputTokens == nil:
		reasons = append(reasons, fmt.Sprintf("no %s for one of the runs", p.Metrics.OutputTokens))
	case max(*a.OutputTokens, *b.OutputTokens) <= 0:
		reasons = append(reasons, "neither run has output tokens")
	default:
		d := TokenDiff(*a.OutputTokens, *b.OutputTokens)
		pr.TokenDiff = &d
		if d > p.Pairs.Tolerance {
			reasons = append(reasons, fmt.Sprintf("output tokens differ by %s > %s", pct(d), pct(p.Pairs.Tolerance)))
		}
	}
	pr.Comparable = len(reasons) == 0
	pr.Reason = strings.Join(reasons, "; ")
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

// groups computes the statistics per scenario and size group (the
// method's comparison), and per scenario over all groups (cross-group).
func (p *Profile) groups(rows []RunRow) (within, cross []GroupStats) {
	type key struct {
		scenario string
		group    int
		name     string
	}
	var keys []key
	by := map[key][]*RunRow{}
	var scen []string
	byScen := map[string][]*RunRow{}
	for i := range rows {
		r := &rows[i]
		k := key{r.Scenario, p.sizeGroupIndex(r.SizeGroup), r.SizeGroup}
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], r)
		if _, ok := byScen[r.Scenario]; !ok {
			scen = append(scen, r.Scenario)
		}
		byScen[r.Scenario] = append(byScen[r.Scenario], r)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.scenario, b.scenario), cmp.Compare(a.group, b.group), cmp.Compare(a.name, b.name))
	})
	slices.Sort(scen)
	within = make([]GroupStats, 0, len(keys))
	for _, k := range keys {
		within = append(within, groupStats(k.scenario, k.name, by[k]))
	}
	cross = make([]GroupStats, 0, len(scen))
	for _, s := range scen {
		cross = append(cross, groupStats(s, CrossGroup, byScen[s]))
	}
	return within, cross
}

func groupStats(scenario, group string, rows []*RunRow) GroupStats {
	st := GroupStats{Scenario: scenario, SizeGroup: group, Runs: len(rows), Configs: []Config{}}
	type acc struct {
		cfg                            Config
		steady, full, startup, release []float64
	}
	var keys []string
	cfgs := map[string]*acc{}
	for _, r := range rows {
		if len(r.Flags) > 0 {
			st.Flagged++
		}
		if !r.Included {
			continue
		}
		st.Included++
		k := r.Model + "\x00" + r.Engine + "\x00" + configKey(r)
		c, ok := cfgs[k]
		if !ok {
			c = &acc{cfg: Config{Model: r.Model, Engine: r.Engine, SizeGroup: r.SizeGroup, Configuration: r.Configuration, Load: r.Load}}
			cfgs[k] = c
			keys = append(keys, k)
		}
		c.cfg.Runs++
		for _, v := range []struct {
			name string
			x    *float64
			dst  *[]float64
		}{{ValueSteady, r.SteadyJPerToken, &c.steady}, {ValueFull, r.FullJPerToken, &c.full},
			{ValueStartup, r.StartupEnergyJ, &c.startup}, {ValueRelease, r.ReleaseEnergyJ, &c.release}} {
			if v.x != nil && r.Uses(v.name) {
				*v.dst = append(*v.dst, *v.x)
			}
		}
	}
	if n := st.Runs - st.Included; n > 0 {
		st.Notes = append(st.Notes, fmt.Sprintf("%d run(s) out of the statistics", n))
	}
	if m := methodsOf(rows); len(m) > 1 {
		st.Notes = append(st.Notes, fmt.Sprintf("%d methods (profiles) side by side here, each configuration of one: %s", len(m), strings.Join(m, "; ")))
	}
	if len(keys) == 0 {
		st.Notes = append(st.Notes, "no run in the statistics")
		return st
	}
	var steady, full, startup, release []float64
	var si, fi, both []int // configurations with a steady / full value / both
	for i, k := range keys {
		c := cfgs[k]
		c.cfg.Steady, c.cfg.Full = spreadOf(c.steady), spreadOf(c.full)
		c.cfg.Startup, c.cfg.Release = spreadOf(c.startup), spreadOf(c.release)
		if c.cfg.Steady != nil {
			steady = append(steady, c.cfg.Steady.Median)
			si = append(si, i)
		}
		if c.cfg.Full != nil {
			full = append(full, c.cfg.Full.Median)
			fi = append(fi, i)
		}
		if c.cfg.Steady != nil && c.cfg.Full != nil {
			both = append(both, i)
		}
		if c.cfg.Startup != nil {
			startup = append(startup, c.cfg.Startup.Median)
		}
		if c.cfg.Release != nil {
			release = append(release, c.cfg.Release.Median)
		}
	}
	med := func(xs []float64) *float64 {
		if v, err := measure.Median(xs); err == nil && len(xs) > 0 {
			return &v
		}
		return nil
	}
	st.MedianSteady, st.MedianFull, st.MedianStartup, st.MedianRelease = med(steady), med(full), med(startup), med(release)
	var bs, bf []float64 // the medians of the configurations with both bases
	for _, i := range both {
		c := cfgs[keys[i]]
		bs, bf = append(bs, c.cfg.Steady.Median), append(bf, c.cfg.Full.Median)
	}
	st.Ratio, st.RatioConfigs = ratio(bs, bf, &st.Notes), len(both)
	for j, r := range measure.Ranks(steady) {
		cfgs[keys[si[j]]].cfg.SteadyRank = &r
	}
	for j, r := range measure.Ranks(full) {
		cfgs[keys[fi[j]]].cfg.FullRank = &r
	}
	for _, k := range keys {
		st.Configs = append(st.Configs, cfgs[k].cfg)
	}
	rank := func(r *float64) float64 {
		if r == nil {
			return math.Inf(1)
		}
		return *r
	}
	slices.SortStableFunc(st.Configs, func(a, b Config) int {
		return cmp.Or(cmp.Compare(rank(a.SteadyRank), rank(b.SteadyRank)), cmp.Compare(rank(a.FullRank), rank(b.FullRank)),
			cmp.Compare(a.Model, b.Model), cmp.Compare(a.Engine, b.Engine))
	})
	switch rho, err := measure.Spearman(bs, bf); {
	case len(both) < 2:
		st.Notes = append(st.Notes, "Spearman needs at least 2 configurations with both bases")
	case err != nil:
		st.Notes = append(st.Notes, strings.Replace(err.Error(), "spearman: ", "Spearman: ", 1))
	default:
		st.Spearman = &rho
	}
	return st
}

// ratio is median(full) / median(steady) over the same configurations
// (those with both bases), so that both medians are of one set; a note
// says over how many, or why there is none.
func ratio(steady, full []float64, notes *[]string) *float64 {
	if len(steady) == 0 {
		return nil
	}
	ms, _ := measure.Median(steady)
	mf, _ := measure.Median(full)
	if ms <= 0 {
		*notes = append(*notes, "full / steady: median steady-state J/token is 0")
		return nil
	}
	r := mf / ms
	*notes = append(*notes, fmt.Sprintf("full / steady over the %d configuration(s) with both", len(steady)))
	return &r
}
