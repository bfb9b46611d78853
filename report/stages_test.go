package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/golden"
	"github.com/joulebench/joulebench/workflow"
)

// stageRun writes an archive with one device, sampled every second over
// [0, 30] at 100 W except 300 W over the formal stage's samples t = 10…19
// (its counter the running trapezoid of that power); stages baseline [0,5],
// startup [5,10] with warm-up [8,10] inside it, formal [10,20], release
// [20,30]; the engine exits at t = 21; two formal requests of 100 tokens
// each generating over [10, 20].
func stageRun(t *testing.T, counter bool) *record.Run {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	st := func(n string, a, b float64) record.Stage { return record.Stage{Name: n, Start: a, End: b} }
	meta := record.Meta{RunID: "stages", Simulated: true, Profile: record.ProfileRef{Name: "benchmark-1.5"},
		Engine: record.EngineInfo{Kind: "sim", Model: "sim-tiny"}, Status: record.StatusComplete,
		// listed out of time order, as a run writes them when stages close
		Stages: []record.Stage{st("baseline", 0, 5), st("warmup", 8, 10), st("startup", 5, 10), st("formal", 10, 20), st("release", 20, 30)},
		Events: []record.Event{{Name: "engine_exited", T: 21}}}
	w, err := archive.Create(dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	power := func(k int) float64 {
		if k >= 10 && k <= 19 {
			return 300
		}
		return 100
	}
	e := 0.0
	for k := 0; k <= 30; k++ {
		if k > 0 {
			e += (power(k-1) + power(k)) / 2
		}
		if err := w.AppendPower(record.PowerSample{T: float64(k), Device: "gpu0", PowerW: power(k), EnergyJ: e, HasEnergy: counter, MemUsedBytes: -1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"r1", "r2"} {
		if err := w.AppendRequest(record.Request{ID: id, Phase: "formal", SentAt: 10, FirstTokenAt: 10, DoneAt: 20, OutputTokens: 100, OK: true}); err != nil {
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

// evalBuiltin evaluates a run with the built-in benchmark-1.5 profile and
// --set overrides.
func evalBuiltin(t *testing.T, run *record.Run, sets map[string]string) (*record.Results, []workflow.StageEnergy) {
	t.Helper()
	src, name, err := workflow.ReadProfile("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	l, err := workflow.Load(src, name, workflow.Options{Overrides: sets})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := workflow.Evaluate(context.Background(), l, run)
	if res == nil {
		t.Fatal("no results")
	}
	return res, l.Profile.StageEnergy
}

// By hand. Samples are 100 W except t = 10…19 at 300 W; the trapezoid
// over [9, 10] is (100 + 300)/2 = 200 J and over [19, 20] also 200 J.
//
//	baseline [0,5]: 500 J (shown, not in the total: not lifecycle energy)
//	startup [5,10]: 4 × 100 + 200 = 600 J; warm-up [8,10]: 100 + 200 =
//	300 J (inside startup, not added)
//	formal [10,20]: 9 × 300 + 200 = 2900 J
//	release: ends at release complete, the latest of engine exit (21),
//	power back in ±5 % of the 100 W baseline for the hold (from t = 20)
//	and memory (not recorded): t = 21, so [20,21] = 100 J — not the
//	release stage's [20,30] = 1000 J, which holds the hold.
//
// With release_hold 5 s the release closes; the total is startup + formal +
// release = 600 + 2900 + 100 = 3600 J = full-lifecycle J/token × formal
// tokens = 18 × 200. Shares are energy / 3600 (baseline 500/3600 too).
func TestStages(t *testing.T) {
	for _, counter := range []bool{true, false} {
		run := stageRun(t, counter)
		res, rows := evalBuiltin(t, run, map[string]string{"release_hold": "5s"})
		b := Stages(run, res, rows)
		want := []struct {
			name, within string
			in           bool
			start, dur   float64
			e            float64
		}{
			{"baseline", "", false, 0, 5, 500}, {"startup", "", true, 5, 5, 600}, {"warmup", "startup", false, 8, 2, 300},
			{"formal", "", true, 10, 10, 2900}, {"release", "", true, 20, 1, 100},
		}
		if len(b.Stages) != len(want) || !near(b.TotalJ, 3600) || b.Total != "startup + formal + release" {
			t.Fatalf("counter=%v: %d stages, total %v (%s); want 5, 3600 J (startup + formal + release)\n%+v", counter, len(b.Stages), b.TotalJ, b.Total, b)
		}
		for i, w := range want {
			s := b.Stages[i]
			if s.Stage != w.name || s.Within != w.within || s.InTotal != w.in || !near(s.StartS, w.start) || !near(s.DurationS, w.dur) ||
				s.EnergyJ == nil || !near(*s.EnergyJ, w.e) || s.Share == nil || !near(*s.Share, w.e/3600) {
				t.Errorf("counter=%v: stage %d = %+v (energy %v, share %v), want %+v", counter, i, s, s.EnergyJ, s.Share, w)
			}
		}
		full := res.Values["full_lifecycle_j_per_token"].Value.(float64)
		if !near(full, 18) || !near(b.TotalJ, full*200) {
			t.Errorf("counter=%v: full-lifecycle %v J/token × 200 tokens vs total %v J; want 18 and equal", counter, full, b.TotalJ)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// On every archive in the project's test data, the stage table's total is
// the numerator of full-lifecycle J/token (startup + formal + release =
// full_lifecycle_j_per_token × formal_output_tokens within 1e-9 relative),
// whatever the release and steady state did. (A run against an external
// engine has no startup or release, hence no full-lifecycle value: skipped.)
func TestStagesAddUpOnTestData(t *testing.T) {
	dirs, _ := filepath.Glob("../*/testdata/*/run.json")
	more, _ := filepath.Glob("../*/*/testdata/*/run.json")
	dirs = append(dirs, more...)
	n := 0
	for _, f := range dirs {
		run, err := archive.Load(filepath.Dir(f))
		if err != nil || run.Meta.Profile.Name != "benchmark-1.5" {
			continue
		}
		res, rows := evalBuiltin(t, run, nil)
		if _, ok := res.Values["startup_stage"].Value.(map[string]any); !ok {
			continue
		}
		n++
		b := Stages(run, res, rows)
		full, ok1 := res.Values["full_lifecycle_j_per_token"].Value.(float64)
		tok, ok2 := res.Values["formal_output_tokens"].Value.(int64)
		if !ok1 || !ok2 {
			t.Errorf("%s: full %v, tokens %v", f, res.Values["full_lifecycle_j_per_token"], res.Values["formal_output_tokens"])
			continue
		}
		want := full * float64(tok)
		if math.Abs(b.TotalJ-want) > 1e-9*want || b.Total != "startup + formal + release" {
			t.Errorf("%s: stage total %v J (%s), full-lifecycle × tokens %v J", f, b.TotalJ, b.Total, want)
		}
	}
	if n < 2 {
		t.Errorf("found %d benchmark-1.5 archives in the test data, want at least 2 (%v)", n, dirs)
	}
}

func TestStagesBadData(t *testing.T) {
	run := stageRun(t, true)
	res, rows := evalBuiltin(t, run, nil)
	// a row whose values are missing from the results says so
	rows = append(rows, workflow.StageEnergy{Stage: "late", Start: "1", End: "2", Energy: "3"})
	b := Stages(run, res, rows)
	last := b.Stages[len(b.Stages)-1]
	if last.Stage != "late" || last.EnergyJ != nil || !strings.Contains(last.Note, "no stage_late_energy_j") {
		t.Errorf("row without results = %+v", last)
	}
	if b := Stages(run, res, nil); b.Note == "" || len(b.Stages) != 0 {
		t.Errorf("no stage_energy section: %+v", b)
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
	run := stageRun(t, true)
	res, rows := evalBuiltin(t, run, map[string]string{"release_hold": "5s"})
	bds := []StageBreakdown{Stages(run, res, rows)}
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
	full, rows := evalBuiltin(t, run, map[string]string{"release_hold": "5s"})
	res := &record.Results{RunID: "stages", Order: []string{"formal_energy_j"},
		Values: map[string]record.Result{"formal_energy_j": {Kind: "metric", Value: 2900.0, Unit: "J"}}}
	runs := []Run{{Meta: run.Meta, Results: res}}
	bds := []StageBreakdown{Stages(run, full, rows)}

	var buf bytes.Buffer
	if err := RunsWithStages(&buf, runs, bds, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var items []struct {
		RunID  string         `json:"run_id"`
		Stages StageBreakdown `json:"stage_energy"`
	}
	if err := json.Unmarshal(buf.Bytes(), &items); err != nil || len(items) != 1 || !near(items[0].Stages.TotalJ, 3600) {
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
					if h2 == "value" && r[j] != "2900" {
						t.Errorf("stage.formal.energy_j = %q, want 2900", r[j])
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
	if !strings.Contains(buf.String(), "GPU energy by stage · run stages") || !strings.Contains(buf.String(), "warmup (in startup)") {
		t.Errorf("table:\n%s", buf.String())
	}
	if err := RunsWithStages(&buf, runs, nil, FormatTable); err == nil {
		t.Error("mismatched lengths: no error")
	}
}
