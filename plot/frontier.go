package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"io"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Frontier is the energy–latency frontier figure: J/token against a
// latency, one line per configuration through its load points in order of
// latency, Pareto-optimal points filled, the lowest J/token meeting the
// SLO ringed, the SLO's latency bound a dashed vertical line.
type Frontier struct {
	// Title heads the figure; Latency names the x axis (a metric name
	// such as tpot_p50_ms).
	Title, Latency string
	Series         []FrontierSeries
	// Bounds are the latency bounds (ms) points must meet, each drawn as
	// a vertical line: --latency-max, or the runs' SLO on this latency.
	Bounds []float64
	// BoundLabels name the bounds in the legend, where given ("SLO: TPOT
	// p90 ≤ 13 ms (90 % of requests)"); else "SLO: LATENCY ≤ B ms".
	BoundLabels []string
	// BestLabel is the ringed point's label: the legend names it ("the
	// decision's choice: c32 · 300 W"); "" says "lowest J/token meeting
	// the SLO".
	BestLabel string
	// Basis names the J/token plotted, in words ("formal window", "per
	// good token, steady state"): the y axis says it; "" says J/token
	// alone.
	Basis string
	// Simulated adds the simulator's note to the title.
	Simulated bool
}

// FrontierSeries is one configuration's load points.
type FrontierSeries struct {
	Name   string
	Points []FrontierPoint
}

// FrontierPoint is one load point: its latency (x), J/token (y) and load.
type FrontierPoint struct {
	Latency, JPerToken float64
	Label              string
	Pareto, Best       bool
}

// SaveFrontier writes the frontier figure to path (format from its
// extension).
func SaveFrontier(path string, f *Frontier, opt Options) error {
	format, err := FormatOf(path)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := RenderFrontier(&buf, f, format, opt); err != nil {
		return err
	}
	return writeFile(path, buf.Bytes())
}

// RenderFrontier draws the frontier figure in format.
func RenderFrontier(w io.Writer, f *Frontier, format string, opt Options) error {
	if f == nil || len(f.Series) == 0 {
		return errors.New("plot: no frontier: no configuration was measured at two loads or more")
	}
	width, height, err := opt.lengths()
	if err != nil {
		return err
	}
	c, err := newCanvas(format, width, height)
	if err != nil {
		return err
	}
	p, err := f.plot()
	if err != nil {
		return err
	}
	p.Draw(draw.New(c))
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("write %s figure: %w", format, err)
	}
	return nil
}

func (f *Frontier) plot() (*gplot.Plot, error) {
	p, _, err := f.plotLabels()
	return p, err
}

// FrontierLabels draws the figure on an image canvas of opt's size and
// returns where its point labels went, and the labels it left out.
func FrontierLabels(f *Frontier, opt Options) ([]Box, []string, error) {
	width, height, err := opt.lengths()
	if err != nil {
		return nil, nil, err
	}
	p, labels, err := f.plotLabels()
	if err != nil {
		return nil, nil, err
	}
	p.Draw(draw.New(vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(DPI))))
	return labels.placed, labels.dropped, nil
}

// bestLegend names the ringed point in the legend.
func (f *Frontier) bestLegend() string {
	if f.BestLabel == "" {
		return "lowest J/token meeting the SLO"
	}
	return "the decision's choice: " + f.BestLabel
}

// yLabel names the y axis: J/token and, where known, its basis.
func (f *Frontier) yLabel() string {
	if f.Basis == "" {
		return "J/token"
	}
	return "J/token (" + f.Basis + ")"
}

// plotLabels is the figure and its point labels (placed as it is drawn).
func (f *Frontier) plotLabels() (*gplot.Plot, *pointLabels, error) {
	title := f.Title
	if title == "" {
		title = "Energy–latency frontier"
	}
	if f.Simulated {
		title += " (SIMULATED)"
	}
	p := newPlot(title, f.Latency+" (ms)", f.yLabel())
	p.Legend.Top = true
	labels := &pointLabels{}
	bestNamed := false
	for i, s := range f.Series {
		col := devColour(i)
		xy := make(plotter.XYs, len(s.Points))
		var pareto, best plotter.XYs
		for j, pt := range s.Points {
			xy[j].X, xy[j].Y = pt.Latency, pt.JPerToken
			if pt.Pareto {
				pareto = append(pareto, xy[j])
			}
			if pt.Best {
				best = append(best, xy[j])
			}
		}
		line, points, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, nil, fmt.Errorf("plot: frontier %s: %w", s.Name, err)
		}
		line.Color, line.Width = col, vg.Points(1.5)
		points.Shape, points.Color, points.Radius = draw.CircleGlyph{}, col, vg.Points(3)
		p.Add(line, points)
		p.Legend.Add(s.Name, line, points)
		if len(pareto) > 0 {
			sc, err := plotter.NewScatter(pareto)
			if err != nil {
				return nil, nil, err
			}
			sc.Shape, sc.Color, sc.Radius = draw.CircleGlyph{}, col, vg.Points(5)
			p.Add(sc)
		}
		if len(best) > 0 {
			sc, err := plotter.NewScatter(best)
			if err != nil {
				return nil, nil, err
			}
			sc.Shape, sc.Color, sc.Radius = draw.RingGlyph{}, color.NRGBA{R: 200, G: 30, B: 30, A: 255}, vg.Points(9)
			p.Add(sc)
			if !bestNamed {
				p.Legend.Add(f.bestLegend(), sc)
				bestNamed = true
			}
		}
		for j, pt := range s.Points {
			labels.items = append(labels.items, pointLabel{x: xy[j].X, y: xy[j].Y, text: pt.Label, keep: pt.Best})
		}
	}
	p.Add(labels)
	for i, b := range f.Bounds {
		l := vline(b, color.NRGBA{R: 60, G: 60, B: 60, A: 220}) // grey: not a series colour
		p.Add(l)
		name := fmt.Sprintf("SLO: %s ≤ %s ms", f.Latency, strconv.FormatFloat(b, 'g', 4, 64))
		if i < len(f.BoundLabels) && f.BoundLabels[i] != "" {
			name = f.BoundLabels[i]
		}
		p.Legend.Add(name, l)
	}
	// Room on the right for the last point's label.
	p.X.Max += (p.X.Max - p.X.Min) * 0.12
	return p, labels, nil
}
