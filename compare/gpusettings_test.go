package compare

import (
	"bytes"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/doc"
)

// A sweep of the power limit at one load under a TPOT bound of 18 ms:
//
//	run   limit     steady J/token  tpot_p50_ms
//	d     default   0.2400          17.1
//	c250  250 W     0.1420          17.6
//	c200  200 W     0.1200          19.5   (misses the SLO)
//
// The lowest J/token meeting the SLO is 250 W (0.1420): 200 W is lower but
// misses it. 2 of 3 points meet it. Without a bound the lowest overall,
// 200 W, is named, saying no SLO was given.
func TestGPUSettingsChoice(t *testing.T) {
	p := builtin(t)
	r := func(id, limit string, st, tpot float64) Run {
		run := withParams(mk(spec{id: id, scenario: "chat", model: "m", engine: "sim", params: "8e9", steady: st, full: st, tokens: 100,
			values: map[string]any{"tpot_p50_ms": tpot}}), nil)
		if limit != "" {
			run.Meta.GPUSettings = &record.GPUSettings{PowerLimitW: limit, Controller: "sim"}
		}
		return run
	}
	runs := []Run{r("d", "", 0.24, 17.1), r("c250", "250", 0.142, 17.6), r("c200", "200", 0.12, 19.5)}
	rep := p.CompareWith(runs, FrontierOptions{LatencyMax: 18})
	if len(rep.GPUSettings) != 1 {
		t.Fatalf("choices %+v", rep.GPUSettings)
	}
	c := rep.GPUSettings[0]
	if c.PowerLimitW != "250" || c.RunID != "c250" || *c.JPerToken != 0.142 || *c.Latency != 17.6 || !c.SLO || c.MeetingSLO != 2 || c.Points != 3 || c.Basis != BasisSteady {
		t.Errorf("choice %+v", c)
	}
	var buf bytes.Buffer
	if err := Render(&buf, rep, doc.FormatTable); err != nil {
		t.Fatal(err)
	}
	want := "chat · m · sim: the decision's choice, 250 W (run c250): 0.1420 J/token (steady-state J/token), tpot_p50_ms 17.60 ms; 2 of 3 setting × load points meet the SLO"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, buf.String())
	}
	free := p.Compare(runs).GPUSettings[0]
	if free.PowerLimitW != "200" || free.SLO || free.MeetingSLO != 0 {
		t.Errorf("no SLO: %+v", free)
	}
	// A bound no point meets: no choice, said so.
	none := p.CompareWith(runs, FrontierOptions{LatencyMax: 10}).GPUSettings[0]
	if none.RunID != "" || !none.SLO {
		t.Errorf("SLO unmet: %+v", none)
	}
	// Runs that do not differ in GPU settings: no choice.
	if got := p.Compare(runs[:1]).GPUSettings; got != nil {
		t.Errorf("one setting: %+v", got)
	}
}

// Runs that differ in their locked clocks at the default power limit: the
// choice names every setting the run changed, each in its unit (SM
// 900,1200 → "SM 900–1200 MHz", memory 1215,1215 → "mem 1215 MHz").
func TestGPUSettingsChoiceLocks(t *testing.T) {
	p := builtin(t)
	r := func(id, clocks, mem string, st float64) Run {
		run := withParams(mk(spec{id: id, scenario: "chat", model: "m", engine: "sim", params: "8e9", steady: st, full: st, tokens: 100,
			values: map[string]any{"tpot_p50_ms": 10.0}}), nil)
		if clocks != "" || mem != "" {
			run.Meta.GPUSettings = &record.GPUSettings{ClocksMHz: clocks, MemClocksMHz: mem, Controller: "nvml"}
		}
		return run
	}
	runs := []Run{r("d", "", "", 0.24), r("locked", "900,1200", "1215,1215", 0.14), r("sm", "900,1200", "", 0.2)}
	rep := p.Compare(runs)
	if len(rep.GPUSettings) != 1 {
		t.Fatalf("choices %+v", rep.GPUSettings)
	}
	c := rep.GPUSettings[0]
	if c.PowerLimitW != "-" || c.ClocksMHz != "900,1200" || c.MemClocksMHz != "1215,1215" || c.RunID != "locked" || c.Points != 3 {
		t.Errorf("choice %+v", c)
	}
	var buf bytes.Buffer
	if err := Render(&buf, rep, doc.FormatTable); err != nil {
		t.Fatal(err)
	}
	want := "chat · m · sim: the decision's choice, SM 900–1200 MHz, mem 1215 MHz (run locked): 0.1400 J/token"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, buf.String())
	}
}
