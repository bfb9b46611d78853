package htmlreport

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"
	"github.com/joulebench/joulebench/plot"
)

// maxEnginePoints bounds the points per engine-state line, and of the
// per-request J/token and rolling CV lines (one point a request).
const maxEnginePoints = 3000

// cdfPoints is how many points draw a latency CDF.
const cdfPoints = 201

// chartData gathers what the charts draw. Times are seconds since pd.T0.
func chartData(run *record.Run, pd *plot.Data) (*runData, []string) {
	var notes []string
	d := &runData{ID: run.Meta.RunID, Simulated: run.Meta.Simulated, CVMax: pd.CVMax, Window: pd.Window,
		Steady1: pd.SteadyFirst, SteadyN: pd.SteadyLast}
	for _, s := range pd.Devices {
		d.Power = append(d.Power, toSeries(s, "W"))
	}
	if len(pd.Devices) > 1 {
		d.Power = append(d.Power, toSeries(pd.Total, "W"))
	}
	for _, b := range pd.Stages {
		d.Stages = append(d.Stages, band{Name: b.Name, Start: b.Start, End: b.End, Level: b.Level})
	}
	if pd.Steady != nil {
		d.Steady = &band{Name: pd.Steady.Name, Start: pd.Steady.Start, End: pd.Steady.End}
	}
	if b := pd.TotalBaseline; b != nil {
		d.Baseline = &baseline{W: b.Baseline, Lo: b.Lo, Hi: b.Hi, Start: b.Start, End: b.End}
	}
	d.Engine = engineState(run.EngineMetrics, pd.T0)
	d.JPerToken = xySeries("J/token", "J/token", thin(pd.JPerToken, maxEnginePoints))
	d.CV = xySeries(fmt.Sprintf("rolling CV (%d requests)", pd.Window), "", thin(pd.CV, maxEnginePoints))
	var formal []*record.Request
	for i := range run.Requests {
		if r := &run.Requests[i]; r.Phase == "formal" {
			formal = append(formal, r)
		}
	}
	lat, n := latencies(formal)
	d.Latency, notes = lat, append(notes, n...)
	d.Requests = requestTable(formal, pd.T0)
	return d, notes
}

func toSeries(s plot.Series, unit string) series {
	out := xySeries(s.Name, unit, s.Points)
	return out
}

func xySeries(name, unit string, pts []plot.XY) series {
	s := series{Name: name, Unit: unit, X: make([]float64, len(pts)), Y: make([]float64, len(pts))}
	for i, p := range pts {
		s.X[i], s.Y[i] = p.X, p.Y
	}
	return s
}

// engineKinds maps a /metrics name's suffix to the state it reports, for
// the engines joulebench knows (vLLM, SGLang, llama.cpp, the simulator).
var engineKinds = []struct{ suffix, kind string }{
	{":num_requests_running", "running"},
	{":num_running_reqs", "running"},
	{":requests_processing", "running"},
	{":num_requests_waiting", "waiting"},
	{":num_queue_reqs", "waiting"},
	{":requests_deferred", "waiting"},
	{":kv_cache_usage_perc", "kv"},
	{":gpu_cache_usage_perc", "kv"},
	{":kv_cache_usage_ratio", "kv"},
	{":token_usage", "kv"},
}

// engineState returns the running batch, the queue and the KV-cache usage
// (in %) over time from the archived /metrics scrapes, each summed over
// its label sets at a scrape time; empty when none was scraped.
func engineState(ms []record.EngineMetric, t0 float64) []series {
	type key struct {
		kind string
		t    float64
	}
	sums := map[key]float64{}
	for _, m := range ms {
		for _, k := range engineKinds {
			if strings.HasSuffix(m.Name, k.suffix) {
				sums[key{k.kind, m.T}] += m.Value
				break
			}
		}
	}
	var out []series
	for _, k := range []struct{ kind, name, unit, scale string }{
		{"running", "running requests", "requests", "n"}, {"waiting", "waiting requests", "requests", "n"}, {"kv", "KV-cache usage", "%", "pct"}} {
		var pts []plot.XY
		for key, v := range sums {
			if key.kind == k.kind {
				if k.kind == "kv" {
					v *= 100
				}
				pts = append(pts, plot.XY{X: key.t - t0, Y: v})
			}
		}
		if len(pts) == 0 {
			continue
		}
		slices.SortFunc(pts, func(a, b plot.XY) int { return cmp.Compare(a.X, b.X) })
		s := xySeries(k.name, k.unit, thin(pts, maxEnginePoints))
		s.Scale = k.scale
		out = append(out, s)
	}
	return out
}

// thin keeps at most about n points: each bucket's minimum and maximum.
func thin(pts []plot.XY, n int) []plot.XY {
	if len(pts) <= n {
		return pts
	}
	buckets := n / 2
	out := make([]plot.XY, 0, n)
	for b := range buckets {
		lo, hi := b*len(pts)/buckets, (b+1)*len(pts)/buckets
		iMin, iMax := lo, lo
		for i := lo; i < hi; i++ {
			if pts[i].Y < pts[iMin].Y {
				iMin = i
			}
			if pts[i].Y > pts[iMax].Y {
				iMax = i
			}
		}
		out = append(out, pts[min(iMin, iMax)])
		if iMin != iMax {
			out = append(out, pts[max(iMin, iMax)])
		}
	}
	return out
}

// latency is one distribution: its empirical CDF and its percentiles.
type latency struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
	N    int    `json:"n"`
	// X are values at cumulative fractions Y (sorted values at evenly
	// spaced ranks, first and last included).
	X   []float64 `json:"x"`
	Y   []float64 `json:"y"`
	P50 float64   `json:"p50"`
	P90 float64   `json:"p90"`
	P99 float64   `json:"p99"`
}

// latencies computes TTFT, TPOT, ITL and E2E of the successful formal
// requests, in milliseconds, as the profiles define them (TPOT over
// requests with at least 2 tokens; ITL per token, measure.ITL). An
// imported recording's synthetic request stands for the window and has no
// times of its own: it is left out, as the profiles leave it out.
func latencies(formal []*record.Request) ([]latency, []string) {
	var ttft, tpot, e2e []float64
	var ok []*record.Request
	synthetic := 0
	for _, r := range formal {
		if r.OK && r.Synthetic {
			synthetic++
		}
		if !r.OK || r.Synthetic {
			continue
		}
		ok = append(ok, r)
		ttft = append(ttft, (r.FirstTokenAt-r.SentAt)*1000)
		e2e = append(e2e, (r.DoneAt-r.SentAt)*1000)
		if r.OutputTokens >= 2 {
			tpot = append(tpot, (r.DoneAt-r.FirstTokenAt)/float64(r.OutputTokens-1)*1000)
		}
	}
	var notes []string
	itl, err := measure.ITL(ok)
	if err != nil {
		notes = append(notes, "ITL: "+err.Error())
		itl = nil
	}
	for i := range itl {
		itl[i] *= 1000
	}
	var out []latency
	for _, l := range []struct {
		name string
		xs   []float64
	}{{"TTFT", ttft}, {"TPOT", tpot}, {"ITL", itl}, {"E2E", e2e}} {
		if len(l.xs) == 0 {
			why := "no successful formal request has one"
			if synthetic > 0 {
				why = "an imported recording's request is synthetic: it has no times of its own"
			}
			notes = append(notes, l.name+": no values ("+why+")")
			continue
		}
		c, err := cdf(l.name, l.xs)
		if err != nil {
			notes = append(notes, err.Error())
			continue
		}
		out = append(out, c)
	}
	return out, notes
}

// cdf builds a latency from all its values.
func cdf(name string, xs []float64) (latency, error) {
	l := latency{Name: name, Unit: "ms", N: len(xs)}
	for _, p := range []struct {
		pct float64
		dst *float64
	}{{50, &l.P50}, {90, &l.P90}, {99, &l.P99}} {
		v, err := measure.Percentile(xs, p.pct)
		if err != nil {
			return l, fmt.Errorf("%s p%g: %w", name, p.pct, err)
		}
		*p.dst = v
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	k := min(cdfPoints, len(sorted))
	for i := range k {
		j := 0
		if k > 1 {
			j = int(math.Round(float64(i) * float64(len(sorted)-1) / float64(k-1)))
		}
		l.X = append(l.X, sorted[j])
		l.Y = append(l.Y, float64(j+1)/float64(len(sorted)))
	}
	return l, nil
}

// reqTable is the formal requests, one row each: columns as named.
type reqTable struct {
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
}

// requestTable lists every formal request (failed ones too) in the order
// sent: times in seconds since the run's start, latencies in ms.
func requestTable(formal []*record.Request, t0 float64) reqTable {
	t := reqTable{Columns: []string{"id", "sent (s)", "TTFT (ms)", "E2E (ms)", "prompt tokens", "output tokens", "TPOT (ms)", "ok", "error"}}
	rs := slices.Clone(formal)
	slices.SortStableFunc(rs, func(a, b *record.Request) int { return cmp.Compare(a.SentAt, b.SentAt) })
	for _, r := range rs {
		var ttft, e2e, tpot any
		if r.OK {
			ttft, e2e = round3((r.FirstTokenAt-r.SentAt)*1000), round3((r.DoneAt-r.SentAt)*1000)
			if r.OutputTokens >= 2 {
				tpot = round3((r.DoneAt - r.FirstTokenAt) / float64(r.OutputTokens-1) * 1000)
			}
		}
		t.Rows = append(t.Rows, []any{r.ID, round3(r.SentAt - t0), ttft, e2e, r.PromptTokens, r.OutputTokens, tpot, r.OK, r.Error})
	}
	return t
}

// round3 rounds to a thousandth (a microsecond for ms), for the table only.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
