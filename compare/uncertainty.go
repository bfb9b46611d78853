package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/joulebench/joulebench/internal/num"
)

// objectiveMetrics are the results the objectives other than J/token read:
// each on the formal window and on the steady-state span
// (usd_per_mtoken, usd_per_mtoken_steady, ...).
func objectiveMetrics() []string {
	var out []string
	for _, o := range Objectives[1:] {
		out = append(out, o, o+"_steady")
	}
	return out
}

// objectiveMetric is the result an objective is read from on a J/token
// basis: cost and carbon come from the same J/token as the figure shown
// beside them (usd_per_mtoken_steady on steady state).
func objectiveMetric(obj, basis string) string {
	if basis == BasisSteady {
		return obj + "_steady"
	}
	return obj
}

// runValues are the runs' values of a load point by basis and objective
// metric, and each run's steady windows' J/token (steadyWindows).
func runValues(samples []sample) (map[string][]*float64, [][]float64) {
	out := map[string][]*float64{}
	var windows [][]float64
	for _, s := range samples {
		windows = append(windows, s.windows)
		for _, b := range frontierBases {
			out[b] = append(out[b], s.j[b])
		}
		for _, name := range objectiveMetrics() {
			out[name] = append(out[name], s.obj[name])
		}
	}
	return out, windows
}

const ciLevel = "95 %"

// windowMetric is the result holding a run's steady windows' J/token (a
// list, one value per window).
const windowMetric = "steady_window_j_per_token"

// steadyWindows are the J/token of a run's steady-state windows, read
// from its results where its steady-state J/token is in the statistics
// (steady: the run's figure, nil when not) and no failed check
// invalidates them; nil when absent, not a list of positive finite
// numbers, or fewer than two.
func steadyWindows(run *Run, steady *float64) []float64 {
	if steady == nil || run.Results == nil || invalidating(run, windowMetric) != "" {
		return nil
	}
	l, ok := run.Results.Values[windowMetric].Value.([]any)
	if !ok || len(l) < 2 {
		return nil
	}
	out := make([]float64, len(l))
	for i, v := range l {
		f, ok := num.Positive(v)
		if !ok {
			return nil
		}
		out[i] = f
	}
	return out
}

// tInterval is the 95 % t-interval of the mean of xs (at least two):
// mean ± t(0.975, n−1) · s / √n; half is its half-width.
func tInterval(xs []float64) (ci *[2]float64, half float64) {
	n := float64(len(xs))
	var mean, ss float64
	for _, x := range xs {
		mean += x / n
	}
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	half = tQuantile975(len(xs)-1) * math.Sqrt(ss/(n-1)) / math.Sqrt(n)
	return &[2]float64{mean - half, mean + half}, half
}

// interval is the 95 % interval of a point's figure of name, with how it
// was drawn:
//
//   - two runs or more with the figure: the t-interval over those
//     repetitions (mean ± t(0.975, n−1) · s / √n);
//   - one run, on steady-state J/token, with k ≥ minBatches steady windows: batch
//     means, the run's J/token ± t(0.975, k−1) · s / √k, s the standard
//     deviation of the k windows' J/token (the span cut at each window's
//     start; measure.Steady.WindowJPerToken), the lower end at least 0.
//     It is centred on the figure compared, not on the windows' mean (a
//     mean of ratios, which pieces of unequal tokens move off the span's
//     energy over its tokens).
//
// else nil and why not.
func (pt *FrontierPoint) interval(name string) (*[2]float64, string) {
	var xs []float64
	var windows []float64
	for i, v := range pt.runVals[name] {
		if v != nil {
			xs = append(xs, *v)
			if name == BasisSteady && i < len(pt.runWindows) {
				windows = pt.runWindows[i]
			}
		}
	}
	switch {
	case pt.js[name] == nil && pt.objs[name] == nil:
		return nil, fmt.Sprintf("none: no %s at this point", basisName(name))
	case len(xs) >= 2:
		ci, _ := tInterval(xs)
		return ci, fmt.Sprintf("%s t-interval over the %d repetitions (mean ± t(0.975, %d) · s / √%d)", ciLevel, len(xs), len(xs)-1, len(xs))
	case len(xs) == 1 && len(windows) >= minBatches:
		k, v := len(windows), xs[0]
		_, half := tInterval(windows)
		return &[2]float64{max(0, v-half), v + half}, fmt.Sprintf("%s batch means over the %d steady windows of its one run (its J/token ± t(0.975, %d) · s / √%d, s the spread of the windows' J/token; assumes windows long enough to be nearly independent)", ciLevel, k, k-1, k)
	case name == BasisSteady && len(xs) == 1 && len(windows) >= 2:
		return nil, fmt.Sprintf("none: 1 run with the figure at this point, and %d steady windows, fewer than the %d batch means need (with t(0.975, %d) = %.2f the interval would call any difference noise); repeat the point for a t-interval, or run longer (docs/compare.md, Uncertainty and ties)", len(windows), minBatches, len(windows)-1, tTable[len(windows)-2])
	case name == BasisSteady:
		return nil, fmt.Sprintf("none: %d run(s) with the figure at this point, and the results carry no per-window J/token for batch means; repeat the point for a t-interval (docs/compare.md, Uncertainty and ties)", len(xs))
	}
	return nil, fmt.Sprintf("none: %d run(s) with the figure at this point, and batch means over the steady windows cover steady-state J/token only; repeat the point for a t-interval (docs/compare.md, Uncertainty and ties)", len(xs))
}

// minBatches is the fewest steady windows batch means are drawn over.
// With fewer, t(0.975, k−1) is 12.71 (k = 2) or 4.30 (k = 3), and the
// interval is so wide that a point 40 % lower is "not separable" (a
// three-cap simulator sweep of 250 requests has 2 windows a run, and the
// tie rule then chose 450 W over 250 W: TestCapSweepPageInBrowser); from
// k = 4 (t = 3.18) on, the half-width shrinks with the spread and √k as
// it should.
const minBatches = 4

// tTable holds t(0.975, df) for df 1…30.
var tTable = []float64{12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
	2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
	2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423}

// tQuantile975 is Student's t(0.975, df): the table to 30, then the
// normal 1.96.
func tQuantile975(df int) float64 {
	if df >= 1 && df <= len(tTable) {
		return tTable[df-1]
	}
	return 1.96
}

// overlap reports whether two intervals overlap.
func overlap(a, b *[2]float64) bool { return a[0] <= b[1] && b[0] <= a[1] }

// sloMargin is how far a point is inside its SLO: its attainment over the
// target, else its latency under the bound as a share of the bound; nil
// when neither is known.
func sloMargin(pt *FrontierPoint) *float64 {
	switch {
	case pt.SLOAttainment != nil:
		v := *pt.SLOAttainment - pt.AttainmentTarget
		return &v
	case pt.Latency != nil && pt.LatencyBound != nil && *pt.LatencyBound > 0:
		v := 1 - *pt.Latency / *pt.LatencyBound
		return &v
	}
	return nil
}

// settingChange ranks how far a point's GPU setting is from the default:
// 0 the default; 1 a cap that never bound (the GPU ran as by default, but
// a setting was changed); 2 a setting that bound or whose effect is
// unknown.
func settingChange(pt *FrontierPoint) int {
	switch s := pt.GPUSetting; {
	case s.Default:
		return 0
	case s.CapBound != nil && !*s.CapBound && !s.locked():
		return 1
	}
	return 2
}

// sameConfigAndLoad reports whether two points differ at most in their
// GPU setting.
func sameConfigAndLoad(a, b *FrontierPoint) bool {
	if len(a.rows) == 0 || len(b.rows) == 0 {
		return false
	}
	rest := func(pt *FrontierPoint) string {
		m := withoutSettings(pt.rows[0].setting)
		return pt.Scenario + "\x00" + pt.Model + "\x00" + pt.Engine + "\x00" + mapKey(m) + "\x00" + mapKey(pt.rows[0].load)
	}
	return rest(a) == rest(b)
}

// tieBreak applies the tie rule to the candidates sorted by value (lowest
// first) and returns them with the choice first, and what the rule did
// ("" when the lowest stands):
//
//  1. a GPU setting that never bound is never preferred over the default
//     on noise: where the lowest point's cap never bound and the same
//     configuration and load was measured at the default setting, that
//     point is chosen (the GPU ran as by default: the difference is
//     noise);
//  2. the points whose intervals overlap the lowest's are not separable
//     from it: among them the larger SLO margin is chosen, then the
//     smaller setting change from the default (settingChange), then the
//     lower value.
func tieBreak(valued []*FrontierPoint, ci func(*FrontierPoint) *[2]float64, value func(*FrontierPoint) *float64) ([]*FrontierPoint, string) {
	out := slices.Clone(valued)
	best := out[0]
	if cb := best.GPUSetting.CapBound; cb != nil && !*cb {
		for i, pt := range out[1:] {
			if pt.GPUSetting.Default && sameConfigAndLoad(pt, best) {
				out = moveFirst(out, i+1)
				return out, fmt.Sprintf("the cap of %s (%s) never bound, so the GPU ran as at the default setting: its %s lower figure is noise, and the default setting at the same load (%s) is chosen",
					best.RunID, best.Label, pct(1 - *value(best) / *value(pt)), pt.Label)
			}
		}
	}
	bci := ci(best)
	if bci == nil {
		return out, ""
	}
	var tied []int
	for i, pt := range out {
		if c := ci(pt); c != nil && overlap(bci, c) {
			tied = append(tied, i)
		}
	}
	if len(tied) < 2 {
		return out, ""
	}
	win := slices.MinFunc(tied, func(i, j int) int {
		a, b := out[i], out[j]
		return cmp.Or(-cmpPtr(sloMargin(a), sloMargin(b)), cmp.Compare(settingChange(a), settingChange(b)), cmp.Compare(i, j))
	})
	if win == 0 {
		return out, ""
	}
	w := out[win]
	why := "the larger SLO margin"
	if m1, m2 := sloMargin(w), sloMargin(best); m1 == nil || m2 == nil || *m1 == *m2 {
		why = "the same SLO margin, and the smaller setting change from the default"
	}
	out = moveFirst(out, win)
	return out, fmt.Sprintf("%d points are not separable from the lowest, %s (intervals overlap): the tie rule chose %s (%s) on %s", len(tied)-1, best.RunID, w.RunID, w.Label, why)
}

// moveFirst moves element i of pts to the front.
func moveFirst(pts []*FrontierPoint, i int) []*FrontierPoint {
	p := pts[i]
	out := append([]*FrontierPoint{p}, pts[:i]...)
	return append(out, pts[i+1:]...)
}

// separation says whether the runner-up is told apart from the choice:
// both intervals known and disjoint.
func separation(chosen, ru *FrontierPoint, ci func(*FrontierPoint) *[2]float64, value func(*FrontierPoint) *float64) (bool, string) {
	a, b := ci(chosen), ci(ru)
	gap := ""
	if v, w := value(chosen), value(ru); v != nil && w != nil && *v > 0 {
		gap = " (" + signedPct(*w / *v - 1) + ")"
	}
	switch {
	case a == nil || b == nil:
		return false, "not separable from the choice" + gap + ": one run per point, no interval to tell the difference from run-to-run noise"
	case overlap(a, b):
		return false, fmt.Sprintf("not separable from the choice%s: the intervals overlap (%s vs %s)", gap, ciText(b), ciText(a))
	}
	return true, fmt.Sprintf("separable from the choice%s: the intervals do not overlap (%s vs %s)", gap, ciText(b), ciText(a))
}

func ciText(c *[2]float64) string {
	if c == nil {
		return "-"
	}
	return "[" + g4(c[0]) + ", " + g4(c[1]) + "]"
}

func signedPct(f float64) string {
	s := strconv.FormatFloat(f*100, 'f', 1, 64) + " %"
	if f >= 0 {
		return "+" + s
	}
	return s
}
