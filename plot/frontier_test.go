package plot

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func sampleFrontier() *Frontier {
	return &Frontier{Latency: "tpot_p50_ms", Simulated: true, Series: []FrontierSeries{
		{Name: "sim-llm-8b · sim · chat", Points: []FrontierPoint{
			{Latency: 6.7, JPerToken: 1.35, Label: "concurrency=1", Pareto: true},
			{Latency: 7.0, JPerToken: 0.65, Label: "rate=13.2", Pareto: true, Best: true},
			{Latency: 7.7, JPerToken: 0.43, Label: "unlimited", Pareto: true},
		}},
		{Name: "sim-llm-70b · sim · chat", Points: []FrontierPoint{
			{Latency: 9, JPerToken: 2}, {Latency: 12, JPerToken: 1.2, Pareto: true},
		}},
	}}
}

// The frontier is drawn in each format: a PNG of the asked size, an SVG
// that names the axes and the points' loads, a PDF.
func TestRenderFrontier(t *testing.T) {
	opt := Options{Width: 800, Height: 600}
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := RenderFrontier(&buf, sampleFrontier(), format, opt); err != nil {
				t.Fatal(err)
			}
			switch format {
			case "png":
				img, err := png.Decode(&buf)
				if err != nil {
					t.Fatal(err)
				}
				if b := img.Bounds(); b.Dx() != 800 || b.Dy() != 600 {
					t.Errorf("png %v, want 800 × 600", b)
				}
			case "svg":
				s := buf.String()
				for _, want := range []string{"tpot_p50_ms (ms)", "J/token", "rate=13.2", "lowest J/token meeting the SLO", "SIMULATED"} {
					if !strings.Contains(s, want) {
						t.Errorf("svg lacks %q", want)
					}
				}
			case "pdf":
				if !bytes.HasPrefix(buf.Bytes(), []byte("%PDF")) {
					t.Errorf("not a PDF: %q", buf.Bytes()[:min(8, buf.Len())])
				}
			}
		})
	}
}

func TestSaveFrontierErrors(t *testing.T) {
	dir := t.TempDir()
	if err := SaveFrontier(filepath.Join(dir, "f.gif"), sampleFrontier(), DefaultOptions); err == nil || !strings.Contains(err.Error(), "unknown figure format") {
		t.Errorf("gif: %v", err)
	}
	if err := SaveFrontier(filepath.Join(dir, "f.svg"), &Frontier{}, DefaultOptions); err == nil || !strings.Contains(err.Error(), "no frontier") {
		t.Errorf("empty: %v", err)
	}
	path := filepath.Join(dir, "f.svg")
	if err := SaveFrontier(path, sampleFrontier(), DefaultOptions); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Errorf("saved %v, %v", fi, err)
	}
}

// The SLO's latency bound is a dashed vertical line named in the legend,
// inside the x axis even when it lies beyond every point (20 ms here, the
// last point at 12 ms).
func TestFrontierDrawsTheLatencyBound(t *testing.T) {
	f := sampleFrontier()
	f.Bounds = []float64{20}
	p, err := f.plot()
	if err != nil {
		t.Fatal(err)
	}
	if p.X.Max < 20 {
		t.Errorf("x axis ends at %v, before the bound at 20", p.X.Max)
	}
	var buf bytes.Buffer
	if err := RenderFrontier(&buf, f, "svg", Options{Width: 800, Height: 600}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "SLO: tpot_p50_ms ≤ 20 ms") {
		t.Errorf("svg lacks the bound's legend")
	}
	var none bytes.Buffer
	if err := RenderFrontier(&none, sampleFrontier(), "svg", Options{Width: 800, Height: 600}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(none.String(), "SLO: ") {
		t.Errorf("a frontier without a bound names one")
	}
}

// crowdedFrontier is a cap sweep's frontier: five power limits at four
// concurrencies each, the points of a concurrency close together (the
// cap moves them by little), every label long ("c32 · 250 W").
func crowdedFrontier() *Frontier {
	f := &Frontier{Latency: "tpot_p90_ms", Basis: "formal window"}
	for i, w := range []int{250, 300, 350, 400, 450} {
		s := FrontierSeries{Name: "sim · chat · " + strconv.Itoa(w) + " W"}
		for k, c := range []int{8, 16, 32, 64} {
			s.Points = append(s.Points, FrontierPoint{Latency: 8 + 2*float64(k) + 0.05*float64(i), JPerToken: 0.5 - 0.08*float64(k) + 0.004*float64(i),
				Label: "c" + strconv.Itoa(c) + " · " + strconv.Itoa(w) + " W", Best: w == 300 && c == 32})
		}
		f.Series = append(f.Series, s)
	}
	return f
}

// The point labels of a crowded frontier do not overlap each other; a
// label with no free place is left out, never the chosen point's ("c32 ·
// 300 W"), and at least half of them are placed.
func TestFrontierLabelsDoNotOverlap(t *testing.T) {
	opt := Options{Width: 800, Height: 600}
	boxes, dropped, err := FrontierLabels(crowdedFrontier(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(boxes)+len(dropped) != 20 {
		t.Fatalf("%d labels placed and %d left out, want 20 in all", len(boxes), len(dropped))
	}
	for i := range boxes {
		for j := i + 1; j < len(boxes); j++ {
			if overlaps(boxes[i].R, boxes[j].R) {
				t.Errorf("labels %q %v and %q %v overlap", boxes[i].Text, boxes[i].R, boxes[j].Text, boxes[j].R)
			}
		}
	}
	if slices.Contains(dropped, "c32 · 300 W") {
		t.Error("the chosen point's label is left out")
	}
	if len(boxes) < 10 {
		t.Errorf("only %d of 20 labels placed", len(boxes))
	}
}

// The y axis names the basis of the J/token plotted (J per good token
// is not the formal J/token); without one it says J/token alone.
func TestFrontierYAxisNamesBasis(t *testing.T) {
	f := sampleFrontier()
	f.Basis = "per good token, formal window"
	var buf bytes.Buffer
	if err := RenderFrontier(&buf, f, "svg", Options{Width: 800, Height: 600}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "J/token (per good token, formal window)") {
		t.Error("the y axis does not name the basis")
	}
	if got := sampleFrontier().yLabel(); got != "J/token" {
		t.Errorf("y axis without a basis: %q", got)
	}
}
