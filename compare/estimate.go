package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Caveat is printed with every lifecycle estimate (benchmark-1.5
// methodology, "Repetition and statistics").
const Caveat = "Estimate, not a measurement: E(N) applies only when load and configuration match the measured run, " +
	"and it excludes idle gaps between requests; measured values take precedence."

// Estimate is the lifecycle estimate of one run:
// E(N) = E_startup + N·e_ss + E_release, with e_ss the steady-state GPU
// energy per request: the steady window's energy over the requests whose
// tokens fall in the window, each counted by the share of its output tokens
// generated there. Then e_ss = steady-state J/token × the window's mean
// output tokens per request, consistently with steady-state J/token.
type Estimate struct {
	RunID     string  `json:"run_id"`
	Dir       string  `json:"dir"`
	Simulated bool    `json:"simulated"`
	StartupJ  float64 `json:"startup_energy_j"`
	ReleaseJ  float64 `json:"release_energy_j"`
	// FixedJ is E_startup + E_release.
	FixedJ         float64 `json:"fixed_energy_j"`
	SteadyEnergyJ  float64 `json:"steady_window_energy_j"`
	SteadyRequests float64 `json:"steady_window_requests"`
	// PerRequestJ is e_ss.
	PerRequestJ float64             `json:"steady_energy_per_request_j"`
	Points      []EstimatePoint     `json:"points"`
	Thresholds  []OverheadThreshold `json:"overhead_thresholds"`
	Flags       []Flag              `json:"flags"`
	Caveat      string              `json:"caveat"`
}

// EstimatePoint is E(N) for one N.
type EstimatePoint struct {
	N       int64   `json:"n"`
	EnergyJ float64 `json:"energy_j"`
	// FixedPerRequestJ is (E_startup + E_release) / N.
	FixedPerRequestJ float64 `json:"fixed_overhead_per_request_j"`
	// PerRequestJ is E(N) / N.
	PerRequestJ float64 `json:"energy_per_request_j"`
	// FixedShare is the fixed overhead's share of E(N).
	FixedShare float64 `json:"fixed_share"`
}

// OverheadThreshold is the smallest N at which the fixed overhead per
// request is under Share of the energy per request E(N)/N.
type OverheadThreshold struct {
	Share float64 `json:"share"`
	// N is 0 when no N reaches it (Note says why).
	N    int64  `json:"n"`
	Note string `json:"note,omitempty"`
}

// maxN bounds the N reported (beyond it float64 counts are inexact).
const maxN = 1 << 53

// Lifecycle computes E(N) at each N and the overhead thresholds. Energies
// must be finite and ≥ 0, e_ss > 0 and every N ≥ 1.
func Lifecycle(startupJ, releaseJ, perRequestJ float64, ns []int64, shares []float64) ([]EstimatePoint, []OverheadThreshold, error) {
	for _, v := range []struct {
		name string
		v    float64
	}{{"startup energy", startupJ}, {"release energy", releaseJ}, {"steady energy per request", perRequestJ}} {
		if math.IsNaN(v.v) || math.IsInf(v.v, 0) || v.v < 0 {
			return nil, nil, fmt.Errorf("%s is %v; need a finite number ≥ 0", v.name, v.v)
		}
	}
	if perRequestJ == 0 {
		return nil, nil, fmt.Errorf("steady energy per request is 0")
	}
	fixed := startupJ + releaseJ
	points := make([]EstimatePoint, 0, len(ns))
	for _, n := range ns {
		if n < 1 || n > maxN {
			return nil, nil, fmt.Errorf("request count N = %d: need 1 ≤ N ≤ %d", n, int64(maxN))
		}
		e := fixed + float64(n)*perRequestJ
		points = append(points, EstimatePoint{N: n, EnergyJ: e, FixedPerRequestJ: fixed / float64(n),
			PerRequestJ: e / float64(n), FixedShare: share(fixed, perRequestJ, n)})
	}
	ths := make([]OverheadThreshold, 0, len(shares))
	for _, x := range shares {
		if math.IsNaN(x) || x <= 0 || x >= 1 {
			return nil, nil, fmt.Errorf("overhead share %v: need a fraction in (0, 1)", x)
		}
		ths = append(ths, threshold(fixed, perRequestJ, x))
	}
	return points, ths, nil
}

// share is the fixed overhead's share of E(N): F / (F + N·e).
func share(fixed, e float64, n int64) float64 {
	if fixed == 0 {
		return 0
	}
	return fixed / (fixed + float64(n)*e)
}

// threshold finds the smallest N ≥ 1 with share(N) < x:
// F/(F + N·e) < x  ⇔  N > F·(1 − x)/(x·e).
func threshold(fixed, e, x float64) OverheadThreshold {
	th := OverheadThreshold{Share: x}
	bound := fixed * (1 - x) / (x * e)
	if math.IsNaN(bound) || math.IsInf(bound, 0) || bound >= maxN-2 {
		th.Note = fmt.Sprintf("more than %d requests", int64(maxN))
		return th
	}
	n := max(1, int64(math.Floor(bound))+1)
	// The closed form is exact up to rounding; settle it on share itself.
	for n > 1 && share(fixed, e, n-1) < x {
		n--
	}
	for share(fixed, e, n) >= x {
		n++
	}
	th.N = n
	return th
}

// EstimateRun computes the lifecycle estimate of an evaluated run.
func (p *Profile) EstimateRun(r Run, ns []int64) (*Estimate, error) {
	m := p.Estimate.Metrics
	get := func(name string) (float64, error) {
		v, ok, note := number(r.Results, name)
		if !ok {
			return 0, fmt.Errorf("%s: cannot estimate: %s", r.Dir, note)
		}
		return v, nil
	}
	est := &Estimate{RunID: r.Meta.RunID, Dir: r.Dir, Simulated: r.Meta.Simulated, Caveat: Caveat, Flags: p.flagsOf(r)}
	if est.Flags == nil {
		est.Flags = []Flag{}
	}
	var err error
	if est.StartupJ, err = get(m.StartupJ); err != nil {
		return nil, err
	}
	if est.ReleaseJ, err = get(m.ReleaseJ); err != nil {
		return nil, err
	}
	if est.SteadyEnergyJ, err = get(m.SteadyEnergyJ); err != nil {
		return nil, err
	}
	if est.SteadyRequests, err = get(m.SteadyRequests); err != nil {
		return nil, fmt.Errorf("%w (a run evaluated with an older profile: re-evaluate with --profile benchmark-1.5)", err)
	}
	if est.SteadyRequests <= 0 {
		return nil, fmt.Errorf("%s: cannot estimate: %s is %v; need requests in the steady window", r.Dir, m.SteadyRequests, est.SteadyRequests)
	}
	est.PerRequestJ = est.SteadyEnergyJ / est.SteadyRequests
	est.FixedJ = est.StartupJ + est.ReleaseJ
	est.Points, est.Thresholds, err = Lifecycle(est.StartupJ, est.ReleaseJ, est.PerRequestJ, ns, p.Estimate.OverheadShares)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot estimate: %w", r.Dir, err)
	}
	return est, nil
}

// ParseCounts reads "100,1000,1e4" into request counts ≥ 1.
func ParseCounts(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v != math.Trunc(v) || v < 1 || v > maxN {
			return nil, fmt.Errorf("request count %q: need a whole number ≥ 1", f)
		}
		out = append(out, int64(v))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no request count given (e.g. --requests 100,1000,10000)")
	}
	return out, nil
}
