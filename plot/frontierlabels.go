package plot

import (
	"image/color"
	"slices"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// pointLabel is a frontier point's label to place: at (x, y) in data
// units; keep is true for the chosen point's label (never left out).
type pointLabel struct {
	x, y float64
	text string
	keep bool
}

// pointLabels draws the frontier points' labels where they overlap no
// other label (pointLabels.place); placed records where each went and
// dropped the labels left out (no free place near their point).
type pointLabels struct {
	items   []pointLabel
	placed  []Box
	dropped []string
}

func (l *pointLabels) style(p *gplot.Plot) text.Style {
	return text.Style{Color: color.Black, Font: font.From(gplot.DefaultFont, 8), XAlign: draw.XLeft, YAlign: draw.YBottom, Handler: p.TextHandler}
}

// Plot places the labels on the canvas and draws them: the chosen
// point's first, then in order, each at the first place around its point
// that overlaps no label placed before, no point's marker and nothing
// outside the plot area; a label with no such place is left out.
func (l *pointLabels) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	st := l.style(p)
	l.placed, l.dropped = nil, nil
	marker := vg.Points(4)
	var taken []vg.Rectangle
	for _, it := range l.items {
		x, y := trX(it.x), trY(it.y)
		taken = append(taken, vg.Rectangle{Min: vg.Point{X: x - marker, Y: y - marker}, Max: vg.Point{X: x + marker, Y: y + marker}})
	}
	order := make([]int, 0, len(l.items))
	for i, it := range l.items {
		if it.keep {
			order = append(order, i)
		}
	}
	for i, it := range l.items {
		if !it.keep {
			order = append(order, i)
		}
	}
	for _, i := range order {
		it := l.items[i]
		w, h := st.Width(it.text), st.Height(it.text)
		r, ok := freePlace(vg.Point{X: trX(it.x), Y: trY(it.y)}, w, h, c.Rectangle, taken)
		if !ok {
			l.dropped = append(l.dropped, it.text)
			continue
		}
		taken = append(taken, r)
		// A light backing keeps the text legible over a line.
		c.FillPolygon(color.NRGBA{R: 255, G: 255, B: 255, A: 200}, rect(r.Min.X, r.Min.Y, r.Max.X, r.Max.Y))
		c.FillText(st, r.Min, it.text)
		l.placed = append(l.placed, Box{Text: it.text, R: r})
	}
}

// freePlace is the first of the places around pt for a w × h text (right
// and above, right and below, left and above, left and below, above,
// below, right, left; then the same twice as far) that lies inside area
// and overlaps none of taken.
func freePlace(pt vg.Point, w, h vg.Length, area vg.Rectangle, taken []vg.Rectangle) (vg.Rectangle, bool) {
	for _, far := range []vg.Length{1, 2.5} {
		gx, gy := vg.Points(5)*far, vg.Points(3)*far
		for _, at := range []vg.Point{
			{X: pt.X + gx, Y: pt.Y + gy}, {X: pt.X + gx, Y: pt.Y - gy - h},
			{X: pt.X - gx - w, Y: pt.Y + gy}, {X: pt.X - gx - w, Y: pt.Y - gy - h},
			{X: pt.X - w/2, Y: pt.Y + gy*2}, {X: pt.X - w/2, Y: pt.Y - gy*2 - h},
			{X: pt.X + gx*1.5, Y: pt.Y - h/2}, {X: pt.X - gx*1.5 - w, Y: pt.Y - h/2},
		} {
			r := vg.Rectangle{Min: at, Max: vg.Point{X: at.X + w, Y: at.Y + h}}
			if !inside(r, area) || slices.ContainsFunc(taken, func(t vg.Rectangle) bool { return overlaps(r, t) }) {
				continue
			}
			return r, true
		}
	}
	return vg.Rectangle{}, false
}
