package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/internal/golden"
)

// stageRun writes an archive with one device at a constant 100 W, its
// counter reading 100 J per second, sampled every second over [0, 30];
// stages baseline [0,5], startup [5,10] with warm-up [8,10] inside it,
// formal [10,20], release [20,30].
func stageRun(t *testing.T, counter bool) *archive.Run {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	st := func(n string, a, b float64) archive.Stage { return archive.Stage{Name: n, Start: a, End: b} }
	meta := archive.Meta{RunID: "stages", Simulated: true, Profile: archive.ProfileRef{Name: "benchmark-1.5"},
		Engine: archive.EngineInfo{Kind: "sim", Model: "sim-tiny"}, Status: archive.StatusComplete,
		// listed out of time order, as a run writes them when stages close
		Stages: []archive.Stage{st("baseline", 0, 5), st("warmup", 8, 10), st("startup", 5, 10), st("formal", 10, 20), st("release", 20, 30)}}
	w, err := archive.Create(dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k <= 30; k++ {
		if err := w.AppendPower(archive.PowerSample{T: float64(k), Device: "gpu0", PowerW: 100, EnergyJ: float64(100 * k), HasEnergy: counter, MemUsedBytes: -1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// By hand, 100 W constant: baseline 5 s → 500 J, startup 5 s → 500 J,
// warm-up 2 s → 200 J (inside startup, not added again), formal 10 s →
// 1000 J, release 10 s → 1000 J. Total of the top-level stages 3000 J;
// shares 1/6 = 16.7 %, 1/6, 200/3000 = 6.7 %, 1/3 = 33.3 %, 1/3.
func TestStages(t *testing.T) {
	for _, counter := range []bool{true, false} {
		b := Stages(stageRun(t, counter))
		want := []struct {
			name, within string
			e, share     float64
		}{
			{"baseline", "", 500, 500.0 / 3000}, {"startup", "", 500, 500.0 / 3000}, {"warmup", "startup", 200, 200.0 / 3000},
			{"formal", "", 1000, 1000.0 / 3000}, {"release", "", 1000, 1000.0 / 3000},
		}
		if len(b.Stages) != len(want) || b.TotalJ != 3000 {
			t.Fatalf("counter=%v: %d stages, total %v; want 5, 3000", counter, len(b.Stages), b.TotalJ)
		}
		if wantM := map[bool]string{true: "counter", false: "trapz"}[counter]; b.Method != wantM {
			t.Errorf("method %q, want %q", b.Method, wantM)
		}
		for i, w := range want {
			s := b.Stages[i]
			if s.Stage != w.name || s.Within != w.within || s.EnergyJ == nil || *s.EnergyJ != w.e || s.Share == nil || *s.Share != w.share {
				t.Errorf("counter=%v: stage %d = %+v (energy %v, share %v), want %+v", counter, i, s, s.EnergyJ, s.Share, w)
			}
		}
	}
}

func TestStagesBadData(t *testing.T) {
	run := stageRun(t, true)
	run.Meta.Stages = append(run.Meta.Stages, archive.Stage{Name: "late", Start: 25, End: 40})
	b := Stages(run)
	last := b.Stages[len(b.Stages)-1]
	if last.Stage != "late" || last.EnergyJ != nil || !strings.Contains(last.Note, "outside the samples") {
		t.Errorf("stage beyond the data = %+v", last)
	}
	run.Power = nil
	b = Stages(run)
	if b.Note != "no power samples" || b.Stages[0].EnergyJ != nil || b.TotalJ != 0 {
		t.Errorf("no power: %+v", b)
	}
	var buf bytes.Buffer
	if err := RenderStages(&buf, []StageBreakdown{b}, FormatTable); err != nil {
		t.Fatal(err)
	}
	if err := RenderStages(&buf, nil, "yaml"); err == nil {
		t.Error("unknown format: no error")
	}
}

func TestRenderStagesGolden(t *testing.T) {
	bds := []StageBreakdown{Stages(stageRun(t, true))}
	for _, f := range []struct{ format, file string }{
		{FormatTable, "stages.table.golden"},
		{FormatMarkdown, "stages.markdown.golden"},
		{FormatCSV, "stages.csv.golden"},
		{FormatJSON, "stages.json.golden"},
	} {
		var buf bytes.Buffer
		if err := RenderStages(&buf, bds, f.format); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, f.file, buf.Bytes())
	}
}

// RunsWithStages keeps each format one document.
func TestRunsWithStages(t *testing.T) {
	run := stageRun(t, true)
	res := &archive.Results{RunID: "stages", Order: []string{"formal_energy_j"},
		Values: map[string]archive.Result{"formal_energy_j": {Kind: "metric", Value: 1000.0, Unit: "J"}}}
	runs := []Run{{Meta: run.Meta, Results: res}}
	bds := []StageBreakdown{Stages(run)}

	var buf bytes.Buffer
	if err := RunsWithStages(&buf, runs, bds, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var items []struct {
		RunID  string         `json:"run_id"`
		Stages StageBreakdown `json:"stage_energy"`
	}
	if err := json.Unmarshal(buf.Bytes(), &items); err != nil || len(items) != 1 || items[0].Stages.TotalJ != 3000 {
		t.Fatalf("json: %v %+v\n%s", err, items, buf.String())
	}

	buf.Reset()
	if err := RunsWithStages(&buf, runs, bds, FormatCSV); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("csv: %v", err)
	}
	found := false
	for _, r := range recs[1:] {
		if strings.Join(r, ",") == "" {
			t.Fatal("empty row")
		}
		for i, h := range recs[0] {
			if h == "name" && r[i] == "stage.formal.energy_j" {
				found = true
				for j, h2 := range recs[0] {
					if h2 == "value" && r[j] != "1000" {
						t.Errorf("stage.formal.energy_j = %q, want 1000", r[j])
					}
				}
			}
		}
	}
	if !found {
		t.Errorf("no stage.formal.energy_j row:\n%v", recs)
	}

	buf.Reset()
	if err := RunsWithStages(&buf, runs, bds, FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Energy by stage · run stages · method counter") || !strings.Contains(buf.String(), "warmup (in startup)") {
		t.Errorf("table:\n%s", buf.String())
	}
	if err := RunsWithStages(&buf, runs, nil, FormatTable); err == nil {
		t.Error("mismatched lengths: no error")
	}
}
