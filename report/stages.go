package report

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/measure"
)

// StageEnergy is one stage's GPU energy and its share of the run's total.
type StageEnergy struct {
	Stage string `json:"stage"`
	// StartS and EndS are seconds since the first stage's start.
	StartS    float64 `json:"start_s"`
	EndS      float64 `json:"end_s"`
	DurationS float64 `json:"duration_s"`
	// EnergyJ is nil when it cannot be computed (Note says why).
	EnergyJ *float64 `json:"energy_j"`
	// Share is EnergyJ / the total of the top-level stages.
	Share *float64 `json:"share"`
	// Within names the stage this one lies inside (warm-up inside
	// startup); such a stage is not added to the total again.
	Within string `json:"within,omitempty"`
	Note   string `json:"note,omitempty"`
}

// StageBreakdown is the per-stage energy of one run.
type StageBreakdown struct {
	RunID     string `json:"run_id"`
	Simulated bool   `json:"simulated"`
	// Method is the energy method used: the cumulative counter when every
	// device has one, else the trapezoid over power samples ("auto").
	Method string        `json:"method"`
	Stages []StageEnergy `json:"stages"`
	// TotalJ is the sum over the top-level stages (stages not inside
	// another one) whose energy is known.
	TotalJ float64 `json:"total_j"`
	Note   string  `json:"note,omitempty"`
}

// Stages computes the GPU energy of every stage in run.json with
// PowerData.Energy(start, end, "auto"), and each stage's share of the sum
// over the top-level stages. A stage inside another (warm-up inside
// startup) gets its share of the same total and is not counted twice.
func Stages(run *archive.Run) StageBreakdown {
	b := StageBreakdown{RunID: run.Meta.RunID, Simulated: run.Meta.Simulated, Stages: []StageEnergy{}}
	var pd *measure.PowerData
	if len(run.Power) == 0 {
		b.Note = "no power samples"
	} else {
		var err error
		if pd, err = measure.NewPowerData(run.Power); err != nil {
			b.Note = "power.csv: " + err.Error()
			pd = nil
		}
	}
	switch {
	case pd == nil:
	case pd.HasCounter():
		b.Method = "counter"
	default:
		b.Method = "trapz"
	}
	// In time order; a stage before the stages inside it.
	stages := slices.Clone(run.Meta.Stages)
	slices.SortStableFunc(stages, func(a, b archive.Stage) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(b.End, a.End))
	})
	t0 := math.Inf(1)
	for _, s := range stages {
		t0 = min(t0, s.Start)
	}
	for i, s := range stages {
		se := StageEnergy{Stage: s.Name, StartS: s.Start - t0, EndS: s.End - t0, DurationS: s.End - s.Start}
		for j, o := range stages {
			if i != j && o.Start <= s.Start && s.End <= o.End && (o.End-o.Start > s.End-s.Start || j < i) {
				se.Within = o.Name
				break
			}
		}
		if pd == nil {
			se.Note = "no power data"
		} else if e, err := pd.Energy(s.Start, s.End, measure.MethodAuto); err != nil {
			se.Note = err.Error()
		} else {
			se.EnergyJ = &e
			if se.Within == "" {
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

// RenderStages writes per-stage energy tables (table or markdown), one per
// run.
func RenderStages(w io.Writer, bds []StageBreakdown, format string) error {
	switch format {
	case FormatTable, FormatMarkdown:
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(bds)
	case FormatCSV:
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"run_id", "stage", "within", "start_s", "end_s", "duration_s", "energy_j", "share", "method", "note", "simulated"})
		for _, b := range bds {
			for _, s := range b.Stages {
				_ = cw.Write(stageCSV(b, s))
			}
		}
		cw.Flush()
		return cw.Error()
	default:
		return CheckFormat(format)
	}
	for i, b := range bds {
		if i > 0 {
			fmt.Fprintln(w)
		}
		title := fmt.Sprintf("Energy by stage · run %s", b.RunID)
		if b.Method != "" {
			title += " · method " + b.Method
		}
		if format == FormatMarkdown {
			fmt.Fprintf(w, "**%s**\n\n", title)
		} else {
			fmt.Fprintln(w, title)
		}
		if b.Note != "" {
			fmt.Fprintf(w, "note: %s\n", b.Note)
		}
		rows := make([][]string, 0, len(b.Stages)+1)
		for _, s := range b.Stages {
			name := s.Stage
			if s.Within != "" {
				name += " (in " + s.Within + ")"
			}
			rows = append(rows, []string{name, strconv.FormatFloat(s.StartS, 'f', 1, 64), strconv.FormatFloat(s.DurationS, 'f', 1, 64),
				fmtOpt(s.EnergyJ, 1), fmtShare(s.Share), orDash(s.Note)})
		}
		if b.TotalJ > 0 {
			total := b.TotalJ
			rows = append(rows, []string{"total (top-level stages)", "", "", fmtOpt(&total, 1), "100.0 %", ""})
		}
		if err := table(w, format, []string{"stage", "start s", "duration s", "energy J", "share", "note"}, rows); err != nil {
			return err
		}
	}
	return nil
}

func stageCSV(b StageBreakdown, s StageEnergy) []string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return g(*v)
	}
	return []string{b.RunID, s.Stage, s.Within, g(s.StartS), g(s.EndS), g(s.DurationS), opt(s.EnergyJ), opt(s.Share), b.Method, s.Note, strconv.FormatBool(b.Simulated)}
}

// RunsWithStages renders runs side by side (Runs) followed by each run's
// energy by stage. bds[i] belongs to runs[i]. As one document in every
// format: JSON adds "stage_energy" to each run's object; CSV adds rows named
// stage.<name>.energy_j and stage.<name>.share to Runs' table.
func RunsWithStages(w io.Writer, runs []Run, bds []StageBreakdown, format string) error {
	if len(bds) != len(runs) {
		return fmt.Errorf("report: %d runs but %d stage breakdowns", len(runs), len(bds))
	}
	switch format {
	case FormatTable, FormatMarkdown:
		if err := Runs(w, runs, format); err != nil {
			return err
		}
		fmt.Fprintln(w)
		return RenderStages(w, bds, format)
	case FormatJSON:
		var buf bytes.Buffer
		if err := Runs(&buf, runs, format); err != nil {
			return err
		}
		var items []map[string]any
		if err := json.Unmarshal(buf.Bytes(), &items); err != nil || len(items) != len(runs) {
			return fmt.Errorf("report: cannot add stage energy to the JSON of the runs: %v", err)
		}
		for i := range items {
			items[i]["stage_energy"] = bds[i]
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(items)
	case FormatCSV:
		var buf bytes.Buffer
		if err := Runs(&buf, runs, format); err != nil {
			return err
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		header, err := csv.NewReader(bytes.NewReader(buf.Bytes())).Read()
		if err != nil {
			return fmt.Errorf("report: read the CSV header of the runs: %w", err)
		}
		cw := csv.NewWriter(w)
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
					fields := map[string]string{
						"run_id": m.RunID, "profile": m.Profile.Name, "engine": m.Engine.Kind, "model": m.Engine.Model,
						"status": m.Status, "simulated": strconv.FormatBool(m.Simulated), "excluded": strconv.FormatBool(excluded),
						"name": kv.name, "value": kv.value, "unit": kv.unit, "note": trimNote(note),
					}
					if kv.value == "-" {
						fields["value"] = ""
					}
					row := make([]string, len(header))
					for k, h := range header {
						row[k] = fields[h]
					}
					_ = cw.Write(row)
				}
			}
		}
		cw.Flush()
		return cw.Error()
	}
	return CheckFormat(format)
}

func trimNote(s string) string {
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == ';') {
		s = s[:len(s)-1]
	}
	return s
}
