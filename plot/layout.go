package plot

import (
	"fmt"
	"image/color"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Layout records where the figure's texts went, so that a test can check
// that none overlaps another and all lie inside the canvas.
type Layout struct {
	Canvas vg.Rectangle
	// Header are the title and note lines above the panels.
	Header []Box
	// Panels are the panels' whole areas (titles and axes included).
	Panels []vg.Rectangle
	// StageLabels are the stage names in the power panel; Legends the
	// legend boxes (background, swatches and texts) of each panel that has
	// one, with Within the data area each must lie in.
	StageLabels []Box
	Legends     []Box
	Within      []vg.Rectangle
}

// Box is a text (or a legend) and the rectangle it covers.
type Box struct {
	Text string
	R    vg.Rectangle
}

func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

func inside(r, outer vg.Rectangle) bool {
	return r.Min.X >= outer.Min.X && r.Max.X <= outer.Max.X && r.Min.Y >= outer.Min.Y && r.Max.Y <= outer.Max.Y
}

// labelItem is a stage label to place: its stage starts at x, its text is
// w wide, and it goes at least level rows down.
type labelItem struct {
	text  string
	x, w  vg.Length
	level int
}

// layoutLabels places labels in rows from top down, each of height rowH:
// a label starts just right of its stage's start, moved left when it would
// cross maxX (never left of minX), and goes down a row while it would
// overlap a label already in that row. There are as many rows as needed,
// so no two labels overlap. It returns the boxes in order and the rows used.
func layoutLabels(items []labelItem, minX, maxX, top, textH, rowH vg.Length) ([]vg.Rectangle, int) {
	gap := vg.Points(4)
	boxes := make([]vg.Rectangle, len(items))
	var placed [][]vg.Rectangle // per row
	rows := 0
	for i, it := range items {
		x := it.x + vg.Points(3)
		if x+it.w > maxX {
			x = maxX - it.w
		}
		x = max(x, minX)
		row := max(it.level, 0)
		for {
			free := true
			if row < len(placed) {
				for _, b := range placed[row] {
					if x < b.Max.X+gap && b.Min.X < x+it.w+gap {
						free = false
						break
					}
				}
			}
			if free {
				break
			}
			row++
		}
		for len(placed) <= row {
			placed = append(placed, nil)
		}
		y1 := top - rowH*vg.Length(row)
		boxes[i] = vg.Rectangle{Min: vg.Point{X: x, Y: y1 - textH}, Max: vg.Point{X: x + it.w, Y: y1}}
		placed[row] = append(placed[row], boxes[i])
		rows = max(rows, row+1)
	}
	return boxes, rows
}

// legendEntry is one line of a legend.
type legendEntry struct {
	text  string
	thumb gplot.Thumbnailer
}

// legend is a panel's legend, drawn as a plotter (after the data) in a box
// with a light background, swatches on the left and texts after them, so
// that a text never runs over a swatch. The box is kept inside the data
// area: when the entries do not fit in one column under the stage labels
// they go in columns, and then in a smaller font. below, when set, is how
// far down from the top the box starts (under the stage labels).
type legend struct {
	entries []legendEntry
	left    bool
	below   func() vg.Length
	rec     *Layout
}

func (l *legend) add(text string, t gplot.Thumbnailer) {
	l.entries = append(l.entries, legendEntry{text, t})
}

func legendStyle(p *gplot.Plot, size vg.Length) text.Style {
	return text.Style{Color: color.Black, Font: font.From(gplot.DefaultFont, size), XAlign: draw.XLeft, YAlign: draw.YCenter, Handler: p.TextHandler}
}

// legendFit is how the legend is laid out: its font, columns, the width
// of a column, the height of a row and the box.
type legendFit struct {
	st         text.Style
	cols, rows int
	colW, rowH vg.Length
	r          vg.Rectangle
}

const legendPad, legendThumbW, legendGap = 4, 18, 5 // points

// fit lays the legend out in data area c: the largest font (9 down to 5
// pt) and then the fewest columns that fit. ok is false when nothing fits
// (a tiny figure): the legend is then left out rather than drawn over the
// labels or off the panel; r is then the smallest layout's size, placed.
func (l *legend) fit(c draw.Canvas, p *gplot.Plot) (f legendFit, ok bool) {
	pad, thumbW, gap := vg.Points(legendPad), vg.Points(legendThumbW), vg.Points(legendGap)
	top := c.Max.Y - vg.Points(3)
	if l.below != nil {
		top -= l.below()
	}
	availW, availH := c.Max.X-c.Min.X-vg.Points(6), top-c.Min.Y-vg.Points(3)
	n := len(l.entries)
	for _, size := range []vg.Length{9, 8, 7, 6, 5} {
		st := legendStyle(p, size)
		textW := vg.Length(0)
		for _, e := range l.entries {
			textW = max(textW, st.Width(e.text))
		}
		colW := thumbW + gap + textW + pad
		rowH := st.Height("Xg") + vg.Points(2)
		for cols := 1; cols <= n; cols++ {
			rows := (n + cols - 1) / cols
			w, h := pad+vg.Length(cols)*colW, rowH*vg.Length(rows)+2*pad
			f = legendFit{st: st, cols: cols, rows: rows, colW: colW, rowH: rowH, r: vg.Rectangle{Max: vg.Point{X: w, Y: h}}}
			if w <= availW && h <= availH {
				return f.place(c, top, l.left), true
			}
		}
	}
	return f.place(c, top, l.left), false
}

// place moves a box of the fit's size to the top right (or left) of c,
// with its top at top.
func (f legendFit) place(c draw.Canvas, top vg.Length, left bool) legendFit {
	w, h := f.r.Max.X, f.r.Max.Y
	x0 := c.Max.X - vg.Points(3) - w
	if left {
		x0 = c.Min.X + vg.Points(3)
	}
	x0 = max(x0, c.Min.X)
	f.r = vg.Rectangle{Min: vg.Point{X: x0, Y: top - h}, Max: vg.Point{X: x0 + w, Y: top}}
	return f
}

func (l *legend) Plot(c draw.Canvas, p *gplot.Plot) {
	if len(l.entries) == 0 {
		return
	}
	f, ok := l.fit(c, p)
	if !ok {
		return
	}
	r := f.r
	pad, thumbW, gap := vg.Points(legendPad), vg.Points(legendThumbW), vg.Points(legendGap)
	c.FillPolygon(color.NRGBA{R: 255, G: 255, B: 255, A: 225}, rect(r.Min.X, r.Min.Y, r.Max.X, r.Max.Y))
	c.StrokeLines(draw.LineStyle{Color: color.NRGBA{A: 90}, Width: vg.Points(0.5)},
		[]vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}, r.Min})
	for i, e := range l.entries {
		col, row := i/f.rows, i%f.rows
		x := r.Min.X + pad + vg.Length(col)*f.colW
		y := r.Max.Y - pad - f.rowH*vg.Length(row)
		icon := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: y - f.rowH + vg.Points(2)}, Max: vg.Point{X: x + thumbW, Y: y - vg.Points(1)}}}
		e.thumb.Thumbnail(&icon)
		c.FillText(f.st, vg.Point{X: x + thumbW + gap, Y: y - f.rowH/2}, e.text)
	}
	if l.rec != nil {
		l.rec.Legends = append(l.rec.Legends, Box{Text: "legend", R: r})
		l.rec.Within = append(l.rec.Within, c.Rectangle)
	}
}

// fitText returns st with its font made smaller (down to 6 pt) until s is
// no wider than width.
func fitText(st text.Style, s string, width vg.Length) text.Style {
	for st.Width(s) > width && st.Font.Size > vg.Points(6) {
		st.Font.Size -= vg.Points(0.5)
	}
	return st
}

// maxNoteLines caps the note lines so that the panels keep their room; the
// rest is counted on the last line.
func maxNoteLines(lines []string, n int) []string {
	if len(lines) <= n {
		return lines
	}
	return append(lines[:n-1:n-1], fmt.Sprintf("  … and %d more line(s) of notes", len(lines)-n+1))
}

// wrapNotes breaks "notes: a; b; c" into lines no wider than width.
func wrapNotes(notes []string, st text.Style, width vg.Length) []string {
	var lines []string
	cur := "notes: "
	for i, n := range notes {
		part := n
		if i < len(notes)-1 {
			part += ";"
		}
		for _, w := range strings.Fields(part) {
			next := cur + w
			if !strings.HasSuffix(cur, " ") {
				next = cur + " " + w
			}
			if st.Width(next) > width && strings.TrimSpace(cur) != "" && cur != "notes: " {
				lines = append(lines, cur)
				next = "  " + w
			}
			cur = next
		}
	}
	return append(lines, cur)
}
