package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/campaign"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/internal/browsertest"
)

// frontierOf runs compare --format json on dir and returns its frontier.
// An interrupted run among them cannot be evaluated (exit 4): it is shown,
// out of the statistics, and not a point.
func frontierOf(t *testing.T, dir string, extra ...string) []compare.FrontierPoint {
	t.Helper()
	stdout, stderr, code := runCLI(t, append([]string{"compare", dir, "--format", "json"}, extra...)...)
	if code != exitOK && code != exitEval {
		t.Fatalf("compare: exit %d\n%s", code, stderr)
	}
	var rep struct {
		Frontier []compare.FrontierPoint `json:"frontier"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	return rep.Frontier
}

// waitFor waits until out shows want (the child's progress), failing
// after limit.
func waitFor(t *testing.T, cmd *exec.Cmd, out *syncBuffer, want string, limit time.Duration) {
	t.Helper()
	waitUntil(t, cmd, limit, func() bool { return strings.Contains(out.String(), want) },
		func() string { return strconv.Quote(want) + " never came:\n" + out.String() })
}

// The shipped example: a sweep search on the simulator, interrupted in its
// third point and resumed, ends with the frontier table and figure; along
// its points (by TPOT p50) J/token falls and TPOT p50 rises.
func TestFrontierExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator five times (about two minutes)")
	}
	src, err := os.ReadFile("../../examples/frontier.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "campaign.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, out := sweepProc(t, dir)
	waitFor(t, cmd, out, "step 2 unlimited: throughput point", 4*time.Minute)
	waitFor(t, cmd, out, "sim-r", time.Minute) // the first rate point started
	_ = cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err == nil || exitCodeOf(err) != exitInterrupted {
		t.Fatalf("interrupted search: %v, want exit %d\n%s", err, exitInterrupted, out.String())
	}
	cmd, out = sweepProc(t, dir)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("resumed search: %v\n%s", err, out.String())
	}
	s := out.String()
	if strings.Count(s, "measured before") != 2 || !strings.Contains(s, "Energy–latency frontier") || !strings.Contains(s, "frontier figure: ") {
		t.Errorf("resumed search did not reuse its two measured points, or no frontier:\n%s", s)
	}
	if fi, err := os.Stat(filepath.Join(dir, "frontier-out", "frontier.svg")); err != nil || fi.Size() == 0 {
		t.Errorf("frontier.svg: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "frontier-out", campaign.SearchStateFile))
	if err != nil {
		t.Fatal(err)
	}
	var st campaign.SearchState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Decisions) < 3 || st.Decisions[0].Load.Name() != "c1" || st.Decisions[1].Load.Name() != "unlimited" {
		t.Errorf("decisions %+v", st.Decisions)
	}
	pts := frontierOf(t, filepath.Join(dir, "frontier-out", "runs"))
	if len(pts) < 3 {
		t.Fatalf("%d frontier points, want at least 3", len(pts))
	}
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		if a.JPerToken == nil || b.JPerToken == nil || !(*b.JPerToken < *a.JPerToken) || !(*b.Latency > *a.Latency) {
			t.Errorf("point %d (%s) → %d (%s): J/token %v → %v, TPOT p50 %v → %v; want J/token falling, TPOT rising",
				i-1, compare.LoadText(a.Load), i, compare.LoadText(b.Load), deref(a.JPerToken), deref(b.JPerToken), deref(a.Latency), deref(b.Latency))
		}
	}
}

func deref(v *float64) float64 {
	if v == nil {
		return -1
	}
	return *v
}

func exitCodeOf(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// examples/slo.yaml searches concurrency 8..32 on the default simulator
// for a TPOT bound. Hand calculation (quick mode, speed 3): a decode step
// with b sequences takes (20 + 0.5·b)/3 ms, and a new request's 12-token
// prefill adds 0.6/3 = 0.2 ms to one step; with about 102 tokens per
// request (max_tokens 128, lengths 60–100 %) b/102 new requests come per
// step. So TPOT(b) ≈ (20 + 0.5·b)/3 + 0.2·b/102: 9.36 ms at 16, 9.53 ms at
// 17. A bound of 9.45 ms is met up to concurrency 16.
const sloExample = "../../examples/slo.yaml"

// A kind: slo search against the simulator (examples/slo.yaml) finds the
// concurrency up to which the TPOT bound is met, within the tolerance; a
// plain compare of its runs (no flag) decides for the lowest J/token
// meeting the SLO at the search's attainment, as computed here from each
// run's own run.json and results.json; the HTML comparison names the SLO
// and the chosen run at its top.
func TestSLOSearchFindsConcurrency(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator about seven times (about two minutes)")
	}
	src, err := os.ReadFile(sloExample)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "campaign.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "sweep", "campaign.yaml", "--joulebench-bin", os.Args[0])
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "JOULEBENCH_TEST_AS_MAIN=1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("slo search: %v\n%s", err, b)
	}
	sb, err := os.ReadFile(filepath.Join(dir, "slo-out", campaign.SearchStateFile))
	if err != nil {
		t.Fatal(err)
	}
	var st campaign.SearchState
	if err := json.Unmarshal(sb, &st); err != nil {
		t.Fatal(err)
	}
	var found string
	for _, v := range st.Found {
		found = v
	}
	// Known: 16; tolerance 1: the answer is 15 or 16.
	if found != "c16" && found != "c15" {
		t.Errorf("found %q, want c16 (or c15, within the tolerance)\n%s", found, b)
	}

	runs := filepath.Join(dir, "slo-out", "runs")
	want := lowestMeetingSLO(t, runs)
	stdout, stderr, code := runCLI(t, "compare", runs, "--format", "json")
	if code != exitOK {
		t.Fatalf("compare: exit %d\n%s", code, stderr)
	}
	var rep struct {
		Decision struct {
			Chosen        bool     `json:"chosen"`
			Run           string   `json:"run"`
			Basis         string   `json:"basis"`
			JPerToken     *float64 `json:"j_per_token"`
			LatencyMetric string   `json:"latency_metric"`
			SLO           *struct {
				TPOTMs     float64 `json:"tpot_ms"`
				Attainment float64 `json:"attainment_target"`
			} `json:"slo"`
			Rejected []struct{ Run, Reason string } `json:"rejected"`
		} `json:"decision"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	d := rep.Decision
	if !d.Chosen || d.Run != want.run || d.Basis != want.basis || d.JPerToken == nil || *d.JPerToken != want.j {
		t.Errorf("decision %s: %v J/token (%s); computed from the results: %s, %v J/token (%s)", d.Run, deref(d.JPerToken), d.Basis, want.run, want.j, want.basis)
	}
	if d.SLO == nil || d.SLO.TPOTMs != 9.45 || d.SLO.Attainment != 0.9 || d.LatencyMetric != "tpot_p90_ms" {
		t.Errorf("decision's SLO %+v against %s, want TPOT 9.45 ms at 0.9 against tpot_p90_ms (the percentile 0.9 implies)", d.SLO, d.LatencyMetric)
	}
	if len(d.Rejected) != want.points-1 {
		t.Errorf("%d points not chosen, want %d (every other point, with why): %+v", len(d.Rejected), want.points-1, d.Rejected)
	}

	page := filepath.Join(dir, "compare.html")
	if _, stderr, code := runCLI(t, "compare", runs, "--format", "html", "--out", page); code != exitOK {
		t.Fatalf("compare --format html: exit %d\n%s", code, stderr)
	}
	p := browsertest.Open(t, page)
	defer p.CheckClean(t)
	top := browsertest.Eval[string](t, p, `document.querySelector('section.compare').firstElementChild.id`)
	slo := browsertest.Eval[string](t, p, `document.getElementById('decision-slo').textContent`)
	chosen := browsertest.Eval[string](t, p, `document.getElementById('decision-chosen').textContent`)
	if top != "decision" || !strings.Contains(slo, "TPOT ≤ 9.45 ms for 90 % of requests") || !strings.Contains(chosen, "Chosen: run "+want.run) {
		t.Errorf("the page opens with #%s, SLO %q, chosen %q; want the decision naming TPOT ≤ 9.45 ms and run %s", top, slo, chosen, want.run)
	}
}

// expected is the choice computed by hand from the runs' own files.
type expected struct {
	run, basis string
	j          float64
	points     int
}

// lowestMeetingSLO reads each run's run.json (its slo_attainment_target)
// and results.json (slo_attainment, steady-state and formal J/token, the
// checks) and chooses, without compare's code: the runs whose attainment
// reaches their target; among them, on steady-state J/token when each has
// one in the statistics, else on the formal window's; the lowest. As
// compare-1.5.yaml says, a failed steady_state_reached or
// first_token_times_exact takes the steady-state J/token out, a failed
// batch_saturated nothing; any other failed check stops the test (the
// hand calculation does not model it).
func lowestMeetingSLO(t *testing.T, runs string) expected {
	t.Helper()
	entries, err := os.ReadDir(runs)
	if err != nil {
		t.Fatal(err)
	}
	type point struct {
		run            string
		steady, formal *float64
	}
	var meeting []point
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		var meta struct {
			RunID      string         `json:"run_id"`
			Parameters map[string]any `json:"parameters"`
		}
		var res struct {
			Values map[string]struct {
				Kind   string `json:"kind"`
				Value  any    `json:"value"`
				Passed *bool  `json:"passed"`
			} `json:"values"`
		}
		for _, f := range []struct {
			name string
			v    any
		}{{"run.json", &meta}, {"results.json", &res}} {
			b, err := os.ReadFile(filepath.Join(runs, e.Name(), f.name))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, f.v); err != nil {
				t.Fatal(err)
			}
		}
		n++
		noSteady, attInvalid := false, false
		for name, v := range res.Values {
			if v.Kind != "check" || v.Passed == nil || *v.Passed {
				continue
			}
			switch name {
			case "steady_state_reached":
				noSteady = true
			case "first_token_times_exact":
				// invalidates the latencies and slo_attainment (its
				// declaration), not energy (compare-1.5: removes none):
				// the point cannot show it meets the SLO.
				attInvalid = true
			case "batch_saturated":
			default:
				t.Fatalf("run %s: check %s failed: the hand calculation does not model it", meta.RunID, name)
			}
		}
		num := func(name string) *float64 {
			if x, ok := res.Values[name].Value.(float64); ok && !(noSteady && name == "steady_state_j_per_token") {
				return &x
			}
			return nil
		}
		att := num("slo_attainment")
		target, _ := meta.Parameters["slo_attainment_target"].(float64)
		if target != 0.9 {
			t.Fatalf("run %s: slo_attainment_target %v, want the search's 0.9 recorded", meta.RunID, target)
		}
		if att != nil && *att >= target && !attInvalid {
			meeting = append(meeting, point{meta.RunID, num("steady_state_j_per_token"), num("formal_j_per_token")})
		}
	}
	if len(meeting) == 0 {
		t.Fatal("no run meets the SLO")
	}
	basis := "steady_state"
	for _, p := range meeting {
		if p.steady == nil {
			basis = "formal"
		}
	}
	best := expected{j: math.Inf(1), basis: basis, points: n}
	for _, p := range meeting {
		j := p.formal
		if basis == "steady_state" {
			j = p.steady
		}
		if j != nil && *j < best.j {
			best.run, best.j = p.run, *j
		}
	}
	return best
}
