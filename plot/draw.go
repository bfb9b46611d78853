package plot

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Formats the figure can be written in.
var Formats = []string{"png", "svg", "pdf"}

// DPI is the resolution of PNG output: a Width of 1200 px is 12.5 in.
const DPI = 96

// Options sizes the figure.
type Options struct {
	// Width and Height in pixels at DPI (PNG); SVG and PDF get the same
	// physical size.
	Width, Height int
}

// DefaultOptions is a 1200 × 900 px figure.
var DefaultOptions = Options{Width: 1200, Height: 900}

// MaxPixels bounds each side of the figure.
const MaxPixels = 10000

// Validate rejects a size outside [300, MaxPixels] px.
func (o Options) Validate() error {
	if o.Width < 300 || o.Height < 300 || o.Width > MaxPixels || o.Height > MaxPixels {
		return fmt.Errorf("figure size %d × %d px: each side must be between 300 and %d px", o.Width, o.Height, MaxPixels)
	}
	return nil
}

func (o Options) lengths() (vg.Length, vg.Length, error) {
	if err := o.Validate(); err != nil {
		return 0, 0, err
	}
	px := vg.Inch / DPI
	return vg.Length(o.Width) * px, vg.Length(o.Height) * px, nil
}

// FormatOf returns the format of a file name from its extension.
func FormatOf(path string) (string, error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	for _, f := range Formats {
		if ext == f {
			return f, nil
		}
	}
	return "", fmt.Errorf("%s: unknown figure format %q (use .png, .svg or .pdf)", path, filepath.Ext(path))
}

// Save writes the figure to path (format from its extension), through a
// temporary file renamed into place.
func Save(path string, d *Data, opt Options) (err error) {
	format, err := FormatOf(path)
	if err != nil {
		return err
	}
	if err := CheckOutDir(path); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := Render(&buf, d, format, opt); err != nil {
		return err
	}
	return writeFile(path, buf.Bytes())
}

// writeFile writes b to path through a temporary file renamed into place.
func writeFile(path string, b []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// CheckOutDir says, naming the folder, when the folder path is to be
// written in does not exist or is not a folder (the error of the temporary
// file the figure is first written to would name that file instead).
func CheckOutDir(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("write %s: folder %s does not exist (create it first)", path, dir)
	case err != nil:
		return fmt.Errorf("write %s: folder %s: %w", path, dir, err)
	case !st.IsDir():
		return fmt.Errorf("write %s: %s is not a folder", path, dir)
	}
	return nil
}

// Render draws the figure in format ("png", "svg" or "pdf").
func Render(w io.Writer, d *Data, format string, opt Options) error {
	if d == nil {
		return errors.New("plot: no data")
	}
	width, height, err := opt.lengths()
	if err != nil {
		return err
	}
	c, err := newCanvas(format, width, height)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	d.draw(dc, nil)
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("write %s figure: %w", format, err)
	}
	return nil
}

// newCanvas is a blank figure in format.
func newCanvas(format string, width, height vg.Length) (vg.CanvasWriterTo, error) {
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))}
	case "svg":
		// The fonts go into the file: a viewer then draws the texts with
		// the metrics they were laid out with (with a substitute font they
		// ran over each other, over the legend's swatches and off the edge).
		c = vgsvg.NewWith(vgsvg.UseWH(width, height), vgsvg.EmbedFonts(true))
	case "pdf":
		c = vgpdf.New(width, height)
	default:
		return nil, fmt.Errorf("unknown figure format %q (valid: %s)", format, strings.Join(Formats, ", "))
	}
	return c, nil
}

// Colours.
var (
	stageColours = map[string]color.NRGBA{
		"baseline": {R: 150, G: 150, B: 150, A: 60},
		"startup":  {R: 255, G: 160, B: 40, A: 60},
		"warmup":   {R: 240, G: 210, B: 40, A: 90},
		"formal":   {R: 60, G: 130, B: 230, A: 45},
		"release":  {R: 170, G: 90, B: 200, A: 55},
	}
	otherStage   = color.NRGBA{R: 120, G: 200, B: 120, A: 50}
	steadyColour = color.NRGBA{R: 30, G: 150, B: 60, A: 255}
	deviceColour = []color.NRGBA{
		{R: 31, G: 119, B: 180, A: 255}, {R: 214, G: 39, B: 40, A: 255}, {R: 44, G: 160, B: 44, A: 255},
		{R: 148, G: 103, B: 189, A: 255}, {R: 140, G: 86, B: 75, A: 255}, {R: 227, G: 119, B: 194, A: 255},
		{R: 127, G: 127, B: 127, A: 255}, {R: 188, G: 189, B: 34, A: 255},
	}
	limitColour = color.NRGBA{R: 200, G: 30, B: 30, A: 255}
)

// stageLabel is how a stage is named on the figure.
func stageLabel(name string) string {
	if name == "warmup" {
		return "warm-up"
	}
	return name
}

func devColour(i int) color.NRGBA { return deviceColour[i%len(deviceColour)] }

func withAlpha(c color.NRGBA, a uint8) color.NRGBA { c.A = a; return c }

// LayoutOf draws the figure on an image canvas of opt's size and returns
// where its texts went.
func LayoutOf(d *Data, opt Options) (*Layout, error) {
	width, height, err := opt.lengths()
	if err != nil {
		return nil, err
	}
	rec := &Layout{}
	d.draw(draw.New(vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(DPI))), rec)
	return rec, nil
}

// draw draws the figure; rec, when not nil, records the layout.
func (d *Data) draw(dc draw.Canvas, rec *Layout) {
	if rec == nil {
		rec = &Layout{}
	}
	rec.Canvas = dc.Rectangle
	// Title and notes above the panels; notes wrapped to the width.
	titleStyle := text.Style{Color: color.Black, Font: font.From(gplot.DefaultFont, 13), XAlign: draw.XCenter, YAlign: draw.YTop, Handler: gplot.DefaultTextHandler}
	top := dc.Max.Y - vg.Points(6)
	header := func(st text.Style, s string) {
		pt := vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: top}
		dc.FillText(st, pt, s)
		w, h := st.Width(s), st.Height(s)
		rec.Header = append(rec.Header, Box{Text: s, R: vg.Rectangle{Min: vg.Point{X: pt.X - w/2, Y: top - h}, Max: vg.Point{X: pt.X + w/2, Y: top}}})
		top -= h + vg.Points(2)
	}
	width := dc.Max.X - dc.Min.X - vg.Points(12)
	header(fitText(titleStyle, d.Title, width), d.Title)
	if len(d.Notes) > 0 {
		noteStyle := titleStyle
		noteStyle.Font = font.From(gplot.DefaultFont, 9)
		noteStyle.Color = color.NRGBA{R: 120, G: 60, B: 0, A: 255}
		// At most a tenth of the height goes to notes.
		n := max(1, int((dc.Max.Y-dc.Min.Y)/10/(noteStyle.Height("Xg")+vg.Points(2))))
		for _, l := range maxNoteLines(wrapNotes(d.Notes, noteStyle, width), n) {
			header(fitText(noteStyle, l, width), l)
		}
	}
	body := dc
	body.Max.Y = top - vg.Points(2)

	power, extra := d.powerPlot(rec)
	h := body.Max.Y - body.Min.Y
	plots, cuts := []*gplot.Plot{power}, []float64{1}
	if len(d.JPerToken) > 0 {
		// The request panels, only for a run with per-request J/token (an
		// imported recording has none).
		plots, cuts = append(plots, d.jPerTokenPlot(), d.cvPlot(rec)), []float64{0.55, 0.25, 0.20}
	}
	plots, cuts = d.withEnginePanels(plots, cuts, power.X.Max)
	canvases := make([]draw.Canvas, len(plots))
	y := body.Max.Y
	for i, f := range cuts {
		c := body
		c.Max.Y = y
		c.Min.Y = y - vg.Length(f)*h
		y = c.Min.Y
		canvases[i] = c
		rec.Panels = append(rec.Panels, c.Rectangle)
	}
	// Headroom above the power data for the stage labels and the legend,
	// then the data areas' left and right edges aligned (twice: the
	// headroom changes the tick labels, which move the edges).
	crops := make([]draw.Canvas, len(plots))
	for range 2 {
		var left, right vg.Length
		for i, p := range plots {
			da := p.DataCanvas(canvases[i])
			left = max(left, da.Min.X-canvases[i].Min.X)
			right = max(right, canvases[i].Max.X-da.Max.X)
		}
		for i, p := range plots {
			c := canvases[i]
			da := p.DataCanvas(c)
			crops[i] = draw.Crop(c, left-(da.Min.X-c.Min.X), -(right - (c.Max.X - da.Max.X)), 0, 0)
		}
		extra.headroom(power, power.DataCanvas(crops[0]))
	}
	for i, p := range plots {
		p.Draw(crops[i])
	}
}

func newPlot(title, xLabel, yLabel string) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.X.Label.TextStyle.Font.Size = vg.Points(10)
	p.Y.Label.TextStyle.Font.Size = vg.Points(10)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.X.Tick.Marker = plainTicks{}
	p.Y.Tick.Marker = plainTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// plainTicks are gonum's default ticks labelled without trailing zeros
// ("25", not "25.00").
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []gplot.Tick {
	ticks := gplot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label == "" {
			continue
		}
		v := t.Value
		if r := math.Round(v); math.Abs(v-r) < 1e-9*math.Max(1, math.Abs(v)) {
			v = r
		}
		ticks[i].Label = strconv.FormatFloat(v, 'g', 6, 64)
	}
	return ticks
}

func xys(pts []XY) plotter.XYs {
	out := make(plotter.XYs, len(pts))
	for i, p := range pts {
		out[i].X, out[i].Y = p.X, p.Y
	}
	return out
}

// powerExtra is what the power panel draws above its data: the stage
// labels and the legend, and the data's top (for the headroom).
type powerExtra struct {
	bands  *bands
	legend *legend
	yMax   float64
}

// headroom sets the power axis so that the data stay below the stage
// labels and the legend in data area da.
func (e *powerExtra) headroom(p *gplot.Plot, da draw.Canvas) {
	st := e.bands.style(p)
	_, rows := layoutLabels(e.bands.items(p, da), da.Min.X, da.Max.X, da.Max.Y, st.Height("Xg"), e.bands.rowH(p))
	e.bands.rows = rows // the legend goes below them
	need := e.bands.rowH(p)*vg.Length(rows) + vg.Points(6)
	if len(e.legend.entries) > 0 {
		if f, ok := e.legend.fit(da, p); ok {
			need = da.Max.Y - f.r.Min.Y + vg.Points(4)
		}
	}
	hgt := da.Max.Y - da.Min.Y
	share := min(float64(need/hgt), 0.7)
	p.Y.Max = max(e.yMax*1.05, e.yMax/(1-share))
}

// powerPlot is the top panel: power over time.
func (d *Data) powerPlot(rec *Layout) (*gplot.Plot, *powerExtra) {
	p := newPlot(cmp.Or(d.Boundary, "GPU")+" power over time ("+d.powerSubtitle()+")", "time since run start (s)", "power (W)")
	xMax, yMax := 1.0, 1.0
	for _, s := range d.Stages {
		xMax = max(xMax, s.End)
	}
	for _, s := range append(d.Devices, d.Total) {
		for _, pt := range s.Points {
			xMax, yMax = max(xMax, pt.X), max(yMax, pt.Y)
		}
	}
	p.X.Min, p.X.Max = 0, xMax
	p.Y.Min, p.Y.Max = 0, yMax*1.32 // headroom: set again by powerExtra.headroom
	bs := &bands{stages: d.Stages, steady: d.Steady, rec: rec}
	lg := &legend{rec: rec}
	lg.below = func() vg.Length { return bs.rowH(p)*vg.Length(bs.rows) + vg.Points(2) }
	p.Add(bs)
	if d.TotalBaseline != nil && len(d.Devices) > 1 {
		p.Add(&hband{b: *d.TotalBaseline, fill: color.NRGBA{A: 35}})
	}
	for i, b := range d.Baselines {
		p.Add(&hband{b: b, fill: withAlpha(devColour(i), 70)})
	}
	if len(d.Baselines) > 0 {
		lg.add(fmt.Sprintf("baseline ± %s %% (release)", strconv.FormatFloat(d.Tolerance*100, 'g', 4, 64)),
			legendBox{withAlpha(devColour(0), 70)})
	}
	for i, s := range d.Devices {
		if len(s.Points) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys(s.Points))
		if err != nil {
			continue
		}
		l.Color = devColour(i)
		l.Width = vg.Points(1)
		p.Add(l)
		lg.add(s.Name, l)
	}
	if len(d.Devices) > 1 && len(d.Total.Points) > 0 {
		if l, err := plotter.NewLine(xys(d.Total.Points)); err == nil {
			l.Color = color.Black
			l.Width = vg.Points(1.6)
			p.Add(l)
			lg.add(d.Total.Name, l)
		}
	}
	if d.Steady != nil {
		lg.add("steady-state window", legendBox{withAlpha(steadyColour, 90)})
	}
	p.Add(lg)
	return p, &powerExtra{bands: bs, legend: lg, yMax: yMax}
}

// powerSubtitle says what the power panel marks besides the power: only
// what the run has (an imported recording has no steady-state window and
// no baseline band).
func (d *Data) powerSubtitle() string {
	parts := []string{"stages shaded"}
	if d.Steady != nil {
		parts = append(parts, "steady-state window marked")
	}
	if len(d.Baselines) > 0 {
		parts = append(parts, "baseline ± "+strconv.FormatFloat(d.Tolerance*100, 'g', 4, 64)+" % band in release")
	}
	return strings.Join(parts, "; ")
}

// jPerTokenPlot is the middle panel: per-request J/token.
func (d *Data) jPerTokenPlot() *gplot.Plot {
	p := newPlot("per-request J/token, successful formal requests in completion order", "", "J/token")
	p.X.Min = 0
	if len(d.JPerToken) == 0 {
		p.X.Max, p.Y.Min, p.Y.Max = 1, 0, 1
		p.Add(&message{text: "no per-request J/token"})
		return p
	}
	last := d.JPerToken[len(d.JPerToken)-1].X
	p.X.Max = last
	if d.SteadyFirst > 0 && d.SteadyLast >= d.SteadyFirst {
		p.Add(&xband{a: float64(d.SteadyFirst), b: float64(d.SteadyLast), fill: withAlpha(steadyColour, 40),
			label: fmt.Sprintf("steady state: requests %d–%d", d.SteadyFirst, d.SteadyLast)})
	}
	if s, err := plotter.NewScatter(xys(d.JPerToken)); err == nil {
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		s.GlyphStyle.Radius = vg.Points(1.1)
		s.GlyphStyle.Color = devColour(0)
		p.Add(s)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pt := range d.JPerToken {
		lo, hi = min(lo, pt.Y), max(hi, pt.Y)
	}
	pad := (hi - lo) * 0.08
	if pad == 0 {
		pad = math.Max(hi*0.05, 1e-9)
	}
	p.Y.Min, p.Y.Max = math.Max(0, lo-pad), hi+pad
	return p
}

// cvPlot is the bottom panel: rolling CV and the threshold.
func (d *Data) cvPlot(rec *Layout) *gplot.Plot {
	if d.CVMax <= 0 || d.Window < 2 {
		// No steady-state search in the results: no window, no threshold.
		p := newPlot("rolling CV of J/token", "request number (completion order)", "CV")
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
		if n := len(d.JPerToken); n > 0 {
			p.X.Max = d.JPerToken[n-1].X
		}
		p.Add(&message{text: "no rolling CV: the results hold no steady-state search (its window and cv_max)"})
		return p
	}
	title := fmt.Sprintf("rolling CV of J/token over %d requests; steady state needs windows under %s", d.Window,
		strconv.FormatFloat(d.CVMax, 'g', 4, 64))
	p := newPlot(title, "request number (completion order)", "CV")
	p.X.Min = 0
	p.X.Max = 1
	if n := len(d.JPerToken); n > 0 {
		p.X.Max = d.JPerToken[n-1].X
	}
	yMax := 2 * d.CVMax
	for _, pt := range d.CV {
		yMax = max(yMax, pt.Y)
	}
	if clip := 6 * d.CVMax; yMax > clip && len(d.CV) > 20 {
		yMax = clip
		p.Title.Text += fmt.Sprintf(" (axis cut at %s)", strconv.FormatFloat(clip, 'g', 4, 64))
	}
	lg := &legend{left: true, rec: rec} // the first window-1 requests have no CV
	if d.SteadyFirst > 0 && d.SteadyLast >= d.SteadyFirst {
		p.Add(&xband{a: float64(d.SteadyFirst), b: float64(d.SteadyLast), fill: withAlpha(steadyColour, 40)})
	}
	if len(d.CV) == 0 {
		p.Add(&message{text: "no rolling CV"})
	} else if l, pts, err := plotter.NewLinePoints(xys(d.CV)); err == nil {
		l.Color = devColour(0)
		l.Width = vg.Points(1.2)
		p.Add(l)
		if len(d.CV) <= 20 { // a few windows: show each one
			pts.GlyphStyle = draw.GlyphStyle{Color: devColour(0), Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
			p.Add(pts)
		}
		lg.add("rolling CV", l)
	}
	limit := hline(d.CVMax, limitColour)
	p.Add(limit)
	lg.add("cv_max "+strconv.FormatFloat(d.CVMax, 'g', 4, 64), limit)
	p.Add(lg)
	// Add widens the axes to the data it is given: the range is set after
	// everything is added, so that the axis drawn is the one the caption
	// names (the line is clipped to it).
	p.Y.Min, p.Y.Max = 0, yMax*1.05
	return p
}

// bands shades the stages, names them and marks the steady-state window.
// The names go in rows from the top (layoutLabels); rows is how many the
// last drawing used (the legend goes below them).
type bands struct {
	stages []Band
	steady *Band
	rows   int
	rec    *Layout
}

func (b *bands) style(p *gplot.Plot) text.Style {
	return text.Style{Color: color.NRGBA{R: 40, G: 40, B: 40, A: 255}, Font: font.From(gplot.DefaultFont, 9),
		XAlign: draw.XLeft, YAlign: draw.YTop, Handler: p.TextHandler}
}

func (b *bands) rowH(p *gplot.Plot) vg.Length { return b.style(p).Height("Xg") + vg.Points(2) }

// items are the labels of the stages drawn in data area c.
func (b *bands) items(p *gplot.Plot, c draw.Canvas) []labelItem {
	trX, _ := p.Transforms(&c)
	st := b.style(p)
	var out []labelItem
	for _, s := range b.stages {
		x0, x1 := clampX(c, trX(s.Start)), clampX(c, trX(s.End))
		if x1 <= x0 {
			continue
		}
		l := stageLabel(s.Name)
		out = append(out, labelItem{text: l, x: x0, w: st.Width(l), level: s.Level})
	}
	return out
}

func (b *bands) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, _ := p.Transforms(&c)
	labelStyle := b.style(p)
	for _, s := range b.stages {
		x0, x1 := clampX(c, trX(s.Start)), clampX(c, trX(s.End))
		if x1 <= x0 {
			continue
		}
		fill, ok := stageColours[s.Name]
		if !ok {
			fill = otherStage
		}
		c.FillPolygon(fill, rect(x0, c.Min.Y, x1, c.Max.Y))
		edge := draw.LineStyle{Color: withAlpha(fill, 200), Width: vg.Points(0.5)}
		c.StrokeLine2(edge, x0, c.Min.Y, x0, c.Max.Y)
	}
	items := b.items(p, c)
	boxes, rows := layoutLabels(items, c.Min.X, c.Max.X, c.Max.Y-vg.Points(3), labelStyle.Height("Xg"), b.rowH(p))
	b.rows = rows
	for i, it := range items {
		c.FillText(labelStyle, vg.Point{X: boxes[i].Min.X, Y: boxes[i].Max.Y}, it.text)
		if b.rec != nil {
			b.rec.StageLabels = append(b.rec.StageLabels, Box{Text: it.text, R: boxes[i]})
		}
	}
	if b.steady != nil {
		x0, x1 := clampX(c, trX(b.steady.Start)), clampX(c, trX(b.steady.End))
		if x1 > x0 {
			line := draw.LineStyle{Color: steadyColour, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
			c.StrokeLine2(line, x0, c.Min.Y, x0, c.Max.Y)
			c.StrokeLine2(line, x1, c.Min.Y, x1, c.Max.Y)
			// a bar along the bottom of the panel
			h := (c.Max.Y - c.Min.Y) * 0.04
			c.FillPolygon(withAlpha(steadyColour, 90), rect(x0, c.Min.Y, x1, c.Min.Y+h))
			st := labelStyle
			st.Color = steadyColour
			st.YAlign = draw.YBottom
			c.FillText(st, vg.Point{X: x0 + vg.Points(3), Y: c.Min.Y + h + vg.Points(2)}, "steady-state window")
		}
	}
}

// hband shades baseline ± tolerance over [Start, End].
type hband struct {
	b    BaselineBand
	fill color.Color
}

func (h *hband) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	x0, x1 := clampX(c, trX(h.b.Start)), clampX(c, trX(h.b.End))
	y0, y1 := clampY(c, trY(h.b.Lo)), clampY(c, trY(h.b.Hi))
	if x1 <= x0 || y1 <= y0 {
		return
	}
	c.FillPolygon(h.fill, rect(x0, y0, x1, y1))
	mid := clampY(c, trY(h.b.Baseline))
	c.StrokeLine2(draw.LineStyle{Color: color.NRGBA{A: 120}, Width: vg.Points(0.6), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}, x0, mid, x1, mid)
}

// xband shades [a, b] on the x axis over the whole height, with an
// optional label.
type xband struct {
	a, b  float64
	fill  color.Color
	label string
}

func (x *xband) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, _ := p.Transforms(&c)
	x0, x1 := clampX(c, trX(x.a)), clampX(c, trX(x.b))
	if x1 <= x0 {
		return
	}
	c.FillPolygon(x.fill, rect(x0, c.Min.Y, x1, c.Max.Y))
	if x.label != "" {
		st := text.Style{Color: steadyColour, Font: font.From(gplot.DefaultFont, 9), XAlign: draw.XLeft, YAlign: draw.YTop, Handler: p.TextHandler}
		c.FillText(st, vg.Point{X: x0 + vg.Points(3), Y: c.Max.Y - vg.Points(3)}, x.label)
	}
}

// refLine is a dashed reference line over the whole panel: horizontal
// at y (hline), or vertical at x (vline), whose x is in the plot's data
// range (a bound beyond every point still shows). It is its own legend
// thumbnail.
type refLine struct {
	at       float64
	vertical bool
	colour   color.Color
}

func hline(y float64, colour color.Color) *refLine { return &refLine{at: y, colour: colour} }

func vline(x float64, colour color.Color) *refLine {
	return &refLine{at: x, vertical: true, colour: colour}
}

func (r *refLine) style() draw.LineStyle {
	return draw.LineStyle{Color: r.colour, Width: vg.Points(1.4), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
}

func (r *refLine) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	if r.vertical {
		if x := trX(r.at); x >= c.Min.X && x <= c.Max.X {
			c.StrokeLine2(r.style(), x, c.Min.Y, x, c.Max.Y)
		}
		return
	}
	if y := trY(r.at); y >= c.Min.Y && y <= c.Max.Y {
		c.StrokeLine2(r.style(), c.Min.X, y, c.Max.X, y)
	}
}

// DataRange is a vertical line's x alone; a horizontal line widens no
// range (the infinities leave the others' minimum and maximum as they are).
func (r *refLine) DataRange() (xmin, xmax, ymin, ymax float64) {
	if r.vertical {
		return r.at, r.at, math.Inf(1), math.Inf(-1)
	}
	return math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
}

func (r *refLine) Thumbnail(c *draw.Canvas) {
	if r.vertical {
		x := (c.Min.X + c.Max.X) / 2
		c.StrokeLine2(r.style(), x, c.Min.Y, x, c.Max.Y)
		return
	}
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(r.style(), c.Min.X, y, c.Max.X, y)
}

// message writes a text in the middle of an empty panel.
type message struct{ text string }

func (m *message) Plot(c draw.Canvas, p *gplot.Plot) {
	st := text.Style{Color: color.NRGBA{R: 120, G: 120, B: 120, A: 255}, Font: font.From(gplot.DefaultFont, 11),
		XAlign: draw.XCenter, YAlign: draw.YCenter, Handler: p.TextHandler}
	c.FillText(st, c.Center(), m.text)
}

// legendBox is a filled square legend thumbnail.
type legendBox struct{ fill color.Color }

func (l legendBox) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(l.fill, rect(c.Min.X, c.Min.Y, c.Max.X, c.Max.Y))
}

func rect(x0, y0, x1, y1 vg.Length) []vg.Point {
	return []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
}

func clampX(c draw.Canvas, x vg.Length) vg.Length { return min(max(x, c.Min.X), c.Max.X) }
func clampY(c draw.Canvas, y vg.Length) vg.Length { return min(max(y, c.Min.Y), c.Max.Y) }
