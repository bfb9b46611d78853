package analysis

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/exitcode"
)

// copyArchive copies the archive from into a new directory and applies
// edit (file → old → new, first occurrence) to it.
func copyArchive(t *testing.T, from string, file, old, new string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{archive.RunFile, archive.PowerFile, archive.RequestsFile, archive.EngineMetricsFile, "profile.yaml"} {
		b, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == file && file != "" {
			if !strings.Contains(string(b), old) {
				t.Fatalf("%s has no %q", f, old)
			}
			b = []byte(strings.Replace(string(b), old, new, 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// metricValues are the values of every metric of res.
func metricValues(res *record.Results) map[string]any {
	out := map[string]any{}
	for n, r := range res.Values {
		if r.Kind == "metric" {
			out[n] = r.Value
		}
	}
	return out
}

// An archive edited to contradict its own files (the adversarial pass's
// cases, on sample-run-ok) is refused (exit 2), or excluded by a check
// (exit 3, "incomplete" for a run that says it did not finish), or
// evaluates to the figures of the unedited run: never other figures with
// exit 0. The pass measured, on real runs: (a) 103,777 tok/s instead of
// 3,545, (b) 858 W -> 1,291 W, (c) 858 MW, (d) 57.3 M tok/s, (e) J/token
// 0.2419 -> 0.2764.
func TestLyingArchiveRefusedOrFiguresUnchanged(t *testing.T) {
	ctx := context.Background()
	base, err := noUserDirs().Evaluate(ctx, sampleRunOK, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := metricValues(base.Results)
	const (
		refused   = "refused"
		excluded  = "excluded"
		unchanged = "unchanged"
	)
	for _, tc := range []struct {
		name, file, old, new string
		outcome, msg         string
	}{
		{"(a) formal stage end moved to start + 1 s", archive.RunFile,
			`{"name": "formal", "start": 1717405210, "end": 1717405220}`, `{"name": "formal", "start": 1717405210, "end": 1717405211}`,
			refused, `stage "release" starts at 1717405220 but stage "formal" ends at 1717405211`},
		{"(b) power of a device run.json does not list", archive.PowerFile,
			"1717405215,gpu1,306,2002698,77309411328\n", "1717405215,gpu1,306,2002698,77309411328\n1717405215,gpu9,900,,\n",
			refused, `device "gpu9" is not one run.json's hardware.devices lists`},
		{"(c) power × 10^6", archive.PowerFile, "1717405215,gpu0,316,", "1717405215,gpu0,316000000,",
			refused, "316000000 W is above 5000 W"},
		{"(c) power_limit_w 10^12", archive.RunFile, `"power_field": "power_usage",`, `"power_field": "power_usage", "power_limit_w": 1e12,`,
			refused, "power_limit_w 1e+12 W is outside [0, 5000]"},
		{"(d) 4 Mi output tokens", archive.RequestsFile, `"output_tokens":100,`, `"output_tokens":4194304,`,
			refused, "output_tokens 4194304 is above the request's max_tokens 512"},
		{"(e) 10^18 J added to a counter", archive.PowerFile, "1717405215,gpu0,316,1002848,", "1717405215,gpu0,316,1000000000001002848,",
			refused, "is above 2^43 J"},
		{"(f) status running", archive.RunFile, `"status": "complete",`, `"status": "running",`,
			excluded, "incomplete run: status running"},
		{"(h) unknown status", archive.RunFile, `"status": "complete",`, `"status": "finished",`,
			refused, `status "finished" is not a run status`},
		{"(h) status twice", archive.RunFile, `"status": "complete",`, `"status": "complete", "status": "running",`,
			refused, `duplicate key "status"`},
		{"a field no reader knows", archive.RunFile, `"status": "complete",`, `"status": "complete", "x_note": "hi",`,
			unchanged, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyArchive(t, sampleRunOK, tc.file, tc.old, tc.new)
			e, err := noUserDirs().Evaluate(ctx, dir, "", nil)
			switch tc.outcome {
			case refused:
				if err == nil || exitcode.Of(err) != int(exitcode.Invalid) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("err %v (exit %d), want refused (exit 2) with %q", err, exitcode.Of(err), tc.msg)
				}
				return
			case excluded:
				if err != nil {
					t.Fatal(err)
				}
				c := ChecksOutcome(e.Results)
				if exitcode.Of(c) != int(exitcode.Checks) || !strings.Contains(c.Error(), tc.msg) || !e.Results.Excluded {
					t.Fatalf("checks %v (exit %d), want excluded (exit 3) with %q", c, exitcode.Of(c), tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := metricValues(e.Results); !reflect.DeepEqual(got, want) {
				a, _ := json.Marshal(got)
				b, _ := json.Marshal(want)
				t.Errorf("figures changed:\n got %s\nwant %s", a, b)
			}
		})
	}
}

// killedAt writes sample-run-ok as a run killed with SIGKILL at time cut
// leaves it: status running, no ended_at, stages begun by then (open when
// they had not ended), events, requests done and power samples up to cut.
func killedAt(t *testing.T, cut float64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	b, err := os.ReadFile(filepath.Join(sampleRunOK, archive.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	meta["status"] = record.StatusRunning
	delete(meta, "ended_at")
	var stages []any
	for _, s := range meta["stages"].([]any) {
		st := s.(map[string]any)
		if st["start"].(float64) > cut {
			continue
		}
		if st["end"].(float64) > cut {
			delete(st, "end")
		}
		stages = append(stages, st)
	}
	meta["stages"] = stages
	var events []any
	for _, e := range meta["events"].([]any) {
		if e.(map[string]any)["t"].(float64) <= cut {
			events = append(events, e)
		}
	}
	meta["events"] = events
	b, _ = json.MarshalIndent(meta, "", "  ")
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(archive.RunFile, b)
	run, err := archive.LoadData(sampleRunOK)
	if err != nil {
		t.Fatal(err)
	}
	var reqs, power strings.Builder
	for _, q := range run.Requests {
		if q.DoneAt <= cut {
			line, _ := json.Marshal(q)
			reqs.Write(append(line, '\n'))
		}
	}
	pb, _ := os.ReadFile(filepath.Join(sampleRunOK, archive.PowerFile))
	for i, line := range strings.SplitAfter(string(pb), "\n") {
		if i == 0 || line == "" {
			power.WriteString(line)
			continue
		}
		var ts float64
		if _, err := fmt.Sscanf(line, "%g,", &ts); err == nil && ts <= cut {
			power.WriteString(line)
		}
	}
	write(archive.RequestsFile, []byte(reqs.String()))
	write(archive.PowerFile, []byte(power.String()))
	pf, _ := os.ReadFile(filepath.Join(sampleRunOK, "profile.yaml"))
	write("profile.yaml", pf)
	return dir
}

// A run killed with SIGKILL in each stage of sample-run-ok (baseline
// 1717405200-04, startup 04-10 with warm-up 08-10, formal 10-20, release
// 20-30) is never evaluated as a complete run: the check run_finished
// fails (exit 3) or a formula has no data (exit 4), the run is excluded
// as incomplete, and every metric says "incomplete run".
func TestKilledRunIsIncompleteInEveryStage(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		stage string
		cut   float64
	}{{"baseline", 1717405202.5}, {"startup", 1717405206.5}, {"warmup", 1717405209.5}, {"formal", 1717405215.5}, {"release", 1717405226.5}} {
		t.Run(tc.stage, func(t *testing.T) {
			dir := killedAt(t, tc.cut)
			e, err := noUserDirs().Evaluate(ctx, dir, "", nil)
			if err != nil {
				t.Fatalf("a killed run is refused: %v", err)
			}
			code := exitcode.Of(ChecksOutcome(e.Results))
			if e.EvalErr != nil {
				code = int(exitcode.Eval) // analyze: values missing
			}
			if code != int(exitcode.Checks) && code != int(exitcode.Eval) {
				t.Errorf("exit %d, want 3 or 4", code)
			}
			if !e.Results.Excluded || !strings.Contains(e.Results.ExcludeReason, "incomplete run: status running") {
				t.Errorf("excluded %v (%q), want incomplete", e.Results.Excluded, e.Results.ExcludeReason)
			}
			for n, r := range e.Results.Values {
				if r.Kind == "metric" && !strings.Contains(r.Note, "incomplete run") {
					t.Errorf("metric %s = %v, note %q: not marked incomplete", n, r.Value, r.Note)
				}
			}
		})
	}
}

// (g) sample-run-ok with every power_w 0 and no counter: no reading is not
// a reading of zero. Every GPU energy and power figure is not applicable
// with the reason (the formulas are reported as not evaluated: exit 4),
// never 0.0 W or 0.0000 J/token; the figures without power keep their
// values (1836 tokens, as the unedited run).
func TestAllZeroPowerIsNoReading(t *testing.T) {
	t.Run("the whole run", func(t *testing.T) { zeroPowerIsNoReading(t, 0, math.Inf(1)) })
	// 1717405210 to 1717405220: the formal stage, under load.
	t.Run("the formal stage", func(t *testing.T) { zeroPowerIsNoReading(t, 1717405210, 1717405220) })
}

// zeroedArchive is a copy of sample-run-ok with its power rows from t =
// from to to reading 0 W and no counter.
func zeroedArchive(t *testing.T, from, to float64) string {
	t.Helper()
	dir := copyArchive(t, sampleRunOK, "", "", "")
	b, err := os.ReadFile(filepath.Join(dir, archive.PowerFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i := 1; i < len(lines); i++ {
		c := strings.Split(lines[i], ",")
		var ts float64
		if _, err := fmt.Sscan(c[0], &ts); err != nil {
			t.Fatal(err)
		}
		if ts >= from && ts <= to {
			c[2], c[3] = "0", ""
			lines[i] = strings.Join(c, ",")
		}
	}
	if err := os.WriteFile(filepath.Join(dir, archive.PowerFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// zeroPowerIsNoReading zeroes sample-run-ok's power rows from t = from to
// to and evaluates it.
func zeroPowerIsNoReading(t *testing.T, from, to float64) {
	dir := zeroedArchive(t, from, to)
	e, err := noUserDirs().Evaluate(context.Background(), dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.EvalErr == nil || !strings.Contains(e.EvalErr.Error(), "every power reading of the gpu devices (in the run or its formal stage) is 0 W") {
		t.Errorf("EvalErr = %v, want the figures without a reading named", e.EvalErr)
	}
	for _, n := range []string{"formal_j_per_token", "avg_gpu_power_w", "formal_energy_j", "startup_energy_j"} {
		if r := e.Results.Values[n]; r.Value != nil || !strings.Contains(r.Note, "not a reading of zero") {
			t.Errorf("%s = %v (%q), want n/a with the reason", n, r.Value, r.Note)
		}
	}
	if v := e.Results.Values["formal_output_tokens"].Value; fmt.Sprint(v) != "1836" {
		t.Errorf("formal_output_tokens = %v, want 1836", v)
	}
	if got := ZeroPowerDomains(e.Run); len(got) != 1 || got[0] != "gpu" {
		t.Errorf("ZeroPowerDomains = %v, want [gpu]", got)
	}
	// Readings that are not all zero are readings: sample-run-ok itself
	// has none without.
	run, err := archive.LoadData(sampleRunOK)
	if err != nil {
		t.Fatal(err)
	}
	if got := ZeroPowerDomains(run); len(got) != 0 {
		t.Errorf("ZeroPowerDomains(sample-run-ok) = %v, want none", got)
	}
}
