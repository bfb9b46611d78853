package report

import (
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/plot"
)

// DecisionFrontier is the frontier figure of the points rep's decision
// weighed (compare.DecidedPoints, as compare decided them): the
// decision's point ringed, the SLO's bound a line, the points no other
// point beats on both axes filled; nil when the decision chose nothing.
func DecisionFrontier(rep *compare.Report) *plot.Frontier {
	dp := rep.Points
	if dp == nil {
		return nil
	}
	f := &plot.Frontier{Latency: dp.LatencyMetric, Basis: dp.BasisText, Simulated: rep.Simulated, BestLabel: dp.Label}
	if dp.Bound != nil {
		f.Bounds, f.BoundLabels = []float64{*dp.Bound}, []string{dp.BoundLabel}
	}
	for _, s := range dp.Series {
		fs := plot.FrontierSeries{Name: s.Name}
		for _, p := range s.Points {
			fs.Points = append(fs.Points, plot.FrontierPoint{Latency: p.Latency, JPerToken: p.JPerToken, Label: p.Label, Pareto: p.Pareto, Best: p.Chosen})
		}
		f.Series = append(f.Series, fs)
	}
	return f
}
