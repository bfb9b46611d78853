// Package compare is the cross-run analysis of the benchmark-1.5
// methodology: many evaluated runs grouped by scenario/task, size group,
// model and engine; vLLM vs SGLang pairs under the output-token rule;
// medians per scenario of steady-state and full-lifecycle J/token, their
// ratio and the Spearman rank correlation of the model orders; asiai runs
// per engine; and the lifecycle estimate E(N). Every threshold and metric
// name comes from a comparison profile (compare-1.5.yaml), not from Go.
//
// The package reads evaluated runs (archive metadata and results); loading
// and evaluating the archives is the caller's job.
package compare

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/internal/yamlstrict"
)

// BuiltinName is the name of the built-in comparison profile.
const BuiltinName = "compare-1.5"

//go:embed compare-1.5.yaml
var builtinYAML []byte

// Profile is a comparison profile: which results to read from each run, the
// flags that leave a run out of the statistics, and the comparability
// rules.
type Profile struct {
	Name        string `yaml:"name"`
	Version     int    `yaml:"version"`
	Description string `yaml:"description"`
	Spec        string `yaml:"spec"`
	// ScenarioLabels are run labels naming the scenario/task, in order of
	// preference.
	ScenarioLabels []string `yaml:"scenario_labels"`
	// ParamsLabel is the label (or engine.extra key) with the model's total
	// parameter count.
	ParamsLabel string       `yaml:"params_label"`
	Metrics     Metrics      `yaml:"metrics"`
	Flags       []FlagRule   `yaml:"flags"`
	Pairs       PairRule     `yaml:"pairs"`
	SizeGroups  []SizeGroup  `yaml:"size_groups"`
	Asiai       AsiaiRule    `yaml:"asiai"`
	Estimate    EstimateRule `yaml:"estimate"`
	// Configuration says which run.json fields make a configuration and
	// which of them are the load.
	Configuration ConfigRule `yaml:"configuration"`
	// NotApplicable lists the run.json reasons that make a run not
	// applicable (the model does not support the task) rather than failed.
	NotApplicable []NARule `yaml:"not_applicable"`

	// Source is the file the profile was read from (for messages).
	Source string `yaml:"-"`
}

// Metrics names the results read from each benchmark-1.5 run.
type Metrics struct {
	SteadyJPerToken string `yaml:"steady_j_per_token" json:"steady_j_per_token"`
	FullJPerToken   string `yaml:"full_j_per_token" json:"full_j_per_token"`
	StartupEnergyJ  string `yaml:"startup_energy_j" json:"startup_energy_j"`
	ReleaseEnergyJ  string `yaml:"release_energy_j" json:"release_energy_j"`
	OutputTokens    string `yaml:"output_tokens" json:"output_tokens"`
}

// Values a flag can remove from the statistics.
const (
	ValueSteady  = "steady"
	ValueFull    = "full"
	ValueStartup = "startup"
	ValueRelease = "release"
	// ValueAll removes the whole run.
	ValueAll = "all"
	// ValueNone removes nothing: the finding is shown with its reason.
	ValueNone = "none"
)

var valueNames = []string{ValueSteady, ValueFull, ValueStartup, ValueRelease, ValueAll}

// removalNames are the words of a flag rule's removes list.
var removalNames = append(slices.Clone(valueNames), ValueNone)

// ConfigRule names the run.json fields (dotted paths; a path naming an
// object stands for each of its fields) that make a configuration: runs
// equal on every one are repetitions of one configuration, runs that differ
// are different configurations, and compare shows the fields that differ
// as columns. Load fields are part of the configuration's key too, but
// are shown apart: runs that differ only in them are load points of one
// configuration (its frontier), never repetitions.
type ConfigRule struct {
	Fields []string `yaml:"fields"`
	Load   []string `yaml:"load"`
}

// NARule marks a run not applicable when its run.json reason matches
// Reason (a regular expression); Why is what compare says.
type NARule struct {
	Reason string `yaml:"reason"`
	Why    string `yaml:"why"`
	re     *regexp.Regexp
}

// FlagRule flags a run and says which of its values leave the statistics.
// Exactly one condition is set: a failed check by name (Check), any failed
// check of a severity (Severity), a metric above a threshold (Metric and
// Above), a run its profile excluded (Excluded), or a run whose status is
// not complete (Incomplete).
type FlagRule struct {
	Check      string   `yaml:"check"`
	Severity   string   `yaml:"severity"`
	Metric     string   `yaml:"metric"`
	Above      *float64 `yaml:"above"`
	Excluded   bool     `yaml:"excluded"`
	Incomplete bool     `yaml:"incomplete"`
	Flag       string   `yaml:"flag"`
	// Removes lists the values removed: steady, full, startup, release,
	// or all (the run is out of the statistics). A failed check removes
	// what its own declaration (the evaluated profile's invalidates) names
	// instead; Removes then only applies to a check that declares nothing
	// (results of an older profile), and may be left out.
	Removes []string `yaml:"removes"`
}

// PairRule pairs engines for the same model and scenario.
type PairRule struct {
	Engines [][]string `yaml:"engines"`
	// Tolerance is the largest |T1 - T2| / max(T1, T2) on total formal
	// output tokens for which a pair is compared.
	Tolerance float64 `yaml:"tolerance"`
	// Same lists run.json fields (dotted paths, e.g. engine.precision)
	// that must be equal for a pair to be compared.
	Same []string `yaml:"same"`
}

// SizeGroup is a range of total parameters: Max is an inclusive upper
// bound, Below an exclusive one; neither means "the rest" (last group only).
type SizeGroup struct {
	Name  string   `yaml:"name"`
	Max   *float64 `yaml:"max"`
	Below *float64 `yaml:"below"`
}

// AsiaiRule says which runs are asiai runs and which metrics they carry.
type AsiaiRule struct {
	Profiles      []string     `yaml:"profiles"`
	Metrics       AsiaiMetrics `yaml:"metrics"`
	StableCVPct   float64      `yaml:"stable_cv_pct"`
	VariableCVPct float64      `yaml:"variable_cv_pct"`
}

// AsiaiMetrics names the asiai results (M1, M1 mean, M8, M6, M7, stability).
type AsiaiMetrics struct {
	TokS      string `yaml:"tok_s"`
	TokSMean  string `yaml:"tok_s_mean"`
	TokSStd   string `yaml:"tok_s_std"`
	PowerW    string `yaml:"power_w"`
	TokSPerW  string `yaml:"tok_s_per_w"`
	Stability string `yaml:"stability"`
}

// EstimateRule names the results the lifecycle estimate needs and the
// overhead shares to report.
type EstimateRule struct {
	Metrics        EstimateMetrics `yaml:"metrics"`
	OverheadShares []float64       `yaml:"overhead_shares"`
}

// EstimateMetrics names the results of one run used by the estimate.
type EstimateMetrics struct {
	StartupJ      string `yaml:"startup_j"`
	ReleaseJ      string `yaml:"release_j"`
	SteadyEnergyJ string `yaml:"steady_energy_j"`
	// SteadyRequests is the requests whose tokens fall in the steady
	// window, each counted by its share of tokens there.
	SteadyRequests string `yaml:"steady_requests"`
}

// Builtin returns the built-in comparison profile (a test keeps it valid).
func Builtin() (*Profile, error) {
	p, err := Load(builtinYAML, BuiltinName+".yaml (built-in)")
	if err != nil {
		return nil, fmt.Errorf("built-in comparison profile: %w", err)
	}
	return p, nil
}

// BuiltinYAML returns the built-in profile's YAML.
func BuiltinYAML() []byte { return append([]byte(nil), builtinYAML...) }

// ReadProfile loads a comparison profile: "" or the built-in's name gives the
// built-in; anything else is read as a file.
func ReadProfile(nameOrPath string) (*Profile, error) {
	if nameOrPath == "" || nameOrPath == BuiltinName {
		return Builtin()
	}
	b, err := os.ReadFile(nameOrPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("comparison profile %q: no such file (built-in: %s)", nameOrPath, BuiltinName)
		}
		return nil, fmt.Errorf("read comparison profile: %w", err)
	}
	return Load(b, nameOrPath)
}

// Load parses and validates a comparison profile. Unknown keys, wrong types
// and invalid values are errors at their positions (`file:line:col: where:
// what`), all reported together as a yamlstrict.ErrorList.
func Load(src []byte, file string) (*Profile, error) {
	d := yamlstrict.New(file)
	root, ok := d.Parse(src)
	if !ok {
		return nil, d.Err()
	}
	p := &Profile{Source: file}
	d.Strict(root, p, "")
	if d.OK() {
		p.validate(d, root)
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

// validate checks values the types cannot, with the position of each: a
// validator per section.
func (p *Profile) validate(d *yamlstrict.Decoder, root *yaml.Node) {
	if strings.TrimSpace(p.Name) == "" {
		d.Errorf(root, "name", "required")
	}
	p.validateMetrics(d, root)
	p.validateFlags(d, root)
	p.validateConfig(d, root)
	p.validatePairs(d, root)
	p.validateSizeGroups(d, root)
	p.validateAsiai(d, root)
	p.validateEstimate(d, root)
}

// validateMetrics checks that every metric the tables read is named.
func (p *Profile) validateMetrics(d *yamlstrict.Decoder, root *yaml.Node) {
	at := func(path ...string) *yaml.Node { return yamlstrict.NodeAt(root, path...) }
	for _, m := range []struct{ key, v string }{
		{"steady_j_per_token", p.Metrics.SteadyJPerToken},
		{"full_j_per_token", p.Metrics.FullJPerToken},
		{"startup_energy_j", p.Metrics.StartupEnergyJ},
		{"release_energy_j", p.Metrics.ReleaseEnergyJ},
		{"output_tokens", p.Metrics.OutputTokens},
	} {
		if strings.TrimSpace(m.v) == "" {
			d.Errorf(yamlstrict.FirstNode(at("metrics", m.key), at("metrics"), root), "metrics."+m.key, "required: the name of a metric of the evaluated profile")
		}
	}
}

// validateFlags checks each flag: one condition, a name, what it removes.
func (p *Profile) validateFlags(d *yamlstrict.Decoder, root *yaml.Node) {
	at := func(path ...string) *yaml.Node { return yamlstrict.NodeAt(root, path...) }
	for i, f := range p.Flags {
		n := at("flags", fmt.Sprint(i))
		where := fmt.Sprintf("flags[%d]", i)
		set := 0
		for _, on := range []bool{f.Check != "", f.Severity != "", f.Metric != "" || f.Above != nil, f.Excluded, f.Incomplete} {
			if on {
				set++
			}
		}
		if set != 1 {
			d.Errorf(n, where, "set exactly one of check: NAME, severity: LEVEL, metric: NAME with above: N, excluded: true, incomplete: true")
		}
		if (f.Metric != "") != (f.Above != nil) {
			d.Errorf(n, where, "metric and above go together (a metric above a threshold)")
		}
		if f.Above != nil && (math.IsNaN(*f.Above) || math.IsInf(*f.Above, 0)) {
			d.Errorf(n, where, "above must be a finite number, got %v", *f.Above)
		}
		if strings.TrimSpace(f.Flag) == "" {
			d.Errorf(n, where, "flag: required (the name shown next to a flagged run)")
		}
		if len(f.Removes) == 0 && f.Check == "" {
			d.Errorf(n, where, "removes: required, a list of %s (a check's rule may leave it out: the check's own invalidates decides)", strings.Join(removalNames, ", "))
		}
		for _, v := range f.Removes {
			if !slices.Contains(removalNames, v) {
				d.Errorf(yamlstrict.FirstNode(at("flags", fmt.Sprint(i), "removes"), n), where, "removes: unknown value %q (valid: %s)", v, strings.Join(removalNames, ", "))
			}
		}
		if slices.Contains(f.Removes, ValueNone) && len(f.Removes) > 1 {
			d.Errorf(yamlstrict.FirstNode(at("flags", fmt.Sprint(i), "removes"), n), where, "removes: none goes alone (the finding is shown and removes nothing)")
		}
	}
}

// validatePairs checks the engine pairs: the fields they must share, the
// tolerance, the engine kinds.
func (p *Profile) validatePairs(d *yamlstrict.Decoder, root *yaml.Node) {
	at := func(path ...string) *yaml.Node { return yamlstrict.NodeAt(root, path...) }
	for i, f := range p.Pairs.Same {
		if !dottedField(f) {
			d.Errorf(yamlstrict.FirstNode(at("pairs", "same", fmt.Sprint(i)), at("pairs"), root), fmt.Sprintf("pairs.same[%d]", i), "expected a dotted run.json field such as engine.precision, got %q", f)
		}
	}
	tol := p.Pairs.Tolerance
	if math.IsNaN(tol) || tol < 0 || tol > 1 {
		d.Errorf(yamlstrict.FirstNode(at("pairs", "tolerance"), at("pairs"), root), "pairs.tolerance", "must be a fraction in [0, 1], got %v", tol)
	}
	for i, e := range p.Pairs.Engines {
		n := yamlstrict.FirstNode(at("pairs", "engines", fmt.Sprint(i)), at("pairs"), root)
		if len(e) != 2 || strings.TrimSpace(e[0]) == "" || strings.TrimSpace(e[1]) == "" || strings.EqualFold(e[0], e[1]) {
			d.Errorf(n, fmt.Sprintf("pairs.engines[%d]", i), "expected two different engine kinds, e.g. [vllm, sglang]")
		}
	}
}

// validateSizeGroups checks the size groups: named, bounds increasing,
// the last one unbounded.
func (p *Profile) validateSizeGroups(d *yamlstrict.Decoder, root *yaml.Node) {
	at := func(path ...string) *yaml.Node { return yamlstrict.NodeAt(root, path...) }
	prev := math.Inf(-1)
	for i, g := range p.SizeGroups {
		n := yamlstrict.FirstNode(at("size_groups", fmt.Sprint(i)), root)
		where := fmt.Sprintf("size_groups[%d]", i)
		if strings.TrimSpace(g.Name) == "" {
			d.Errorf(n, where, "name: required")
		}
		last := i == len(p.SizeGroups)-1
		switch {
		case g.Max != nil && g.Below != nil:
			d.Errorf(n, where, "set max (inclusive) or below (exclusive), not both")
		case g.Max == nil && g.Below == nil && !last:
			d.Errorf(n, where, "only the last group may have no bound (it takes the rest)")
		case g.Max == nil && g.Below == nil:
		default:
			b := g.bound()
			if math.IsNaN(b) || math.IsInf(b, 0) || b <= 0 {
				d.Errorf(n, where, "bound must be a positive number of parameters, got %v", b)
			} else if b <= prev {
				d.Errorf(n, where, "bounds must increase from group to group (%v after %v)", b, prev)
			}
			prev = b
			if last {
				d.Errorf(n, where, "the last group must have no bound, so that every model has a group")
			}
		}
	}
}

// validateAsiai checks the asiai stability thresholds.
func (p *Profile) validateAsiai(d *yamlstrict.Decoder, root *yaml.Node) {
	at := func(path ...string) *yaml.Node { return yamlstrict.NodeAt(root, path...) }
	a := p.Asiai
	if len(a.Profiles) > 0 && (a.StableCVPct <= 0 || a.VariableCVPct <= a.StableCVPct || math.IsNaN(a.StableCVPct) || math.IsNaN(a.VariableCVPct)) {
		d.Errorf(yamlstrict.FirstNode(at("asiai"), root), "asiai", "need 0 < stable_cv_pct < variable_cv_pct, got %v and %v", a.StableCVPct, a.VariableCVPct)
	}
}

// validateEstimate checks the estimate's overhead shares.
func (p *Profile) validateEstimate(d *yamlstrict.Decoder, root *yaml.Node) {
	at := func(path ...string) *yaml.Node { return yamlstrict.NodeAt(root, path...) }
	for i, s := range p.Estimate.OverheadShares {
		if math.IsNaN(s) || s <= 0 || s >= 1 {
			d.Errorf(yamlstrict.FirstNode(at("estimate", "overhead_shares", fmt.Sprint(i)), at("estimate"), root),
				fmt.Sprintf("estimate.overhead_shares[%d]", i), "must be a fraction in (0, 1), got %v", s)
		}
	}
}

// validateConfig checks the configuration fields and the not-applicable
// rules (compiling their expressions).
func (p *Profile) validateConfig(d *yamlstrict.Decoder, root *yaml.Node) {
	at := func(path ...string) *yaml.Node { return yamlstrict.NodeAt(root, path...) }
	for _, l := range []struct {
		key    string
		fields []string
	}{{"fields", p.Configuration.Fields}, {"load", p.Configuration.Load}} {
		for i, f := range l.fields {
			if !dottedField(f) {
				d.Errorf(yamlstrict.FirstNode(at("configuration", l.key, fmt.Sprint(i)), at("configuration"), root),
					fmt.Sprintf("configuration.%s[%d]", l.key, i), "expected a dotted run.json field such as parameters or engine.precision, got %q", f)
			}
		}
	}
	for i := range p.NotApplicable {
		r := &p.NotApplicable[i]
		n := yamlstrict.FirstNode(at("not_applicable", fmt.Sprint(i)), root)
		where := fmt.Sprintf("not_applicable[%d]", i)
		if strings.TrimSpace(r.Reason) == "" || strings.TrimSpace(r.Why) == "" {
			d.Errorf(n, where, "reason (a regular expression over run.json's reason) and why (what compare says) are required")
			continue
		}
		re, err := regexp.Compile(r.Reason)
		if err != nil {
			d.Errorf(yamlstrict.FirstNode(at("not_applicable", fmt.Sprint(i), "reason"), n), where, "reason: %v", err)
			continue
		}
		r.re = re
	}
}

func dottedField(f string) bool {
	return strings.TrimSpace(f) != "" && !strings.Contains(f, "..") && !strings.HasPrefix(f, ".") && !strings.HasSuffix(f, ".")
}

// NotApplicableReason says why a run that did not complete for this
// reason (run.json's) is not applicable: its reason matches a
// not_applicable rule. ok is false otherwise.
func (p *Profile) NotApplicableReason(reason string) (why string, ok bool) {
	if strings.TrimSpace(reason) == "" {
		return "", false
	}
	for _, r := range p.NotApplicable {
		if r.re != nil && r.re.MatchString(reason) {
			return r.Why, true
		}
	}
	return "", false
}

func (g SizeGroup) bound() float64 {
	if g.Max != nil {
		return *g.Max
	}
	if g.Below != nil {
		return *g.Below
	}
	return math.Inf(1)
}

// SizeGroupOf returns the name of the size group of a parameter count.
func (p *Profile) SizeGroupOf(params float64) string {
	for _, g := range p.SizeGroups {
		switch {
		case g.Max != nil:
			if params <= *g.Max {
				return g.Name
			}
		case g.Below != nil:
			if params < *g.Below {
				return g.Name
			}
		default:
			return g.Name
		}
	}
	return UnknownGroup
}

// sizeGroupIndex orders groups as the profile lists them; unknown last.
func (p *Profile) sizeGroupIndex(name string) int {
	for i, g := range p.SizeGroups {
		if g.Name == name {
			return i
		}
	}
	return len(p.SizeGroups)
}

// isAsiai reports whether a run evaluated with profile name is an asiai run.
func (p *Profile) isAsiai(profile string) bool {
	for _, n := range p.Asiai.Profiles {
		if n == profile {
			return true
		}
	}
	return false
}
