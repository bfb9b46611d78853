package campaign

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/telemetry/gpusettings"
)

// Search kinds.
const (
	// SearchSweep measures a synchronous point (concurrency 1), a
	// throughput point (all at once), then rates spaced between the two
	// measured request rates, and stops climbing at the first
	// over-saturated point (GuideLLM's sweep).
	SearchSweep = "sweep"
	// SearchSLO bisects the load (concurrency or rate) for the highest one
	// whose SLO attainment reaches the target (vLLM's serve_sla).
	SearchSLO = "slo"
)

// Search is a campaign's `search:` section: instead of the load axis, each
// combination of the other axes gets a search over the load, each point a
// full run with its own archive.
type Search struct {
	// Kind is sweep or slo.
	Kind string `yaml:"kind"`
	// Points is the number of rates of a sweep between the synchronous
	// and the throughput point (default 4).
	Points int `yaml:"points"`
	// RateMode is the profile's mode of a rate point (default: the load
	// shape whose role is a rate, loadgen.RoleRate).
	RateMode string `yaml:"rate_mode"`
	// MinAchieved: a point whose achieved request rate is below this share
	// of the offered one is over-saturated (default 0.95).
	MinAchieved float64 `yaml:"min_achieved"`
	// TTFTGrowth: a point whose median TTFT over the last third of its
	// requests (by send time) exceeds the first third's by more than this
	// factor is over-saturated (default 2).
	TTFTGrowth float64 `yaml:"ttft_growth"`
	// Over is what an slo search varies: concurrency (default) or rate.
	Over string `yaml:"over"`
	// Low and High bound an slo search (defaults: 1 and 256 for
	// concurrency; required for rate).
	Low  float64 `yaml:"low"`
	High float64 `yaml:"high"`
	// Tolerance: an slo search stops when the bracket is this narrow
	// (default 1 for concurrency, (high-low)/16 for rate).
	Tolerance float64 `yaml:"tolerance"`
	// MaxRuns bounds the runs of an slo search per combination (default 10).
	MaxRuns int `yaml:"max_runs"`
	// Attainment is the SLO attainment a load must reach (default 0.99).
	Attainment float64 `yaml:"attainment"`
	// SLO holds the bounds a request must meet (unset: not applied);
	// at least one is required by an slo search.
	SLO SLOBounds `yaml:"slo"`
	// Load is the fixed load of an slo search over the GPU power limit
	// (over: gpu_power_limit_w; searchcap.go).
	Load *CapLoad `yaml:"load"`
	// SteadyRequests gives each point the request count steady state
	// needs (run --steady-requests: request_count raised to window ×
	// min_windows).
	SteadyRequests bool `yaml:"steady_requests"`
}

// SLOBounds are per-request latency bounds in milliseconds; 0 is unset.
type SLOBounds struct {
	TTFTMs float64 `yaml:"ttft_ms"`
	TPOTMs float64 `yaml:"tpot_ms"`
	E2EMs  float64 `yaml:"e2e_ms"`
}

// Searching reports whether the campaign has a search section.
func (c *Campaign) Searching() bool { return c.Search.Kind != "" }

func (b SLOBounds) set() bool { return b.TTFTMs > 0 || b.TPOTMs > 0 || b.E2EMs > 0 }

// validateSearch checks the search section, with positions, and fills its
// defaults.
func (c *Campaign) validateSearch(d *errSink, root *yaml.Node) {
	s := &c.Search
	if nodeAt(root, "search") == nil {
		return
	}
	at := func(path ...string) *yaml.Node {
		if n := nodeAt(root, append([]string{"search"}, path...)...); n != nil {
			return n
		}
		return nodeAt(root, "search")
	}
	if len(c.Matrix.Load) > 0 {
		d.Errorf(nodeAt(root, "matrix", "load"), "matrix.load", "a campaign with a search section has no load axis: the search chooses the loads")
	}
	// YAML reads .nan and .inf as floats: refused here, they would pass
	// the range checks below (every comparison with NaN is false) and
	// fail the sweep when its plan is written as JSON.
	for _, f := range []struct {
		key string
		v   *float64
	}{{"low", &s.Low}, {"high", &s.High}, {"tolerance", &s.Tolerance}, {"min_achieved", &s.MinAchieved},
		{"ttft_growth", &s.TTFTGrowth}, {"attainment", &s.Attainment},
		{"slo.ttft_ms", &s.SLO.TTFTMs}, {"slo.tpot_ms", &s.SLO.TPOTMs}, {"slo.e2e_ms", &s.SLO.E2EMs}} {
		switch v := *f.v; {
		case math.IsNaN(v) || math.IsInf(v, 0):
			d.Errorf(at(strings.Split(f.key, ".")...), "search."+f.key, "must be a finite number, got %v", v)
			*f.v = 0 // checked no further
		case v < 0 && f.key != "min_achieved" && f.key != "ttft_growth" && f.key != "attainment":
			d.Errorf(at(strings.Split(f.key, ".")...), "search."+f.key, "must not be negative, got %v", v)
		}
	}
	if s.MinAchieved == 0 {
		s.MinAchieved = 0.95
	} else if s.MinAchieved < 0 || s.MinAchieved > 1 {
		d.Errorf(at("min_achieved"), "search.min_achieved", "must be in (0, 1], got %v", s.MinAchieved)
	}
	if s.TTFTGrowth == 0 {
		s.TTFTGrowth = 2
	} else if s.TTFTGrowth < 1 {
		d.Errorf(at("ttft_growth"), "search.ttft_growth", "must be at least 1 (a factor), got %v", s.TTFTGrowth)
	}
	if s.Attainment == 0 {
		s.Attainment = 0.99
	} else if s.Attainment < 0 || s.Attainment > 1 {
		d.Errorf(at("attainment"), "search.attainment", "must be in (0, 1], got %v", s.Attainment)
	}
	if s.RateMode == "" {
		s.RateMode = string(loadgen.Shapes().Role(loadgen.RoleRate))
	}
	switch s.Kind {
	case SearchSweep:
		if s.Points == 0 {
			s.Points = 4
		} else if s.Points < 1 || s.Points > 50 {
			d.Errorf(at("points"), "search.points", "must be in [1, 50], got %d", s.Points)
		}
	case SearchSLO:
		c.validateSLOSearch(d, at)
	default:
		d.Errorf(at("kind"), "search.kind", "expected sweep or slo, got %q", s.Kind)
	}
}

// maxSearchConcurrency bounds an slo search over concurrency: a million
// requests in flight is beyond any server, and the bound keeps the load an
// int.
const maxSearchConcurrency = 1_000_000

func (c *Campaign) validateSLOSearch(d *errSink, at func(path ...string) *yaml.Node) {
	s := &c.Search
	if !s.SLO.set() {
		d.Errorf(at("slo"), "search.slo", "an slo search needs at least one bound: ttft_ms, tpot_ms or e2e_ms")
	}
	if s.MaxRuns == 0 {
		s.MaxRuns = 10
	} else if s.MaxRuns < 2 || s.MaxRuns > 100 {
		d.Errorf(at("max_runs"), "search.max_runs", "must be in [2, 100], got %d", s.MaxRuns)
	}
	switch s.Over {
	case "", overConcurrency:
		s.Over = overConcurrency
		if s.Low == 0 {
			s.Low = 1
		}
		if s.High == 0 {
			s.High = 256
		}
		if s.Tolerance == 0 {
			s.Tolerance = 1
		}
		if s.Low != math.Trunc(s.Low) || s.High != math.Trunc(s.High) {
			d.Errorf(at("low"), "search.low", "concurrency bounds must be whole numbers, got %v and %v", s.Low, s.High)
		}
		if s.Low < 1 {
			d.Errorf(at("low"), "search.low", "concurrency must be at least 1, got %v", s.Low)
		}
		if s.High > maxSearchConcurrency {
			d.Errorf(at("high"), "search.high", "concurrency must be at most %d, got %v", maxSearchConcurrency, s.High)
		}
	case gpusettings.ParamPowerLimit:
		c.validateCapSearch(d, at)
	case overRate:
		if s.Low <= 0 || s.High <= 0 {
			d.Errorf(at("high"), "search.high", "a rate search needs low and high, in requests/s, both above 0")
		}
		if s.Tolerance == 0 {
			s.Tolerance = (s.High - s.Low) / 16
		}
	default:
		d.Errorf(at("over"), "search.over", "expected concurrency, rate or %s, got %q", gpusettings.ParamPowerLimit, s.Over)
	}
	if s.High <= s.Low && s.High > 0 {
		d.Errorf(at("high"), "search.high", "must be above low (%v), got %v", s.Low, s.High)
	}
}

// The load parameters a search moves (search.over).
const (
	overConcurrency = loadgen.ParamConcurrency
	overRate        = loadgen.ParamRate
)

// inFlightPoint is n requests in flight (the load shape whose role it is).
func inFlightPoint(n int) LoadPoint {
	return LoadPoint{Mode: string(loadgen.Shapes().Role(loadgen.RoleInFlight)), Concurrency: n}
}

// allAtOncePoint sends every request at once (the load shape whose role
// it is): a sweep's throughput point.
func allAtOncePoint() LoadPoint {
	return LoadPoint{Mode: string(loadgen.Shapes().Role(loadgen.RoleAllAtOnce))}
}

// LoadPoint is one load point: the profile's mode with its concurrency or rate.
type LoadPoint struct {
	Mode        string  `json:"mode"`
	Concurrency int     `json:"concurrency,omitempty"`
	Rate        float64 `json:"rate,omitempty"`
	// PowerLimitW is the GPU power limit of a search over it (0: none).
	PowerLimitW float64 `json:"power_limit_w,omitempty"`
}

// Name is the load's axis value in run ids: c4, unlimited, r2.35.
func (l LoadPoint) Name() string {
	switch {
	case l.Mode == allAtOncePoint().Mode:
		return l.Mode + capName(l.PowerLimitW)
	case l.Concurrency > 0:
		return "c" + strconv.Itoa(l.Concurrency) + capName(l.PowerLimitW)
	default:
		return "r" + strconv.FormatFloat(l.Rate, 'g', -1, 64) + capName(l.PowerLimitW)
	}
}

// sets are the --set values of the load.
func (l LoadPoint) sets() map[string]string {
	m := map[string]string{loadgen.ParamMode: l.Mode}
	if l.Concurrency > 0 {
		m[loadgen.ParamConcurrency] = strconv.Itoa(l.Concurrency)
	}
	if l.Rate > 0 {
		m[loadgen.ParamRate] = strconv.FormatFloat(l.Rate, 'g', -1, 64)
	}
	if l.PowerLimitW > 0 {
		m[gpusettings.ParamPowerLimit] = strconv.FormatFloat(l.PowerLimitW, 'f', -1, 64)
	}
	return m
}

// Measure is what a search reads from a point's run.
type Measure struct {
	// OK is false when the run did not complete (Reason says why).
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
	// AchievedRPS is the completion rate: (n-1) / (last done - first
	// done) over the successful formal requests.
	AchievedRPS float64 `json:"achieved_rps"`
	// OfferedRPS is the send rate: (n-1) / (last sent - first sent) over
	// the formal requests; 0 when they were all sent at once.
	OfferedRPS float64 `json:"offered_rps,omitempty"`
	// TTFTGrowth is the median TTFT of the last third of the successful
	// formal requests (by send time) over the first third's; 0 when
	// unknown.
	TTFTGrowth float64 `json:"ttft_growth,omitempty"`
	// Attainment is the share of successful formal requests meeting the
	// SLO; -1 when no SLO is set.
	Attainment float64 `json:"slo_attainment"`
}

// Decision is one step of a search: the point measured, what was decided
// from it, and what comes next.
type Decision struct {
	// Group names the combination searched (its axis values).
	Group   string    `json:"group"`
	Step    int       `json:"step"`
	Load    LoadPoint `json:"load"`
	Run     string    `json:"run"`
	Dir     string    `json:"dir,omitempty"`
	Measure Measure   `json:"measure"`
	Reason  string    `json:"reason"`
	Next    string    `json:"next"`
}

// Probe measures one load point (a full run, or a fake in tests).
type Probe func(ctx context.Context, l LoadPoint) (Measure, error)

// saturated applies the over-saturation rule to a rate point.
func (s *Search) saturated(m Measure) (bool, string) {
	if !m.OK {
		return true, "run failed: " + m.Reason
	}
	if m.OfferedRPS > 0 && m.AchievedRPS < s.MinAchieved*m.OfferedRPS {
		return true, fmt.Sprintf("over-saturated: achieved %.3g req/s < %.0f %% of offered %.3g req/s", m.AchievedRPS, s.MinAchieved*100, m.OfferedRPS)
	}
	if m.TTFTGrowth > s.TTFTGrowth {
		return true, fmt.Sprintf("over-saturated: median TTFT of the last third %.2f× the first third's (> %.2f×)", m.TTFTGrowth, s.TTFTGrowth)
	}
	return false, fmt.Sprintf("keeps up: achieved %.3g of offered %.3g req/s, TTFT growth %.2f×", m.AchievedRPS, m.OfferedRPS, m.TTFTGrowth)
}

// roundRate keeps 3 significant digits, so that a rate is the same --set
// value (and run id) each time the search computes it.
func roundRate(r float64) float64 {
	if r <= 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(r, 'g', 3, 64), 64)
	return v
}

// RunSweep runs a sweep: concurrency 1, all at once, then Points rates
// evenly spaced strictly between the two measured request rates, lowest
// first, stopping at the first over-saturated one. emit gets each decision
// as it is made.
func (s *Search) RunSweep(ctx context.Context, probe Probe, emit func(Decision) error) error {
	step := 0
	do := func(l LoadPoint, decide func(Measure) (reason, next string, stop bool)) (Measure, bool, error) {
		step++
		m, err := probe(ctx, l)
		if err != nil {
			return m, true, err
		}
		reason, next, stop := decide(m)
		return m, stop, emit(Decision{Step: step, Load: l, Measure: m, Reason: reason, Next: next})
	}
	sync, stop, err := do(inFlightPoint(1), func(m Measure) (string, string, bool) {
		if !m.OK {
			return "synchronous point failed: " + m.Reason, "stop", true
		}
		return fmt.Sprintf("synchronous point: %.3g req/s", m.AchievedRPS), allAtOncePoint().Name() + " (throughput point)", false
	})
	if err != nil || stop {
		return err
	}
	thr, stop, err := do(allAtOncePoint(), func(m Measure) (string, string, bool) {
		if !m.OK {
			return "throughput point failed: " + m.Reason, "stop", true
		}
		return fmt.Sprintf("throughput point: %.3g req/s", m.AchievedRPS), fmt.Sprintf("%d rates between %.3g and %.3g req/s", s.Points, sync.AchievedRPS, m.AchievedRPS), false
	})
	if err != nil || stop {
		return err
	}
	rates := sweepRates(sync.AchievedRPS, thr.AchievedRPS, s.Points)
	for i, r := range rates {
		_, stop, err := do(LoadPoint{Mode: s.RateMode, Rate: r}, func(m Measure) (string, string, bool) {
			sat, why := s.saturated(m)
			switch {
			case sat:
				return why, "stop climbing", true
			case i+1 < len(rates):
				return why, fmt.Sprintf("rate %.3g req/s", rates[i+1]), false
			}
			return why, "done", false
		})
		if err != nil || stop {
			return err
		}
	}
	return nil
}

// sweepRates are n rates evenly spaced strictly between lo and hi (rounded
// to 3 significant digits, duplicates dropped); none when hi ≤ lo.
func sweepRates(lo, hi float64, n int) []float64 {
	var out []float64
	if !(hi > lo) || lo <= 0 {
		return nil
	}
	for i := 1; i <= n; i++ {
		r := roundRate(lo + (hi-lo)*float64(i)/float64(n+1))
		if len(out) == 0 || r > out[len(out)-1] {
			out = append(out, r)
		}
	}
	return out
}

// SLOResult is the outcome of an slo search: the highest load found that
// meets the SLO, if any.
type SLOResult struct {
	Found bool
	Load  LoadPoint
}

// RunSLO bisects between Low and High for the highest load whose SLO
// attainment reaches Attainment, until the bracket is within Tolerance or
// MaxRuns runs are spent. A failed run counts as not meeting the SLO.
func (s *Search) RunSLO(ctx context.Context, probe Probe, emit func(Decision) error) (SLOResult, error) {
	if s.Over == gpusettings.ParamPowerLimit {
		return s.runSLOCap(ctx, probe, emit)
	}
	load := func(x float64) LoadPoint {
		if s.Over == overRate {
			return LoadPoint{Mode: s.RateMode, Rate: roundRate(x)}
		}
		return inFlightPoint(int(x))
	}
	step := 0
	meets := func(x float64, next func(ok bool) string) (bool, error) {
		return s.measurePoint(ctx, probe, emit, &step, load(x), next)
	}
	lo, hi := s.Low, s.High
	ok, err := meets(lo, func(ok bool) string {
		if ok {
			return fmt.Sprintf("high bound %s", load(hi).Name())
		}
		return "stop: the SLO is not met even at the low bound"
	})
	if err != nil || !ok {
		return SLOResult{}, err
	}
	ok, err = meets(hi, func(ok bool) string {
		if ok {
			return "stop: the SLO is met at the high bound"
		}
		return fmt.Sprintf("bisect %s..%s", load(lo).Name(), load(hi).Name())
	})
	if err != nil {
		return SLOResult{}, err
	}
	if ok {
		return SLOResult{Found: true, Load: load(hi)}, nil
	}
	for step < s.MaxRuns && hi-lo > s.Tolerance {
		mid := s.mid(lo, hi)
		if mid <= lo || mid >= hi {
			break
		}
		ok, err := meets(mid, func(ok bool) string {
			nlo, nhi := lo, hi
			if ok {
				nlo = mid
			} else {
				nhi = mid
			}
			if step >= s.MaxRuns || nhi-nlo <= s.Tolerance || s.mid(nlo, nhi) <= nlo {
				return fmt.Sprintf("stop: highest load meeting the SLO %s (bracket %s..%s)", load(nlo).Name(), load(nlo).Name(), load(nhi).Name())
			}
			return fmt.Sprintf("bisect %s..%s", load(nlo).Name(), load(nhi).Name())
		})
		if err != nil {
			return SLOResult{}, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return SLOResult{Found: true, Load: load(lo)}, nil
}

// measurePoint runs one point of a search (step counts them) and emits
// the decision: whether its SLO attainment reaches the target (a failed
// run does not), why, and what comes next (next of that answer).
func (s *Search) measurePoint(ctx context.Context, probe Probe, emit func(Decision) error, step *int, l LoadPoint, next func(ok bool) string) (bool, error) {
	*step++
	m, err := probe(ctx, l)
	if err != nil {
		return false, err
	}
	ok := m.OK && m.Attainment >= s.Attainment
	reason := fmt.Sprintf("attainment %.4g %s target %.4g", m.Attainment, map[bool]string{true: "≥", false: "<"}[ok], s.Attainment)
	if !m.OK {
		reason = "run failed (counts as not meeting the SLO): " + m.Reason
	}
	return ok, emit(Decision{Step: *step, Load: l, Measure: m, Reason: reason, Next: next(ok)})
}

// mid is the bisection point: the integer midpoint for concurrency, the
// rounded arithmetic one for a rate.
func (s *Search) mid(lo, hi float64) float64 {
	if s.Over == overRate {
		return roundRate((lo + hi) / 2)
	}
	return math.Floor((lo + hi) / 2)
}
