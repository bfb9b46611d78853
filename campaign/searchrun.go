package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/internal/yamlstrict"
	"github.com/joulebench/joulebench/telemetry/gpusettings"
)

// SearchStateFile is the search's record of its decisions, in the campaign
// directory: a restarted sweep reuses the measures of the points it lists
// and goes on from where the search stopped.
const SearchStateFile = "search-state.json"

// SearchState is the content of SearchStateFile.
type SearchState struct {
	Kind      string     `json:"kind"`
	Decisions []Decision `json:"decisions"`
	// Found is, per group of an slo search, the highest load found that
	// meets the SLO ("" when none does).
	Found map[string]string `json:"found,omitempty"`
}

// PlanFunc runs a plan (one search point) and returns its result:
// RunLocal or RunSlurm bound to their options.
type PlanFunc func(ctx context.Context, p Plan) (Result, error)

// errInterrupted stops a search when its run was interrupted.
var errInterrupted = errors.New("search interrupted")

func nodeAt(root *yaml.Node, path ...string) *yaml.Node { return yamlstrict.NodeAt(root, path...) }

// PointRun is the run of one load point of a search group (a run of the
// plan without a load axis): its args plus the load's --set values, the
// load's name as its load axis, then the search's SLO as the profile's
// parameters (SLOSets), so that the point's archive carries the SLO it
// was searched under and analyze, compare and plot find it without flags.
// The SLO is not part of the run id (a point's id is its load and axes),
// so that a search restarted after this was added reuses its archives.
func (c *Campaign) PointRun(base Run, l LoadPoint) Run {
	axes := cloneMap(base.Axes)
	delete(axes, "rep")
	axes["load"] = l.Name()
	args := slices.Clone(base.Config.Args)
	sets := l.sets()
	for _, k := range sortedKeys(sets) {
		args = append(args, "--set", k+"="+sets[k])
	}
	if c.Search.SteadyRequests {
		args = append(args, "--steady-requests")
	}
	r := c.newRun(axes, sortedKeys(c.Matrix.Set), args, base.Rep, base.TP)
	for _, kv := range c.Search.SLOSets() {
		r.Config.Args = append(r.Config.Args, "--set", kv)
	}
	r.Spec, r.SpecErr = c.runSettingsOf(r.Config.Args)
	return r
}

// SLOSets are the --set values that record a search's SLO on each point
// it runs: every bound that is set (slo_ttft_ms, slo_tpot_ms, slo_e2e_ms)
// and the attainment target (slo_attainment_target); none without a bound.
func (s *Search) SLOSets() []string {
	if !s.SLO.set() {
		return nil
	}
	var out []string
	for _, b := range []struct {
		name string
		v    float64
	}{{"slo_ttft_ms", s.SLO.TTFTMs}, {"slo_tpot_ms", s.SLO.TPOTMs}, {"slo_e2e_ms", s.SLO.E2EMs}, {"slo_attainment_target", s.Attainment}} {
		if b.v > 0 {
			out = append(out, b.name+"="+strconv.FormatFloat(b.v, 'g', -1, 64))
		}
	}
	return out
}

// groupName names a search group by its axis values (the repetition
// only when there are several).
func (c *Campaign) groupName(r Run) string {
	var parts []string
	for _, k := range sortedKeys(r.Axes) {
		if k != "rep" || c.Repetitions > 1 {
			parts = append(parts, k+"="+r.Axes[k])
		}
	}
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, " ")
}

// RunSearch runs the campaign's search for every combination of the plan
// (which has no load axis): each point is a run given to exec, measured
// from its archive once complete. Each decision is logged and kept in
// SearchStateFile; a point already measured there, or with a complete
// archive, is not run again. The Result lists every complete point's
// archive; Interrupted is set when ctx ended a run.
func (c *Campaign) RunSearch(ctx context.Context, p Plan, o Options, exec PlanFunc) (Result, *SearchState, error) {
	o.defaults()
	if !c.Searching() {
		return Result{}, nil, errors.New("campaign has no search section")
	}
	kept, err := c.ReadSearchState()
	if err != nil {
		return Result{}, nil, err
	}
	st := &SearchState{Kind: c.Search.Kind, Found: map[string]string{}}
	var points []Run
	for _, base := range p.Runs {
		group := c.groupName(base)
		emit := func(d Decision) error {
			r := c.PointRun(base, d.Load)
			d.Group, d.Run = group, r.ID
			if as, _ := c.Attempts(r); len(as) > 0 {
				d.Dir = as[len(as)-1].Dir
			}
			if !slices.ContainsFunc(points, func(x Run) bool { return x.ID == r.ID }) {
				points = append(points, r)
			}
			st.Decisions = append(st.Decisions, d)
			fmt.Fprintf(o.Log, "search %s step %d %s: %s; next: %s\n", group, d.Step, d.Load.Name(), d.Reason, d.Next)
			return c.writeSearchState(st)
		}
		probe := c.probe(base, kept, o, exec)
		switch c.Search.Kind {
		case SearchSweep:
			err = c.Search.RunSweep(ctx, probe, emit)
		case SearchSLO:
			var res SLOResult
			res, err = c.Search.RunSLO(ctx, probe, emit)
			if err == nil {
				st.Found[group] = ""
				if res.Found {
					st.Found[group] = res.Load.Name()
					what := "highest load"
					if c.Search.Over == gpusettings.ParamPowerLimit {
						what = "lowest power limit"
					}
					fmt.Fprintf(o.Log, "search %s: %s meeting the SLO: %s\n", group, what, res.Load.Name())
				} else {
					fmt.Fprintf(o.Log, "search %s: no load meets the SLO\n", group)
				}
				err = c.writeSearchState(st)
			}
		}
		if errors.Is(err, errInterrupted) || ctx.Err() != nil {
			res, cerr := c.collect(Plan{Runs: points}, nil, o)
			res.Interrupted = true
			return res, st, cerr
		}
		if err != nil {
			return Result{}, st, err
		}
	}
	res, err := c.collect(Plan{Runs: points}, nil, o)
	return res, st, err
}

// probe measures a point of one group: from the kept state when it lists
// the point's complete archive, else from its archive, after running it
// when it has no complete one.
func (c *Campaign) probe(base Run, kept *SearchState, o Options, exec PlanFunc) Probe {
	return func(ctx context.Context, l LoadPoint) (Measure, error) {
		r := c.PointRun(base, l)
		as, err := c.Attempts(r)
		if err != nil {
			return Measure{}, err
		}
		if last, ok := Latest(as); ok && Status(as) == Complete && kept != nil {
			for _, d := range kept.Decisions {
				if d.Run == r.ID && d.Dir == last.Dir && d.Measure.OK {
					return c.checkKept(d, o)
				}
			}
		}
		if ToRun(Status(as), o.RetryFailed) {
			res, err := exec(ctx, Plan{Runs: []Run{r}})
			if err != nil {
				return Measure{}, err
			}
			if res.Interrupted || ctx.Err() != nil {
				return Measure{}, errInterrupted
			}
			if as, err = c.Attempts(r); err != nil {
				return Measure{}, err
			}
		}
		last, ok := Latest(as)
		if !ok {
			return Measure{OK: false, Reason: "no archive"}, nil
		}
		if Status(as) != Complete {
			return Measure{OK: false, Reason: orStr(last.Reason, string(Status(as)))}, nil
		}
		return MeasureRun(last.Dir, c.Search.SLO)
	}
}

// checkKept is the measure of a point the kept state lists as measured:
// measured again from the archive it names, and refused (invalid input)
// where the state contradicts it, so that an edited state never decides.
func (c *Campaign) checkKept(d Decision, o Options) (Measure, error) {
	m, err := MeasureRun(d.Dir, c.Search.SLO)
	if err != nil {
		return Measure{}, err
	}
	if why := c.Search.contradiction(d.Measure, m); why != "" {
		return Measure{}, exitcode.Invalidf("%s: step %d of search %s, point %s (run %s): %s, so the state contradicts the archive %s: delete %s to measure every point again from its archive",
			filepath.Join(c.Dir, SearchStateFile), d.Step, d.Group, d.Load.Name(), d.Run, why, d.Dir, SearchStateFile)
	}
	fmt.Fprintf(o.Log, "search point %s: measured before (%s), checked against its archive\n", d.Run, SearchStateFile)
	return m, nil
}

// contradiction says how a kept measure differs from the archive's (now);
// "" when they agree. A measure is a function of the archive, so the
// figures must be the same; the SLO verdict is said with them.
func (s *Search) contradiction(kept, now Measure) string {
	if !now.OK {
		return "records a measured point, but its archive gives none (" + now.Reason + ")"
	}
	if s.SLO.set() && !same(kept.Attainment, now.Attainment) {
		return fmt.Sprintf("records slo_attainment %s (%s), but its archive gives %s (%s)", gfmt(kept.Attainment), s.verdict(kept),
			gfmt(now.Attainment), s.verdict(now))
	}
	for _, f := range []struct {
		name      string
		kept, now float64
	}{{"achieved_rps", kept.AchievedRPS, now.AchievedRPS}, {"offered_rps", kept.OfferedRPS, now.OfferedRPS}, {"ttft_growth", kept.TTFTGrowth, now.TTFTGrowth}} {
		if !same(f.kept, f.now) {
			return fmt.Sprintf("records %s %s, but its archive gives %s", f.name, gfmt(f.kept), gfmt(f.now))
		}
	}
	return ""
}

// verdict is what an slo search decides from a measure.
func (s *Search) verdict(m Measure) string {
	if m.OK && m.Attainment >= s.Attainment {
		return "meets the SLO"
	}
	return "misses the SLO: target " + gfmt(s.Attainment)
}

// same: equal up to rounding (a measure kept as JSON reads back exactly;
// the margin only absorbs a last-digit difference).
func same(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

func gfmt(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// MeasureRun reads what a search needs from a complete archive's formal
// requests (see Measure). A run whose data cannot be read is not OK.
func MeasureRun(dir string, slo SLOBounds) (Measure, error) {
	run, err := archive.LoadData(dir)
	if err != nil {
		return Measure{OK: false, Reason: err.Error()}, nil
	}
	var all, ok []record.Request
	for _, q := range run.Requests {
		if q.Phase != "formal" {
			continue
		}
		all = append(all, q)
		if q.OK {
			ok = append(ok, q)
		}
	}
	if len(ok) < 2 {
		return Measure{OK: false, Reason: fmt.Sprintf("%d successful formal requests: too few to measure a rate", len(ok))}, nil
	}
	return measure(all, ok, slo), nil
}

func measure(all, ok []record.Request, slo SLOBounds) Measure {
	m := Measure{OK: true, Attainment: -1}
	firstDone, lastDone := math.Inf(1), math.Inf(-1)
	for _, q := range ok {
		firstDone, lastDone = math.Min(firstDone, q.DoneAt), math.Max(lastDone, q.DoneAt)
	}
	if lastDone > firstDone {
		m.AchievedRPS = float64(len(ok)-1) / (lastDone - firstDone)
	}
	firstSent, lastSent := math.Inf(1), math.Inf(-1)
	for _, q := range all {
		firstSent, lastSent = math.Min(firstSent, q.SentAt), math.Max(lastSent, q.SentAt)
	}
	// Sends spread over less than a millisecond per request are a burst
	// (unlimited): no offered rate.
	if span := lastSent - firstSent; span > 0.001*float64(len(all)) {
		m.OfferedRPS = float64(len(all)-1) / span
	}
	bySend := slices.Clone(ok)
	sort.SliceStable(bySend, func(i, j int) bool { return bySend[i].SentAt < bySend[j].SentAt })
	if third := len(bySend) / 3; third > 0 {
		first, last := medianTTFT(bySend[:third]), medianTTFT(bySend[len(bySend)-third:])
		if first > 0 {
			m.TTFTGrowth = last / first
		}
	}
	if slo.set() {
		met := 0
		for _, q := range ok {
			if meetsSLO(q, slo) {
				met++
			}
		}
		m.Attainment = float64(met) / float64(len(ok))
	}
	return m
}

// meetsSLO: every set bound holds; TPOT is (done - first token) / (output
// tokens - 1), as the profiles define it, and holds for a request with
// fewer than two tokens.
func meetsSLO(q record.Request, b SLOBounds) bool {
	if b.TTFTMs > 0 && (q.FirstTokenAt-q.SentAt)*1000 > b.TTFTMs {
		return false
	}
	if b.E2EMs > 0 && (q.DoneAt-q.SentAt)*1000 > b.E2EMs {
		return false
	}
	if b.TPOTMs > 0 && q.OutputTokens >= 2 && (q.DoneAt-q.FirstTokenAt)/float64(q.OutputTokens-1)*1000 > b.TPOTMs {
		return false
	}
	return true
}

func medianTTFT(qs []record.Request) float64 {
	v := make([]float64, len(qs))
	for i, q := range qs {
		v[i] = q.FirstTokenAt - q.SentAt
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// ReadSearchState reads SearchStateFile; nil when there is none.
func (c *Campaign) ReadSearchState() (*SearchState, error) {
	path := filepath.Join(c.Dir, SearchStateFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("search state: %w", err)
	}
	var st SearchState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("search state %s: %w (delete it to start the search over)", path, err)
	}
	return &st, nil
}

func (c *Campaign) writeSearchState(st *SearchState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("search state: %w", err)
	}
	tmp, err := os.CreateTemp(c.Dir, ".search-state-*")
	if err != nil {
		return fmt.Errorf("search state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("search state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("search state: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(c.Dir, SearchStateFile)); err != nil {
		return fmt.Errorf("search state: %w", err)
	}
	return nil
}
