package runner

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/sim/simtest"
	"github.com/joulebench/joulebench/internal/runprogress"

	"github.com/joulebench/joulebench/archive"
	simengine "github.com/joulebench/joulebench/engines/sim"
	"github.com/joulebench/joulebench/telemetry"
)

// Two engines in turn: each run in its own directory under one parent,
// the idle level measured once before the first, the cooldown before the
// second recorded in its run.json (events and labels), each shown as one
// of several. A run whose results fail does not stop the next one.
func TestRunEnginesCooldown(t *testing.T) {
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Engines = []string{"sim", "sim"}
	s.Out = filepath.Join(t.TempDir(), "engines")
	checks := WithCode(CodeChecks, errors.New("check all_sent failed"))
	var reports []Report
	s.Report = func(_ context.Context, r Report) error {
		reports = append(reports, r)
		if len(reports) == 1 {
			return checks
		}
		return nil
	}
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, msgs.String())
	}
	want := []string{filepath.Join(s.Out, "1-sim"), filepath.Join(s.Out, "2-sim")}
	if res.Parent != s.Out || strings.Join(res.Dirs, " ") != strings.Join(want, " ") || len(res.Errs) != 1 || !errors.Is(res.Errs[0], checks) {
		t.Fatalf("result %+v", res)
	}
	if len(reports) != 2 || !reports[0].OneOfMany || !reports[1].OneOfMany {
		t.Errorf("reports %+v", reports)
	}
	for i, dir := range res.Dirs {
		run, err := archive.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, cooled := run.Meta.EventByName("cooldown_ended")
		if cooled != (i == 1) || (run.Meta.Labels["cooldown"] != "") != (i == 1) || (run.Meta.Labels["cooldown_idle_w"] != "") != (i == 1) {
			t.Errorf("run %d: cooldown event %v, labels %v; want them on the second run only", i+1, cooled, run.Meta.Labels)
		}
	}
	for _, m := range []string{"== engine 1 of 2: sim", "== engine 2 of 2: sim", "cooldown between engines: idle level", "cooldown: ", "engine sim: check all_sent failed"} {
		if !strings.Contains(msgs.String(), m) {
			t.Errorf("messages lack %q:\n%s", m, msgs.String())
		}
	}
	// An existing parent is never reused.
	if _, err := Run(context.Background(), s); CodeOf(err) != CodeInvalid || !strings.Contains(err.Error(), "a re-test is a new directory") {
		t.Errorf("existing parent: %v", err)
	}
}

// A sweep of the profile's own list (sweep_request_count "2, 3") runs once
// per value, labels each run, and its table has one row per value with
// the profile's sweep_columns.
func TestRunSweep(t *testing.T) {
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Sweep = "request_count"
	s.Out = filepath.Join(t.TempDir(), "sweep")
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, msgs.String())
	}
	sw := res.Sweep
	if sw == nil || sw.Name != "request_count" || strings.Join(sw.Columns, ",") != "formal_requests,bogus" || len(sw.Rows) != 2 || len(res.Errs) != 0 {
		t.Fatalf("result %+v, sweep %+v", res, sw)
	}
	for i, v := range []string{"2", "3"} {
		row := sw.Rows[i]
		if row.Value != v || row.Engine != "sim" || row.Dir != filepath.Join(s.Out, "request_count-"+v) {
			t.Errorf("row %d: %+v", i, row)
		}
		run, err := archive.Load(row.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if l := run.Meta.Labels; l["sweep_param"] != "request_count" || l["sweep_value"] != v {
			t.Errorf("row %d: labels %v", i, l)
		}
	}
	// A row without an archive says so. formal_requests has no format:
	// %.4g of 2 is "2"; bogus is no metric of the profile: "-".
	sw.Rows = append(sw.Rows, SweepRow{Value: "4", Engine: "sim", Dir: filepath.Join(s.Out, "none")})
	for _, tc := range []struct{ format, want string }{
		{"table", "request_count  engine  formal_requests  bogus  status\n" +
			"2              sim     2                -      complete\n" +
			"3              sim     3                -      complete\n" +
			"4              sim     -                -      no archive\n"},
		{"markdown", "| request_count | engine | formal_requests | bogus | status |\n| --- | --- | --- | --- | --- |\n" +
			"| 2 | sim | 2 | - | complete |\n| 3 | sim | 3 | - | complete |\n| 4 | sim | - | - | no archive |\n"},
		{"csv", "request_count,engine,formal_requests,bogus,status\n2,sim,2,-,complete\n3,sim,3,-,complete\n4,sim,-,-,no archive\n"},
		// One object per row, its keys sorted, every value a string.
		{"json", `[
  {
    "bogus": "-",
    "engine": "sim",
    "formal_requests": "2",
    "request_count": "2",
    "status": "complete"
  },
  {
    "bogus": "-",
    "engine": "sim",
    "formal_requests": "3",
    "request_count": "3",
    "status": "complete"
  },
  {
    "bogus": "-",
    "engine": "sim",
    "formal_requests": "-",
    "request_count": "4",
    "status": "no archive"
  }
]
`},
	} {
		var b bytes.Buffer
		if err := sw.Render(&b, tc.format); err != nil || b.String() != tc.want {
			t.Errorf("%s: %v\n%s\nwant\n%s", tc.format, err, b.String(), tc.want)
		}
	}
	// A value is the user's text: Markdown escapes it (a raw <script>
	// would run in a page that renders the table).
	sw.Rows = append(sw.Rows, SweepRow{Value: "<script>x|y</script>", Engine: "sim", Dir: filepath.Join(s.Out, "none")})
	var md bytes.Buffer
	if err := sw.Render(&md, "markdown"); err != nil || strings.Contains(md.String(), "<script>") || !strings.Contains(md.String(), "| sim |") {
		t.Errorf("markdown escapes no user text: %v\n%s", err, md.String())
	}
	var b bytes.Buffer
	if err := sw.Render(&b, "json"); err != nil || !strings.Contains(b.String(), `"status": "no archive"`) || !strings.Contains(b.String(), `"formal_requests": "3"`) {
		t.Errorf("json: %v\n%s", err, b.String())
	}
}

// A run cancelled during its formal requests ends interrupted: the
// archive keeps its raw data with status interrupted, and the error says
// so (exit 130).
func TestRunInterrupted(t *testing.T) {
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	s.Sets = []string{"request_count=40", "concurrency=1"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.StartProgress = func(record.TelemetryInfo, bool) (func(runprogress.Snapshot), func()) {
		return func(p runprogress.Snapshot) {
			if p.Stage == "formal" && p.Done > 0 {
				cancel()
			}
		}, nil
	}
	_, err := Run(ctx, s)
	if CodeOf(err) != CodeInterrupted {
		t.Fatalf("error %v (code %d), want interrupted", err, CodeOf(err))
	}
	run, lerr := archive.LoadData(s.Out)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if run.Meta.Status != record.StatusInterrupted || !strings.Contains(msgs.String(), "run interrupted: raw data kept in "+s.Out) {
		t.Errorf("status %q\n%s", run.Meta.Status, msgs.String())
	}
}

// A power source that cannot be opened fails the run before its steps:
// the archive says failed with the reason.
func TestRunTelemetryFails(t *testing.T) {
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	bad := errors.New("no such power source")
	s.OpenTelemetry = func(context.Context, TelemetryEnv) (telemetry.Source, record.TelemetryInfo, error) {
		return nil, record.TelemetryInfo{}, bad
	}
	if _, err := Run(context.Background(), s); !errors.Is(err, bad) {
		t.Fatalf("error %v", err)
	}
	run, err := archive.LoadData(s.Out)
	if err != nil {
		t.Fatal(err)
	}
	if run.Meta.Status != record.StatusFailed || !strings.Contains(run.Meta.Reason, bad.Error()) {
		t.Errorf("status %q reason %q", run.Meta.Status, run.Meta.Reason)
	}
}

// A server given by URL (the simulator serving) is benchmarked without
// being started: its model is the one it lists; one that is not there
// fails the run at once (exit 1), archived as failed.
func TestRunEngineURL(t *testing.T) {
	cfg := simengine.Quick(simengine.DefaultConfig())
	cfg.Log = io.Discard
	srv := simtest.Serve(t, cfg)
	ctx := context.Background()
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	s.Engine.URL = srv.BaseURL()
	s.Engine.ScrapeIntervalSet, s.Engine.ScrapeInterval = true, time.Second
	if _, err := Run(ctx, s); err != nil {
		t.Fatalf("run: %v\n%s", err, msgs.String())
	}
	run, err := archive.Load(s.Out)
	if err != nil {
		t.Fatal(err)
	}
	if e := run.Meta.Engine; e.Managed || e.Model != cfg.Model || run.Meta.Status != record.StatusComplete {
		t.Errorf("engine %+v status %s", e, run.Meta.Status)
	}
	// Nothing listens at a closed server's address.
	gone := httptest.NewServer(nil)
	gone.Close()
	s.Out = filepath.Join(t.TempDir(), "run")
	s.Engine.URL = gone.URL
	if _, err := Run(ctx, s); CodeOf(err) != CodeFailure || !strings.Contains(err.Error(), "--engine-url") {
		t.Fatalf("server not there: %v (code %d)", err, CodeOf(err))
	}
	if run, err := archive.LoadData(s.Out); err != nil || run.Meta.Status != record.StatusFailed {
		t.Errorf("archive of the failed run: %v", err)
	}
	if _, err := os.Stat(s.Out); err != nil {
		t.Error(err)
	}
}
