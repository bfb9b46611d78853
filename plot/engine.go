package plot

import (
	"fmt"
	"image/color"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"
)

// EnginePanel is the engine's state from the /metrics side path
// (engine_metrics.jsonl), drawn under the power timeline: the running
// batch and the waiting queue (requests), and the KV-cache usage (%).
// Times are seconds since T0; a series is empty when no scrape had it.
// It explains the power; no energy figure comes from it.
type EnginePanel struct {
	Running, Waiting, KV []XY
}

// KVFullPct is the KV-cache usage drawn as a line on the KV panel: the
// profiles' kv_full_pct default, above which check batch_saturated names
// the KV cache as the likely cap on the batch.
const KVFullPct = 85

// engine fills d.Engine from the run's scrapes (vLLM, SGLang, llama.cpp
// and simulator gauges, measure.EngineStateKind).
func (d *Data) engine(ms []record.EngineMetric) {
	if len(ms) == 0 {
		return
	}
	s := measure.NewEngineSeries(ms)
	if s.Empty() {
		d.Notes = append(d.Notes, "engine /metrics: none of the scraped names is a running batch, waiting queue or KV-cache gauge this figure knows")
		return
	}
	conv := func(xs []measure.TV, scale float64) []XY {
		out := make([]XY, len(xs))
		for i, x := range xs {
			out[i] = XY{x.T - d.T0, x.V * scale}
		}
		return decimate(out, maxPoints)
	}
	d.Engine = EnginePanel{Running: conv(s.Running, 1), Waiting: conv(s.Waiting, 1), KV: conv(s.KV, 100)}
}

// withEnginePanels puts the engine panels (batch and queue; KV cache)
// under the power panel, plots[0], when the run has engine state, with
// the panels' shares of the height; xMax is the power panel's time axis.
func (d *Data) withEnginePanels(plots []*gplot.Plot, cuts []float64, xMax float64) ([]*gplot.Plot, []float64) {
	var extra []*gplot.Plot
	if len(d.Engine.Running) > 0 || len(d.Engine.Waiting) > 0 {
		extra = append(extra, d.batchPlot(xMax))
	}
	if len(d.Engine.KV) > 0 {
		extra = append(extra, d.kvPlot(xMax))
	}
	switch {
	case len(extra) == 0:
		return plots, cuts
	case len(plots) == 1 && len(extra) == 1: // no request panels
		cuts = []float64{0.7, 0.3}
	case len(plots) == 1:
		cuts = []float64{0.56, 0.22, 0.22}
	case len(extra) == 1:
		cuts = []float64{0.45, 0.15, 0.2, 0.2}
	default:
		cuts = []float64{0.37, 0.15, 0.14, 0.15, 0.19}
	}
	out := append([]*gplot.Plot{plots[0]}, extra...)
	return append(out, plots[1:]...), cuts
}

// steadyShade shades the steady-state window on an engine panel.
func (d *Data) steadyShade(p *gplot.Plot) {
	if d.Steady != nil {
		p.Add(&xband{a: d.Steady.Start, b: d.Steady.End, fill: withAlpha(steadyColour, 30)})
	}
}

// batchPlot is the running batch and the waiting queue over time.
func (d *Data) batchPlot(xMax float64) *gplot.Plot {
	// The panel is too low for a legend box: the title says which line is
	// which.
	p := newPlot("engine state (/metrics): running batch (solid), waiting queue (dashed)", "", "requests")
	p.X.Min, p.X.Max = 0, xMax
	d.steadyShade(p)
	yMax := 1.0
	for i, pts := range [][]XY{d.Engine.Running, d.Engine.Waiting} {
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys(pts))
		if err != nil {
			continue
		}
		l.Color = devColour(i)
		l.Width = vg.Points(1.2)
		if i == 1 {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		for _, pt := range pts {
			yMax = max(yMax, pt.Y)
		}
	}
	p.Y.Min, p.Y.Max = 0, yMax*1.1
	return p
}

// kvPlot is the KV-cache usage over time, 0–100 %, with the line above
// which check batch_saturated names the KV cache.
func (d *Data) kvPlot(xMax float64) *gplot.Plot {
	p := newPlot(fmt.Sprintf("engine state (/metrics): KV-cache usage; dashed: %d %% (kv_full_pct)", KVFullPct), "", "KV cache (%)")
	p.X.Min, p.X.Max = 0, xMax
	p.Y.Min, p.Y.Max = 0, 100
	for _, pt := range d.Engine.KV {
		p.Y.Max = max(p.Y.Max, pt.Y)
	}
	d.steadyShade(p)
	if l, err := plotter.NewLine(xys(d.Engine.KV)); err == nil {
		l.Color = color.NRGBA{R: 148, G: 103, B: 189, A: 255}
		l.Width = vg.Points(1.2)
		p.Add(l)
	}
	p.Add(hline(KVFullPct, limitColour))
	return p
}
