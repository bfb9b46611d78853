package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/doc"
	"github.com/joulebench/joulebench/workflow"

	"github.com/joulebench/joulebench/internal/num"
)

// StageEnergy is one stage's GPU energy and its share of the run's total.
type StageEnergy struct {
	Stage string `json:"stage"`
	// StartS and EndS are seconds since the earliest row's start.
	StartS    float64 `json:"start_s"`
	EndS      float64 `json:"end_s"`
	DurationS float64 `json:"duration_s"`
	// EnergyJ is nil when it cannot be computed (Note says why).
	EnergyJ *float64 `json:"energy_j"`
	// Share is EnergyJ / TotalJ.
	Share *float64 `json:"share"`
	// Within names the stage this one lies inside (warm-up inside
	// startup); such a stage is not added to the total again.
	Within string `json:"within,omitempty"`
	// InTotal says whether EnergyJ adds to TotalJ.
	InTotal bool   `json:"in_total"`
	Note    string `json:"note,omitempty"`
}

// StageBreakdown is the per-stage energy of one run.
type StageBreakdown struct {
	RunID     string        `json:"run_id"`
	Simulated bool          `json:"simulated"`
	Stages    []StageEnergy `json:"stages"`
	// TotalJ is the sum over the rows in the total whose energy is known;
	// Total names them ("startup + formal + release").
	TotalJ float64 `json:"total_j"`
	Total  string  `json:"total"`
	Note   string  `json:"note,omitempty"`
}

// Stages builds a run's energy by stage from its evaluated results and the
// profile's stage_energy rows: each row's interval and energy are the
// derived values the profile computed for it (the same boundaries and
// methods as its metrics), never recomputed here. A row inside another
// (warm-up inside startup) or marked in_total: false gets its share of the
// same total and is not added to it.
func Stages(run *record.Run, res *record.Results, rows []workflow.StageEnergy) StageBreakdown {
	b := StageBreakdown{RunID: run.Meta.RunID, Simulated: run.Meta.Simulated, Stages: []StageEnergy{}}
	if !MeasuredDomains(run.Meta)[record.DomainGPU] && len(run.Meta.Hardware.Devices) > 0 {
		// A node, CPU or imported recording: these rows are GPU energy.
		b.Note = "the run measured no GPU power (its energy figures are of the boundary it measured, above): no GPU energy by stage"
		return b
	}
	if len(rows) == 0 {
		if onlyFormal(run.Meta) {
			b.Note = "the run has one stage, formal (an imported or external recording): its energy is the formal figures above"
			return b
		}
		b.Note = "the profile has no stage_energy section (re-evaluate with --profile benchmark-1.5 for one)"
		return b
	}
	if res == nil {
		b.Note = "run not evaluated"
		return b
	}
	value := func(name string) (float64, string) {
		r, ok := res.Values[name]
		if !ok {
			return 0, "no " + name + " in the results"
		}
		if v, ok := num.Finite(r.Value); ok {
			return v, ""
		}
		if r.Note != "" {
			return 0, r.Note
		}
		return 0, fmt.Sprintf("%s is not a number (%v)", name, r.Value)
	}
	t0 := math.Inf(1)
	type span struct{ a, b float64 }
	spans := make([]*span, len(rows))
	var counted []string
	for i, r := range rows {
		if r.Counted() {
			counted = append(counted, r.Stage)
		}
		a, na := value(r.StartName())
		e, nb := value(r.EndName())
		if na == "" && nb == "" {
			spans[i] = &span{a, e}
			t0 = min(t0, a)
		}
	}
	b.Total = strings.Join(counted, " + ")
	for i, r := range rows {
		se := StageEnergy{Stage: r.Stage, Within: r.Within, InTotal: r.Counted()}
		if sp := spans[i]; sp != nil {
			se.StartS, se.EndS, se.DurationS = sp.a-t0, sp.b-t0, sp.b-sp.a
		}
		if e, note := value(r.EnergyName()); note != "" {
			se.Note = note
		} else {
			se.EnergyJ = &e
			if se.InTotal {
				b.TotalJ += e
			}
		}
		b.Stages = append(b.Stages, se)
	}
	if b.TotalJ > 0 {
		for i := range b.Stages {
			if e := b.Stages[i].EnergyJ; e != nil {
				sh := *e / b.TotalJ
				b.Stages[i].Share = &sh
			}
		}
	}
	return b
}

// onlyFormal reports whether the run's only stage is formal (an imported
// recording, an external engine measured without lifecycle stages).
func onlyFormal(m record.Meta) bool {
	for _, s := range m.Stages {
		if s.Name != "formal" {
			return false
		}
	}
	return true
}

func fmtOpt(v *float64, prec int) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}

func fmtShare(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v*100, 'f', 1, 64) + " %"
}

// RenderStages writes per-stage energy tables, one per run.
func RenderStages(w io.Writer, bds []StageBreakdown, format string) error {
	return doc.Render(w, StagesDoc(bds), format)
}

var stageCSVColumns = doc.Cols("run_id", "stage", "within", "in_total", "start_s", "end_s", "duration_s", "energy_j", "share", "note", "simulated")

// StagesDoc is the energy by stage of runs: a titled table per run; its
// JSON the breakdowns, its data one line per run and stage.
func StagesDoc(bds []StageBreakdown) *doc.Document {
	data := &doc.Table{Columns: stageCSVColumns}
	for _, b := range bds {
		for _, s := range b.Stages {
			data.Add(stageCSV(b, s))
		}
	}
	d := &doc.Document{Data: data, JSON: bds}
	for i, b := range bds {
		var blocks []doc.Block
		if i > 0 {
			blocks = append(blocks, &doc.Blank{})
		}
		blocks = append(blocks, &doc.Title{Text: fmt.Sprintf("GPU energy by stage · run %s", b.RunID)})
		if b.Note != "" {
			blocks = append(blocks, &doc.Text{Text: "note: " + b.Note})
		}
		d.Sections = append(d.Sections, doc.Section{Blocks: blocks})
		if len(b.Stages) == 0 {
			continue // no table without rows: the note says why
		}
		t := &doc.Table{Columns: []doc.Column{{Name: "stage"}, {Name: "start", Unit: "s"}, {Name: "duration", Unit: "s"}, {Name: "energy", Unit: "J"}, {Name: "share"}, {Name: "note"}},
			NoWrapMarkdown: true}
		for _, s := range b.Stages {
			name := s.Stage
			switch {
			case s.Within != "":
				name += " (in " + s.Within + ")"
			case !s.InTotal:
				name += " (not in total)"
			}
			t.Add([]string{name, strconv.FormatFloat(s.StartS, 'f', 1, 64), strconv.FormatFloat(s.DurationS, 'f', 1, 64),
				fmtOpt(s.EnergyJ, 1), fmtShare(s.Share), orDash(s.Note)})
		}
		if b.TotalJ > 0 {
			total := b.TotalJ
			t.Add([]string{"total (" + b.Total + ")", "", "", fmtOpt(&total, 1), "100.0 %", ""})
		}
		d.Add(t)
	}
	return d
}

func stageCSV(b StageBreakdown, s StageEnergy) []string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return g(*v)
	}
	return []string{b.RunID, s.Stage, s.Within, strconv.FormatBool(s.InTotal), g(s.StartS), g(s.EndS), g(s.DurationS), opt(s.EnergyJ), opt(s.Share), s.Note, strconv.FormatBool(b.Simulated)}
}

// RunsWithStages renders runs side by side (Runs) followed by each run's
// energy by stage. bds[i] belongs to runs[i]. As one document in every
// format: JSON adds "stage_energy" to each run's object; CSV adds rows named
// stage.<name>.energy_j and stage.<name>.share to Runs' table.
func RunsWithStages(w io.Writer, runs []Run, bds []StageBreakdown, format string) error {
	d, err := RunsWithStagesDoc(runs, bds)
	if err != nil {
		return err
	}
	return doc.Render(w, d, format)
}

// RunsWithStagesDoc is RunsWithStages' document.
func RunsWithStagesDoc(runs []Run, bds []StageBreakdown) (*doc.Document, error) {
	return RunsReportDoc(runs, bds, nil)
}

// RunsReportDoc is RunsWithStagesDoc followed by the energy by host of
// each run that has one (hosts[i] of runs[i]; nil, or a nil hosts, for a
// run on one host without roles, which shows none: its output is
// RunsWithStagesDoc's). JSON adds "host_energy" to such a run's object;
// CSV adds rows named host.<host>[.<role>].energy_j, .mean_power_w,
// .share and .j_per_token_share.
func RunsReportDoc(runs []Run, bds []StageBreakdown, hosts []*HostBreakdown) (*doc.Document, error) {
	if len(bds) != len(runs) {
		return nil, fmt.Errorf("report: %d runs but %d stage breakdowns", len(runs), len(bds))
	}
	if hosts != nil && len(hosts) != len(runs) {
		return nil, fmt.Errorf("report: %d runs but %d host breakdowns", len(runs), len(hosts))
	}
	d := RunsDoc(runs)
	d.Add(&doc.Blank{})
	d.Append(StagesDoc(bds))
	d.JSON = runsWithStagesJSON{runs: d.JSON, stages: bds, hosts: hosts}
	for i, h := range hosts {
		if h == nil {
			continue
		}
		d.Add(&doc.Blank{})
		d.Add(hostBlocks(h)...)
		excluded := runs[i].Results != nil && runs[i].Results.Excluded
		d.Data.Add(hostRows(runs[i].Meta, excluded, h)...)
	}
	for i, b := range bds {
		m := runs[i].Meta
		excluded := runs[i].Results != nil && runs[i].Results.Excluded
		for _, s := range b.Stages {
			note := s.Note
			if s.Within != "" {
				note = "inside " + s.Within + "; " + note
			}
			for _, kv := range []struct{ name, value, unit string }{
				{"stage." + s.Stage + ".energy_j", fmtOpt(s.EnergyJ, -1), "J"},
				{"stage." + s.Stage + ".share", fmtOpt(s.Share, -1), "fraction"},
			} {
				if kv.value == "-" {
					kv.value = ""
				}
				d.Data.Add([]string{m.RunID, m.Profile.Name, m.Engine.Kind, m.Engine.Model, m.Status, strconv.FormatBool(m.Simulated),
					strconv.FormatBool(excluded), kv.name, kv.value, kv.unit, trimNote(note), ""})
			}
		}
	}
	return d, nil
}

// runsWithStagesJSON is the JSON of the runs (RunsDoc) as generic objects,
// its keys sorted as documented, each with its "stage_energy" (and its
// "host_energy" when it has one); encoded
// only when JSON is asked for.
type runsWithStagesJSON struct {
	runs   any
	stages []StageBreakdown
	hosts  []*HostBreakdown // nil, or one per run (nil: none)
}

func (r runsWithStagesJSON) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.runs)
	if err != nil {
		return nil, err
	}
	var items []map[string]any
	if err := json.Unmarshal(b, &items); err != nil || len(items) != len(r.stages) {
		return nil, fmt.Errorf("report: cannot add stage energy to the JSON of the runs: %v", err)
	}
	for i := range items {
		items[i]["stage_energy"] = r.stages[i]
		if i < len(r.hosts) && r.hosts[i] != nil {
			items[i]["host_energy"] = r.hosts[i]
		}
	}
	return json.Marshal(items)
}

func trimNote(s string) string {
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == ';') {
		s = s[:len(s)-1]
	}
	return s
}
