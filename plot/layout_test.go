package plot

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"gonum.org/v1/plot/vg"
)

// checkLayout: no two stage labels overlap; every label, legend and
// header line lies inside the canvas; labels inside the power panel;
// a legend inside its data area and clear of the stage labels; the header
// clear of the panels.
func checkLayout(t *testing.T, name string, l *Layout) {
	t.Helper()
	for i, a := range l.StageLabels {
		if !inside(a.R, l.Canvas) || !inside(a.R, l.Panels[0]) {
			t.Errorf("%s: stage label %q at %v is outside the canvas %v or the power panel %v", name, a.Text, a.R, l.Canvas, l.Panels[0])
		}
		for _, b := range l.StageLabels[i+1:] {
			if overlaps(a.R, b.R) {
				t.Errorf("%s: stage labels %q %v and %q %v overlap", name, a.Text, a.R, b.Text, b.R)
			}
		}
		for _, g := range l.Legends {
			if overlaps(a.R, g.R) {
				t.Errorf("%s: stage label %q %v is under a legend %v", name, a.Text, a.R, g.R)
			}
		}
	}
	if (len(l.Legends) != 2 && l.Canvas.Max.X >= 600) || len(l.Within) != len(l.Legends) {
		t.Errorf("%s: %d legends, want 2 (power and CV; only a tiny figure may leave one out)", name, len(l.Legends))
	}
	for i, g := range l.Legends {
		if !inside(g.R, l.Within[i]) || !inside(g.R, l.Canvas) {
			t.Errorf("%s: legend %v is not inside its data area %v", name, g.R, l.Within[i])
		}
	}
	for _, h := range l.Header {
		if !inside(h.R, l.Canvas) {
			t.Errorf("%s: header %q %v runs off the canvas %v", name, h.Text, h.R, l.Canvas)
		}
		for _, p := range l.Panels {
			if overlaps(h.R, p) {
				t.Errorf("%s: header %q %v is drawn over a panel %v", name, h.Text, h.R, p)
			}
		}
	}
}

// The labels, legends and notes of the figure, on the sample run and on a
// crowded one: a startup of 0.2 s (its label and formal's start at the
// same place, with warm-up nested inside), a last stage of 0.2 s at the
// right edge, many notes, and the smallest figure.
func TestLayoutNoOverlap(t *testing.T) {
	d, err := Prepare(sampleRun(t), sampleResults())
	if err != nil {
		t.Fatal(err)
	}
	crowded := sampleRun(t)
	st := func(name string, a, b float64) record.Stage {
		return record.Stage{Name: name, Start: base + a, End: base + b}
	}
	crowded.Meta.Stages = []record.Stage{st("baseline", 0, 10), st("startup", 10, 10.2), st("warmup", 10.1, 10.2),
		st("formal", 10.2, 40), st("release", 40, 59.8), st("cooldown_check", 59.8, 60)}
	dc, err := Prepare(crowded, sampleResults())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		dc.Notes = append(dc.Notes, fmt.Sprintf("note %d says something long enough to need a second line", i))
	}
	for name, data := range map[string]*Data{"sample": d, "crowded": dc} {
		for _, opt := range []Options{DefaultOptions, {Width: 800, Height: 600}, {Width: 300, Height: 300}} {
			l, err := LayoutOf(data, opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.StageLabels) != len(data.Stages) {
				t.Errorf("%s %dx%d: %d stage labels, want %d", name, opt.Width, opt.Height, len(l.StageLabels), len(data.Stages))
			}
			checkLayout(t, fmt.Sprintf("%s %dx%d", name, opt.Width, opt.Height), l)
		}
	}
}

// layoutLabels by hand: three labels 30 pt wide in a 100 pt wide row from
// x = 0. a at stage start 0 → x 3; b starts at 10 → overlaps a → row 1;
// c at 95 would end at 128 > 100 → moved left to 70, clear of a (ends at
// 33) in row 0.
func TestLayoutLabels(t *testing.T) {
	w := vg.Points(30)
	boxes, rows := layoutLabels([]labelItem{{"a", 0, w, 0}, {"b", vg.Points(10), w, 0}, {"c", vg.Points(95), w, 0}},
		0, vg.Points(100), vg.Points(50), vg.Points(8), vg.Points(10))
	want := []struct{ x, top vg.Length }{{vg.Points(3), vg.Points(50)}, {vg.Points(13), vg.Points(40)}, {vg.Points(70), vg.Points(50)}}
	if rows != 2 {
		t.Errorf("rows = %d, want 2", rows)
	}
	for i, b := range boxes {
		if b.Min.X != want[i].x || b.Max.Y != want[i].top || b.Max.X-b.Min.X != w || b.Max.Y-b.Min.Y != vg.Points(8) {
			t.Errorf("box %d = %v, want x %v top %v", i, b, want[i].x, want[i].top)
		}
	}
}

// An SVG carries its fonts, so that a viewer draws the texts with the
// metrics they were placed with (a substitute font ran them over each
// other and off the right edge).
func TestSVGEmbedsFonts(t *testing.T) {
	d, err := Prepare(sampleRun(t), sampleResults())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Render(&buf, d, "svg", Options{Width: 800, Height: 600}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "@font-face") || !strings.Contains(buf.String(), "base64,") {
		t.Errorf("the SVG does not embed its fonts")
	}
}

// A run with a baseline stage but no release stage: the note says what is
// missing, not "no baseline" over a shaded baseline.
func TestBaselineNoteSaysWhatIsMissing(t *testing.T) {
	for _, c := range []struct {
		drop, want string
	}{
		{"release", "no release stage: the baseline ± tolerance band (drawn over the release) is not drawn"},
		{"baseline", "no baseline stage: no baseline ± tolerance band over the release"},
	} {
		run := sampleRun(t)
		var kept []record.Stage
		for _, s := range run.Meta.Stages {
			if s.Name != c.drop {
				kept = append(kept, s)
			}
		}
		run.Meta.Stages = kept
		d, err := Prepare(run, sampleResults())
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(d.Notes, "; ")
		if !strings.Contains(notes, c.want) || strings.Contains(notes, "no baseline or release stage") {
			t.Errorf("without %s: notes %q, want %q", c.drop, notes, c.want)
		}
	}
}
