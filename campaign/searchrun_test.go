package campaign

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/exitcode"
)

// fakeArchive writes a complete archive of 30 formal requests at
// concurrency conc: each generates 11 tokens with a TPOT of (10 + conc)
// ms, so a TPOT bound of 20.5 ms is met up to concurrency 10.
func fakeArchive(t *testing.T, dir string, conc int, status string) {
	t.Helper()
	const t0 = 1.7e9
	meta := record.Meta{RunID: filepath.Base(dir), Simulated: true, Profile: record.ProfileRef{Name: "benchmark-1.5"},
		Engine: record.EngineInfo{Kind: "sim", Model: "m"}, Status: status, StartedAt: t0, EndedAt: t0 + 100,
		RequestSet: record.RequestSet{Count: 30}, Stages: []record.Stage{{Name: "formal", Start: t0 + 1, End: t0 + 90}}}
	w, err := archive.Create(dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	tpot := float64(10+conc) / 1000
	var last float64
	for i := range 30 {
		sent := t0 + 1 + float64(i)*0.5
		last = sent + 0.05 + 10*tpot
		if err := w.AppendRequest(record.Request{ID: fmt.Sprintf("f%02d", i), Phase: "formal", SentAt: sent, FirstTokenAt: sent + 0.05,
			DoneAt: last, OutputTokens: 11, TokensSource: "usage", OK: true}); err != nil {
			t.Fatal(err)
		}
	}
	// The formal stage ends at its last response (the reader holds it to
	// its requests).
	if err := w.UpdateMeta(func(m *record.Meta) { m.Stages[0].End = last }); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// An slo search interrupted in its third run resumes from
// search-state.json: the two points measured are not run again, the
// interrupted one runs again into a new directory, and the search finds
// the knee, concurrency 10 (bisection over 1..32: 1 meets, 32 not, 16
// not, 8 meets, 12 not, 10 meets, 11 not: 10).
func TestRunSearchResumes(t *testing.T) {
	c := load(t, "name: s\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: sim}]}\n"+
		"search: {kind: slo, low: 1, high: 32, slo: {tpot_ms: 20.5}}\n")
	var ran []string
	interruptAt := 3
	exec := func(ctx context.Context, p Plan) (Result, error) {
		r := p.Runs[0]
		dir, err := c.NextDir(r)
		if err != nil {
			return Result{}, err
		}
		conc, _ := strconv.Atoi(strings.TrimPrefix(r.Axes["load"], "c"))
		ran = append(ran, r.Axes["load"])
		if len(ran) == interruptAt {
			fakeArchive(t, dir, conc, record.StatusInterrupted)
			return Result{Interrupted: true}, nil
		}
		fakeArchive(t, dir, conc, record.StatusComplete)
		return Result{}, nil
	}
	var log strings.Builder
	res, st, err := c.RunSearch(context.Background(), c.Expand(), Options{Log: &log}, exec)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || len(st.Decisions) != 2 || strings.Join(ran, " ") != "c1 c32 c16" {
		t.Fatalf("first search: interrupted %v, %d decisions, ran %v\n%s", res.Interrupted, len(st.Decisions), ran, log.String())
	}
	ran, interruptAt = nil, -1
	log.Reset()
	res, st, err = c.RunSearch(context.Background(), c.Expand(), Options{Log: &log}, exec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Interrupted || strings.Join(ran, " ") != "c16 c8 c12 c10 c11" {
		t.Errorf("resumed search ran %v\n%s", ran, log.String())
	}
	if strings.Count(log.String(), "measured before") != 2 {
		t.Errorf("log:\n%s", log.String())
	}
	kept, err := c.ReadSearchState()
	if err != nil {
		t.Fatal(err)
	}
	if kept.Found["engine=sim"] != "c10" || len(kept.Decisions) != 7 || len(res.Complete) != 7 {
		t.Errorf("found %v, %d decisions, %d complete", kept.Found, len(kept.Decisions), len(res.Complete))
	}
	if d := kept.Decisions[2]; d.Load.Concurrency != 16 || !strings.HasSuffix(d.Dir, ".try2") || d.Measure.Attainment != 0 {
		t.Errorf("decision 3 %+v", d)
	}
}

// MeasureRun reads the rates and the TTFT growth from the requests. Hand
// values: 30 requests sent every 0.5 s (offered (30-1)/14.5 = 2 req/s),
// each done 0.16 s later (achieved 2 req/s), TTFT 50 ms throughout
// (growth 1), TPOT 11 ms ≤ 20: attainment 1.
func TestMeasureRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	fakeArchive(t, dir, 1, record.StatusComplete)
	m, err := MeasureRun(dir, SLOBounds{TPOTMs: 20})
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	if !m.OK || !near(m.OfferedRPS, 2) || !near(m.AchievedRPS, 2) || !near(m.TTFTGrowth, 1) || m.Attainment != 1 {
		t.Errorf("measure %+v", m)
	}
	if m, _ := MeasureRun(filepath.Join(t.TempDir(), "none"), SLOBounds{}); m.OK || m.Reason == "" {
		t.Errorf("missing archive: %+v", m)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}

// The same search with --executor slurm: each point is one job (the fake
// cluster "runs" a job by writing its archive when squeue first sees it),
// and the search finds concurrency 10 as locally.
func TestRunSearchSlurm(t *testing.T) {
	c := load(t, "name: s\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: sim}]}\nslurm: {poll: 10ms}\n"+
		"search: {kind: slo, low: 1, high: 32, slo: {tpot_ms: 20.5}}\n")
	f := &fakeSlurm{queue: map[string]string{}, scripts: map[string]string{}}
	outRE := regexp.MustCompile(`--out '?([^' \n]+)`)
	concRE := regexp.MustCompile(`concurrency=(\d+)`)
	specRE := regexp.MustCompile(`--spec '?([^' \n]+)`)
	f.onSqueue = func(f *fakeSlurm) {
		for id, script := range f.scripts {
			if _, queued := f.queue[id]; !queued {
				continue
			}
			b, err := os.ReadFile(script)
			if err != nil {
				t.Fatal(err)
			}
			// The point's load is in its spec file, which the job runs.
			out, spec := outRE.FindStringSubmatch(string(b)), specRE.FindStringSubmatch(string(b))
			if out == nil || spec == nil {
				t.Fatalf("job script:\n%s", b)
			}
			sb, err := os.ReadFile(spec[1])
			if err != nil {
				t.Fatal(err)
			}
			conc := concRE.FindStringSubmatch(string(sb))
			if conc == nil {
				t.Fatalf("spec file:\n%s", sb)
			}
			n, _ := strconv.Atoi(conc[1])
			fakeArchive(t, out[1], n, record.StatusComplete)
			delete(f.queue, id)
		}
	}
	exec := func(ctx context.Context, p Plan) (Result, error) {
		return c.RunSlurm(ctx, p, Options{Binary: "jb"}, f.run)
	}
	_, _, err := c.RunSearch(context.Background(), c.Expand(), Options{}, exec)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.ReadSearchState()
	if err != nil {
		t.Fatal(err)
	}
	if st.Found["engine=sim"] != "c10" || f.next != 7 {
		t.Errorf("found %v after %d jobs, want c10 after 7", st.Found, f.next)
	}
}

// A search-state.json edited between runs is checked against the
// archives it names on resume, and refused where it contradicts them.
// The first search (bisection over 1..32 under TPOT ≤ 20.5 ms, TPOT
// 10 + concurrency ms) is interrupted in its third run, after c1 (TPOT
// 11 ms: attainment 1, meets) and c32 (42 ms: attainment 0, misses).
// Edited so that c32 "meets" (attainment 1), the state would end the
// search at once: "the SLO is met at the high bound", c32 found. On
// resume the state's c32 is measured again from its archive (attainment
// 0): the search stops with an error naming the state file, the point
// and both attainments, and runs nothing. Edited so that c1 "misses"
// (attainment 0), likewise.
func TestRunSearchRefusesEditedState(t *testing.T) {
	for _, tc := range []struct {
		name string
		step int     // the decision edited (0-based)
		att  float64 // the attainment written there
		want string
	}{
		{"c32 meets", 1, 1, "records slo_attainment 1 (meets the SLO), but its archive gives 0 (misses the SLO: target 0.99)"},
		{"c1 misses", 0, 0, "records slo_attainment 0 (misses the SLO: target 0.99), but its archive gives 1 (meets the SLO)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, "name: s\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: sim}]}\n"+
				"search: {kind: slo, low: 1, high: 32, slo: {tpot_ms: 20.5}}\n")
			var ran []string
			interruptAt := 3
			exec := func(ctx context.Context, p Plan) (Result, error) {
				r := p.Runs[0]
				dir, err := c.NextDir(r)
				if err != nil {
					return Result{}, err
				}
				conc, _ := strconv.Atoi(strings.TrimPrefix(r.Axes["load"], "c"))
				ran = append(ran, r.Axes["load"])
				if len(ran) == interruptAt {
					fakeArchive(t, dir, conc, record.StatusInterrupted)
					return Result{Interrupted: true}, nil
				}
				fakeArchive(t, dir, conc, record.StatusComplete)
				return Result{}, nil
			}
			if _, _, err := c.RunSearch(context.Background(), c.Expand(), Options{Log: io.Discard}, exec); err != nil {
				t.Fatal(err)
			}
			st, err := c.ReadSearchState()
			if err != nil || len(st.Decisions) != 2 {
				t.Fatalf("state %+v, %v", st, err)
			}
			st.Decisions[tc.step].Measure.Attainment = tc.att
			if err := c.writeSearchState(st); err != nil {
				t.Fatal(err)
			}
			ran, interruptAt = nil, -1
			var log strings.Builder
			_, _, err = c.RunSearch(context.Background(), c.Expand(), Options{Log: &log}, exec)
			point := st.Decisions[tc.step]
			if err == nil || !strings.Contains(err.Error(), SearchStateFile) || !strings.Contains(err.Error(), point.Load.Name()) ||
				!strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), point.Dir) {
				t.Errorf("resumed search: %v, want a refusal naming %s, %s, %s and %q\n%s", err, SearchStateFile, point.Load.Name(), point.Dir, tc.want, log.String())
			}
			if exitcode.Of(err) != int(exitcode.Invalid) {
				t.Errorf("exit code %d, want %d (invalid input)", exitcode.Of(err), exitcode.Invalid)
			}
			if len(ran) > 0 {
				t.Errorf("resumed search ran %v before refusing", ran)
			}
		})
	}
}
