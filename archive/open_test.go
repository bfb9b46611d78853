package archive

import (
	"github.com/joulebench/joulebench/archive/record"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An open stage is written without `end` and read back open; a closed one
// keeps its end; `end: null` is open too.
func TestOpenStageRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	w, err := Create(dir, record.Meta{RunID: "open", Status: record.StatusRunning})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.UpdateMeta(func(m *record.Meta) {
		m.Stages = []record.Stage{{Name: "baseline", Start: 10, End: 30}, {Name: "formal", Start: 40, Open: true}}
	}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"name": "formal",
      "start": 40
    }`) {
		t.Errorf("open stage not written without end:\n%s", raw)
	}
	m, err := ReadMeta(filepath.Join(dir, RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if b, f := m.Stages[0], m.Stages[1]; b.Open || b.End != 30 || !f.Open || f.Start != 40 {
		t.Errorf("stages read back %+v", m.Stages)
	}

	path := filepath.Join(t.TempDir(), RunFile)
	os.WriteFile(path, []byte(`{"format_version": 1, "run_id": "r", "status": "running", "stages": [{"name": "release", "start": 5, "end": null}]}`), 0o644)
	if m, err := ReadMeta(path); err != nil || !m.Stages[0].Open {
		t.Errorf("end null: %+v, %v", m.Stages, err)
	}
}

// Without power samples, an open stage is clamped to the latest request
// time; never before its start.
func TestClampOpenStagesWithoutPower(t *testing.T) {
	r := &record.Run{
		Meta: record.Meta{Stages: []record.Stage{{Name: "formal", Start: 5, Open: true}, {Name: "late", Start: 50, Open: true}, {Name: "done", Start: 1, End: 2}}},
		Requests: []record.Request{
			{SentAt: 5, FirstTokenAt: 6, DoneAt: 9},
			{SentAt: 7, FirstTokenAt: 8}, // cut off: no done_at
		},
	}
	got := r.ClampOpenStages()
	if strings.Join(got, ",") != "formal,late" {
		t.Errorf("clamped %v", got)
	}
	// The latest request time is 9 (done_at of the first).
	if s := r.Meta.Stages; s[0].End != 9 || s[1].End != 50 || s[2].End != 2 {
		t.Errorf("stages %+v, want formal to 9, late to its start 50, done unchanged", s)
	}
}
