package steps

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workflow"
)

// finishProfile counts formal requests and excludes a run without any.
const finishProfile = `name: finish-test
steps: [{kind: archive}]
metrics:
  - {name: formal_n, unit: requests, expr: "len(filter(requests, .phase == 'formal'))"}
checks:
  - {name: has_formal, expr: "len(requests) > 0", severity: exclude, message: "no requests"}
`

func finishRC(t *testing.T) *workflow.RunContext {
	t.Helper()
	l, err := workflow.Load([]byte(finishProfile), "finish.yaml", workflow.Options{Registry: Registry()})
	if err != nil {
		t.Fatal(err)
	}
	rc := newRC(t)
	rc.Loaded = l
	return rc
}

func TestArchiveStep(t *testing.T) {
	cases := []struct {
		name     string
		requests int
		excluded bool
	}{
		{"two formal requests", 2, false},
		{"no requests: excluded, kept", 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := finishRC(t)
			start := rc.Clock.Now()
			rc.StageStart("formal", start)
			rc.StageStart("cooldown", start) // left open: the archive step closes it
			last := start
			for i := 0; i < c.requests; i++ {
				q := validRequest(rc, string(rune('a'+i)))
				if err := rc.Out.AppendRequest(q); err != nil {
					t.Fatal(err)
				}
				last = q.DoneAt
			}
			// The formal stage ends at its last response, as the requests
			// step ends it.
			if err := rc.StageEnd("formal", last); err != nil {
				t.Fatal(err)
			}
			stops := 0
			d := &Deps{StopMetrics: func() error { stops++; return nil }}
			if err := runArchive(context.Background(), rc, d, &ArchiveConfig{}); err != nil {
				t.Fatal(err)
			}
			run := reload(t, rc)
			if run.Meta.Status != record.StatusComplete || stops != 1 {
				t.Errorf("status %q, metrics stopped %d times", run.Meta.Status, stops)
			}
			if st, ok := run.Meta.StageByName("cooldown"); !ok || st.Open {
				t.Errorf("the open stage was not closed: %+v", run.Meta.Stages)
			}
			if run.Results == nil {
				t.Fatal("no results.json")
			}
			if got := run.Results.Values["formal_n"].Value; got != float64(c.requests) {
				t.Errorf("formal_n = %v (%T), want %d", got, got, c.requests)
			}
			if run.Meta.Excluded != c.excluded || run.Results.Excluded != c.excluded {
				t.Errorf("excluded: meta %v, results %v; want %v", run.Meta.Excluded, run.Results.Excluded, c.excluded)
			}
		})
	}
}

func TestFinishFailedKeepsRawDataWithoutResults(t *testing.T) {
	rc := finishRC(t)
	if err := rc.Out.AppendRequest(validRequest(rc, "a")); err != nil {
		t.Fatal(err)
	}
	if err := Finish(context.Background(), rc, record.StatusFailed, "engine crashed"); err != nil {
		t.Fatal(err)
	}
	run := reload(t, rc)
	if run.Meta.Status != record.StatusFailed || run.Meta.Reason != "engine crashed" || run.Meta.EndedAt == 0 {
		t.Errorf("meta status %q reason %q ended %v", run.Meta.Status, run.Meta.Reason, run.Meta.EndedAt)
	}
	if len(run.Requests) != 1 {
		t.Errorf("%d requests kept, want 1", len(run.Requests))
	}
	if _, err := os.Stat(rc.Out.Path(archive.ResultsFile)); !os.IsNotExist(err) {
		t.Errorf("a failed run has results.json (stat: %v)", err)
	}
}

// validRequest is a successful formal request with every time the reader
// requires.
func validRequest(rc *workflow.RunContext, id string) record.Request {
	t := rc.Clock.Now()
	// Done when made (not later): a stage the archive step closes now
	// holds it whole.
	return record.Request{ID: id, Phase: "formal", SentAt: t, FirstTokenAt: t, DoneAt: t, OK: true, OutputTokens: 3}
}

// The run's final status reaches run.json only after the data files are
// flushed and synced: a crash between the two writes leaves a run still
// "running", never a "complete" one missing its last rows. The redaction
// hook sees each run.json as it is written; when it carries the final
// status, requests.jsonl on disk must already hold the request. Before,
// the status was written first and the row was still in the buffer.
func TestFinishWritesStatusAfterTheData(t *testing.T) {
	for _, status := range []string{record.StatusComplete, record.StatusFailed} {
		t.Run(status, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			var onDisk []string // requests.jsonl when a final status was written
			w, err := archive.Create(dir, record.Meta{RunID: "t"}, archive.WithRedact(func(s string) string {
				if !strings.Contains(s, `"status": "running"`) {
					b, _ := os.ReadFile(filepath.Join(dir, archive.RequestsFile))
					onDisk = append(onDisk, string(b))
				}
				return s
			}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close() })
			rc := finishRC(t)
			rc.Out = w
			if err := w.AppendRequest(validRequest(rc, "last")); err != nil {
				t.Fatal(err)
			}
			if err := Finish(context.Background(), rc, status, ""); err != nil {
				t.Fatal(err)
			}
			if len(onDisk) == 0 {
				t.Fatal("no run.json with the final status was written")
			}
			if !strings.Contains(onDisk[0], `"id":"last"`) {
				t.Errorf("run.json got status %s while requests.jsonl on disk held %q: the last request was not flushed first", status, onDisk[0])
			}
		})
	}
}

// A run cut short whose stage ends cannot be recorded says so: the error
// of ending the open stages is Finish's and EndStages' (before, it was
// dropped and the run's error said nothing of it).
func TestFinishSurfacesStageEndErrors(t *testing.T) {
	rc := finishRC(t)
	rc.StageStart("formal", rc.Clock.Now())
	// run.json can no longer be written: the run directory is gone.
	if err := os.RemoveAll(rc.Out.Dir()); err != nil {
		t.Fatal(err)
	}
	err := (&Deps{}).EndStages(context.Background(), rc)
	if err == nil || !strings.Contains(err.Error(), "end stage formal") {
		t.Errorf("EndStages = %v, want the failure to end stage formal", err)
	}
	rc.StageStart("warmup", rc.Clock.Now())
	err = Finish(context.Background(), rc, record.StatusFailed, "cut short")
	if err == nil || !strings.Contains(err.Error(), "end stage warmup") {
		t.Errorf("Finish = %v, want the failure to end stage warmup", err)
	}
}
