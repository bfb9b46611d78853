package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/compare"
)

// runCLI6 is runCLI with compare, estimate and plot registered (app.go
// registers them once they are wired in; then nothing is added here).
func runCLI6(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := newApp(&out, &errOut)
	have := map[string]bool{}
	for _, c := range a.root.Commands() {
		have[c.Name()] = true
	}
	for _, c := range []*cobra.Command{a.compareCmd(), a.estimateCmd(), a.plotCmd()} {
		if !have[c.Name()] {
			a.root.AddCommand(c)
		}
	}
	err := a.execute(context.Background(), args)
	code := 0
	if err != nil {
		code = exitCode(err)
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

// copyRun copies testdata/run-small to dir with its engine kind, model and
// labels replaced.
func copyRun(t *testing.T, dir, engine, model string, labels map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"power.csv", "requests.jsonl", "profile.yaml"} {
		b, err := os.ReadFile(filepath.Join(smallRun, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(smallRun, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["run_id"] = filepath.Base(dir)
	m["engine"] = map[string]any{"kind": engine, "managed": true, "model": model}
	m["labels"] = labels
	if b, err = json.MarshalIndent(m, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Two copies of run-small as a vLLM / SGLang pair. Each has 300 output
// tokens, so |T1 - T2| / max = 0: comparable. Full lifecycle (release_hold
// 5 s, so release closes at the engine exit at t=21): (500 + 1000 + 100) /
// 300 = 5.3333 J/token. Four requests never make two 100-request windows:
// both runs are flagged not_steady, which removes their steady-state
// J/token only: their full-lifecycle J/token stays in the statistics
// (median 1600/300).
func TestCompareCLI(t *testing.T) {
	root := filepath.Join(t.TempDir(), "runs")
	labels := map[string]string{"scenario": "chat", "model_params": "8e9"}
	copyRun(t, filepath.Join(root, "v"), "vllm", "tiny", labels)
	copyRun(t, filepath.Join(root, "s"), "sglang", "tiny", labels)

	out, errOut, code := runCLI6(t, "compare", root, "--set", "release_hold=5s", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var rep compare.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if len(rep.Runs) != 2 || len(rep.Pairs) != 1 || !rep.Pairs[0].Comparable || *rep.Pairs[0].TokenDiff != 0 {
		t.Fatalf("runs %d, pairs %+v", len(rep.Runs), rep.Pairs)
	}
	// run-small's archived profile.yaml is an older copy of
	// benchmark-1.5 (not today's built-in sha256): flagged profile_edited,
	// which removes nothing.
	for _, r := range rep.Runs {
		if !r.Included || flagsOf(r.Flags) != "not_steady,"+compare.FlagProfileEdited || strings.Join(r.Removed, ",") != "steady" || r.SizeGroup != "<=50B" || r.Scenario != "chat" ||
			r.FullJPerToken == nil || *r.FullJPerToken != 1600.0/300 {
			t.Errorf("run %s = %+v", r.RunID, r)
		}
	}
	if st := rep.Groups[0]; st.SizeGroup != "<=50B" || st.Included != 2 || st.MedianSteady != nil || st.MedianFull == nil ||
		math.Abs(*st.MedianFull-1600.0/300) > 1e-12 {
		t.Errorf("group = %+v", st)
	}

	// The default release hold (30 s) cannot close within the data: the
	// runs are excluded, and the table says so.
	out, _, code = runCLI6(t, "compare", filepath.Join(root, "v"), filepath.Join(root, "s"))
	if code != 0 || !strings.Contains(out, "release_not_closed") || !strings.Contains(out, "SIMULATED") ||
		!strings.Contains(out, "Flagged runs") {
		t.Errorf("exit %d\n%s", code, out)
	}
	for _, f := range []string{"markdown", "csv"} {
		if out, _, code := runCLI6(t, "compare", root, "--format", f); code != 0 || !strings.Contains(out, "not_steady") {
			t.Errorf("%s: exit %d\n%s", f, code, out)
		}
	}
}

func flagsOf(fs []compare.Flag) string {
	var n []string
	for _, f := range fs {
		n = append(n, f.Name)
	}
	return strings.Join(n, ",")
}

func TestCompareCLIErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad-compare.yaml")
	if err := os.WriteFile(bad, []byte("name: x\npairs: {tolerance: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"compare", "no/such/dir"}, exitInvalid, "no/such/dir: no such run directory"},
		{[]string{"compare", empty}, exitInvalid, "neither a run directory"},
		{[]string{"compare", smallRun, "--format", "yaml"}, exitInvalid, "unknown format"},
		{[]string{"compare", smallRun, "--compare-profile", bad}, exitInvalid, bad + ":2:20: pairs.tolerance: must be a fraction"},
		{[]string{"compare", smallRun, "--profile", "no-such-profile"}, exitInvalid, "run " + smallRun},
		{[]string{"estimate", smallRun, "--requests", "0"}, exitInvalid, "--requests"},
		{[]string{"plot", smallRun, "--out", "x.gif"}, exitInvalid, "unknown figure format"},
		{[]string{"plot", smallRun, "--width", "10"}, exitInvalid, "figure size"},
	} {
		_, errOut, code := runCLI6(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, want %d with %q\n%s", c.args, code, c.code, c.want, errOut)
		}
	}
}

// With window 2, one window and a CV bound of 10, run-small reaches steady
// state at request 1 (f0): the span runs from its completion (t=15) to the
// formal end (t=20): 5 s × 100 W = 500 J. The requests in it, each by its
// share of tokens generated there (uniform over [first, done]): f0 [11,15]
// 0, f1 [12,16] 1/4, f2 [13,18] 3/5, f3 [15,20] 1 → 1.85, so e_ss =
// 500/1.85 ≈ 270.27 J. E_startup = 500 J, E_release = 100 J. E(10) = 500 +
// 10·500/1.85 + 100 ≈ 3302.7 J; fixed share under 10 % when
// 600/(600 + (500/1.85)N) < 0.1 ⇔ N > 540·1.85/500 = 19.98 → 20; under
// 1 % ⇔ N > 594·1.85/50 = 219.78 → 220. (With steady_span_start
// earliest_first_token, a parameter of the built-in profile, not of the one
// archived with run-small, the span starts at f0's first token, t=11:
// 900 J over all 4 requests, e_ss 225 J, thresholds 25 and 265.)
func TestEstimateCLI(t *testing.T) {
	steady := []string{"--set", "release_hold=5s", "--set", "window=2", "--set", "min_windows=1", "--set", "cv_max=10"}
	out, errOut, code := runCLI6(t, append([]string{"estimate", smallRun, "--requests", "10,1000", "--format", "json"}, steady...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var est compare.Estimate
	if err := json.Unmarshal([]byte(out), &est); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Abs(want) }
	if est.StartupJ != 500 || est.ReleaseJ != 100 || est.SteadyEnergyJ != 500 || !near(est.SteadyRequests, 1.85) ||
		!near(est.PerRequestJ, 500/1.85) || !near(est.Points[0].EnergyJ, 600+10*500/1.85) ||
		est.Thresholds[0].N != 20 || est.Thresholds[1].N != 220 {
		t.Errorf("estimate = %+v", est)
	}
	out, errOut, code = runCLI6(t, append([]string{"estimate", smallRun, "--requests", "10", "--format", "json", "--profile", "benchmark-1.5", "--set", "steady_span_start=earliest_first_token"}, steady...)...)
	est = compare.Estimate{}
	if err := json.Unmarshal([]byte(out), &est); err != nil || code != 0 {
		t.Fatalf("exit %d, json: %v\n%s\n%s", code, err, out, errOut)
	}
	if est.SteadyEnergyJ != 900 || est.SteadyRequests != 4 || est.PerRequestJ != 225 || est.Points[0].EnergyJ != 2850 ||
		est.Thresholds[0].N != 25 || est.Thresholds[1].N != 265 {
		t.Errorf("estimate, earliest_first_token = %+v", est)
	}
	out, _, code = runCLI6(t, append([]string{"estimate", smallRun}, steady...)...)
	if code != 0 || !strings.Contains(out, "measured values take precedence") || !strings.Contains(out, "SIMULATED") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
	// Not steady with the run's own parameters: exit 4, naming the run.
	_, errOut, code = runCLI6(t, "estimate", smallRun, "--set", "release_hold=5s")
	if code != exitEval || !strings.Contains(errOut, smallRun) || !strings.Contains(errOut, "steady state not reached") {
		t.Errorf("not steady: exit %d\n%s", code, errOut)
	}
}

func TestPlotCLI(t *testing.T) {
	file := filepath.Join(t.TempDir(), "small.png")
	out, errOut, code := runCLI6(t, "plot", smallRun, "--out", file, "--width", "640", "--height", "480")
	if code != 0 || !strings.Contains(out, file) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 640 || b.Dy() != 480 {
		t.Errorf("%d × %d px, want 640 × 480", b.Dx(), b.Dy())
	}
	svg := filepath.Join(t.TempDir(), "small.svg")
	if _, errOut, code := runCLI6(t, "plot", smallRun, "--out", svg); code != 0 {
		t.Fatalf("svg: exit %d\n%s", code, errOut)
	}
	if b, _ := os.ReadFile(svg); !bytes.HasPrefix(b, []byte("<?xml")) {
		t.Errorf("svg starts %.20q", b)
	}
}

// report adds the energy by stage from the profile's stage_energy rows:
// 100 W constant, so startup [5,10] 500 J, formal [10,20] 1000 J, release
// [20,30] 1000 J (not closed: the samples end before the 30 s hold, so
// release ends at the stage's end); total startup + formal + release
// 2500 J, formal 1000/2500 = 40.0 %; baseline 500 J shown, not in it.
// report exits as analyze: 3, check release_closed (exclude) failed.
func TestReportStages(t *testing.T) {
	out, errOut, code := runCLI(t, "report", smallRun)
	if code != exitChecks {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"GPU energy by stage · run small", "1000.0", "40.0 %", "2500.0", "total (startup + formal + release)", "baseline (not in total)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	out, _, code = runCLI(t, "report", smallRun, "--format", "json")
	var items []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &items); code != exitChecks || err != nil || len(items) != 1 || items[0]["stage_energy"] == nil {
		t.Errorf("json: exit %d, %v\n%s", code, err, out)
	}
	out, _, code = runCLI(t, "report", smallRun, "--format", "csv")
	if code != exitChecks || !strings.Contains(out, "stage.formal.energy_j,1000,J") {
		t.Errorf("csv: exit %d\n%s", code, out)
	}
}

// compare --set slo_tpot_ms re-decides and relabels: decision.slo names
// the bound set, not the archived 13 ms; a bound no point meets still
// names the SLO.
func TestCompareSetRelabelsSLO(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r1")
	if err := os.CopyFS(dir, os.DirFS("../../archive/testdata/sample-run-ok")); err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err == nil {
		err = json.Unmarshal(b, &meta)
	}
	if err != nil {
		t.Fatal(err)
	}
	meta["parameters"].(map[string]any)["slo_tpot_ms"] = 13
	if b, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bound := range []float64{13, 12.2, 0.001} {
		args := []string{"compare", dir, "--format", "json"}
		if bound != 13 {
			args = append(args, "--set", "slo_tpot_ms="+strconv.FormatFloat(bound, 'g', -1, 64))
		}
		out, errOut, code := runCLI6(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errOut)
		}
		var rep compare.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		d := rep.Decision
		if d.SLO == nil || d.SLO.TPOTMs != bound || !strings.Contains(d.SLOText, "TPOT ≤ "+strconv.FormatFloat(bound, 'g', -1, 64)+" ms") {
			t.Errorf("%v: decision.slo %+v (%q), want TPOT %v ms", args, d.SLO, d.SLOText, bound)
		}
	}
}
