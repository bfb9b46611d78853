package plot

import (
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// importedNode is a run as `joulebench import ptdaemon` writes it: one
// stage formal, one node device at about 6.2 kW, one synthetic request
// over the window.
func importedNode() *record.Run {
	run := &record.Run{Meta: record.Meta{
		RunID: "imp", Status: record.StatusComplete, StartedAt: base, EndedAt: base + 15,
		Engine:   record.EngineInfo{Kind: "imported"},
		Hardware: record.Hardware{Devices: []record.Device{{ID: "node0", Method: "power", Domain: record.DomainNode}}},
		Stages:   []record.Stage{{Name: "formal", Start: base + 2.5, End: base + 12.5}},
	}}
	for k := 0; k <= 15; k++ {
		run.Power = append(run.Power, record.PowerSample{T: base + float64(k), Device: "node0", PowerW: 6000 + float64(k%3)*100, MemUsedBytes: -1})
	}
	run.Requests = []record.Request{{ID: "imported-window", Phase: "formal", SentAt: base + 2.5, FirstTokenAt: base + 2.5, DoneAt: base + 12.5,
		OutputTokens: 787352, TokensSource: "user", OK: true, Synthetic: true}}
	return run
}

// An imported recording's figure has the power panel only (no request
// panels: its one request is synthetic), a subtitle that promises no
// steady-state window or baseline band, and a power axis from 0 W.
func TestImportedRecordingFigure(t *testing.T) {
	d, err := Prepare(importedNode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.JPerToken) != 0 {
		t.Errorf("J/token points %v, want none (the request is synthetic)", d.JPerToken)
	}
	l, err := LayoutOf(d, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Panels) != 1 {
		t.Errorf("%d panels, want the power panel only", len(l.Panels))
	}
	for i, g := range l.Legends {
		if !inside(g.R, l.Within[i]) {
			t.Errorf("legend %v outside its data area %v", g.R, l.Within[i])
		}
	}
	p, _ := d.powerPlot(&Layout{})
	if title := p.Title.Text; strings.Contains(title, "steady") || strings.Contains(title, "baseline") || !strings.HasPrefix(title, "node power") {
		t.Errorf("power title %q: want node power without steady-state window or baseline band", title)
	}
	if p.Y.Min != 0 {
		t.Errorf("power axis starts at %g W, want 0", p.Y.Min)
	}

	// The simulated sample keeps its three panels and the full subtitle.
	s, err := Prepare(sampleRun(t), sampleResults())
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := LayoutOf(s, DefaultOptions); len(l.Panels) != 3 {
		t.Errorf("sample: %d panels, want 3", len(l.Panels))
	}
	if p, _ := s.powerPlot(&Layout{}); !strings.Contains(p.Title.Text, "steady-state window marked; baseline ± 5 % band") {
		t.Errorf("sample power title %q", p.Title.Text)
	}
}
