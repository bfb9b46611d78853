package archive

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/safename"
)

// The rules on the run's stages and events (docs/archive-v1.md, "Stages
// and events" and "Bounds"): the lifecycle stages follow one another as
// the run steps write them, a nested stage and each lifecycle event lie
// inside their stage, a run of an engine joulebench started has the
// stages of starting and stopping it, and the formal stage spans its
// requests. An edited stage would otherwise move a figure (a formal stage
// 5 s longer is a throughput 1/3 lower) and read as any other run.

// FormalLeadS bounds how long before its first request is sent the formal
// stage starts. The requests step opens the stage at t0 and sends at
// once: between them lie only the two writes of run.json that end the
// startup and open the formal stage (each synced to disk: milliseconds)
// and the start of the load generator, whose every load shape sends its
// first request at offset 0 (the burst was prepared before t0). A
// simulated run of 600 requests at once on a 2-core machine shared with
// seven other test runs had its first request 0.12 s after the stage
// started; 2 s is over 15 times that, and covers a disk that stalls a
// sync for a second. A replayed trace sends its first request at its own
// time in the window (request_set.trace): see formalLead.
const FormalLeadS = 2.0

// The rules on run.json (listed in metaRules), each returning the error
// that names where d breaks it, nil when d keeps to it.

// runIDIsSafeName: run_id is a safe file name (internal/safename): readers
// name files and directories after it (a figure, a sweep's point), and
// "../../etc/x" would put them outside.
func runIDIsSafeName(d *metaDoc) error {
	if err := safename.Check("run_id", d.m.RunID); err != nil {
		return d.at(fmt.Sprintf("%v (readers name files after it)", err), "run_id")
	}
	return nil
}

// stageAt is a stage of run.json with its index there.
type stageAt struct {
	record.Stage
	i int
}

// end is the stage's end, +Inf while it is open.
func (s stageAt) end() float64 {
	if s.Open {
		return math.Inf(1)
	}
	return s.End
}

// span writes the stage's interval for messages.
func (s stageAt) span() string {
	if s.Open {
		return fmt.Sprintf("from %s, open", ft(s.Start))
	}
	return fmt.Sprintf("%s to %s", ft(s.Start), ft(s.End))
}

// lifecycle finds the stages of record.LifecycleStages in m by name (names
// are unique: stageNamesUnique).
func lifecycle(m *record.Meta) map[string]stageAt {
	out := map[string]stageAt{}
	for i, st := range m.Stages {
		if slices.Contains(record.LifecycleStages(), st.Name) {
			out[st.Name] = stageAt{st, i}
		}
	}
	return out
}

// lifecycleStagesApart: no two lifecycle stages overlap (by more than
// stageSlackS), but for the warm-up inside the startup
// (warmupInsideStartup). An open stage lasts to the end of the run, so
// that no lifecycle stage may start after one that has no end: the steps
// end each before the next begins.
func lifecycleStagesApart(d *metaDoc) error {
	ls := lifecycle(d.m)
	names := record.LifecycleStages()
	for j, b := range names {
		sb, ok := ls[b]
		if !ok {
			continue
		}
		for _, a := range names[:j] {
			sa, ok := ls[a]
			if !ok || a == record.StageStartup && b == record.StageWarmup {
				continue
			}
			if !(sa.Start < sb.end()-stageSlackS && sb.Start < sa.end()-stageSlackS) {
				continue
			}
			if sa.Open {
				return d.at(fmt.Sprintf("stage %q starts at %s, but stage %q, before it, has no end; a lifecycle stage begins only once the one before it has ended",
					b, ft(sb.Start), a), "stages", sb.i, "start")
			}
			return d.at(fmt.Sprintf("stage %q starts at %s, before stage %q ends at %s (%.6g s earlier); the lifecycle stages (%s) never overlap, but for the warm-up inside the startup",
				b, ft(sb.Start), a, ft(sa.End), sa.End-sb.Start, strings.Join(record.LifecycleStages(), ", ")), "stages", sb.i, "start")
		}
	}
	return nil
}

// lifecycleStagesMeet: the startup ends where the formal stage starts (the
// requests step ends one and starts the other at the same instant, t0:
// startup is engine start → first formal request sent), and the release
// starts where the formal stage ends (the release step starts at the
// formal stage's end: release is last formal response → release
// confirmed).
func lifecycleStagesMeet(d *metaDoc) error {
	ls := lifecycle(d.m)
	formal, ok := ls[record.StageFormal]
	if !ok {
		return nil
	}
	if st, ok := ls[record.StageStartup]; ok && !st.Open && math.Abs(st.End-formal.Start) > stageSlackS {
		return d.at(fmt.Sprintf("stage %q ends at %s but stage %q starts at %s (%.6g s later); the startup ends where the formal stage starts, at its first request",
			st.Name, ft(st.End), formal.Name, ft(formal.Start), formal.Start-st.End), "stages", formal.i, "start")
	}
	if rel, ok := ls[record.StageRelease]; ok && !formal.Open && math.Abs(rel.Start-formal.End) > stageSlackS {
		return d.at(fmt.Sprintf("stage %q starts at %s but stage %q ends at %s (%.6g s earlier); the release starts where the formal stage ends, at its last response",
			rel.Name, ft(rel.Start), formal.Name, ft(formal.End), rel.Start-formal.End), "stages", rel.i, "start")
	}
	return nil
}

// warmupInsideStartup: a warm-up of a run that started its engine lies
// inside the startup (the warm-up step runs between the engine's start
// and the formal requests).
func warmupInsideStartup(d *metaDoc) error {
	ls := lifecycle(d.m)
	w, ok := ls[record.StageWarmup]
	st, ok2 := ls[record.StageStartup]
	if !ok || !ok2 {
		return nil
	}
	if w.Start < st.Start-stageSlackS {
		return d.at(fmt.Sprintf("stage %q starts at %s, before stage %q, which it lies inside, starts at %s", w.Name, ft(w.Start), st.Name, ft(st.Start)),
			"stages", w.i, "start")
	}
	if !st.Open && w.end() > st.End+stageSlackS {
		return d.at(fmt.Sprintf("stage %q (%s) ends after stage %q, which it lies inside, ends at %s", w.Name, w.span(), st.Name, ft(st.End)),
			"stages", w.i, "end")
	}
	return nil
}

// managed reports whether joulebench started the run's engine: engine.managed,
// or, for a run of several parts, any part's managed (engine.managed is
// then whether any part is).
func managed(m *record.Meta) bool {
	if m.Engine.Managed {
		return true
	}
	return m.Deployment != nil && slices.ContainsFunc(m.Deployment.Parts, func(p record.DeploymentPart) bool { return p.Managed })
}

// managedRunHasItsLifecycle: a complete run that started its engine has
// the stages of starting and stopping it, startup and release: one of
// them alone is refused (the start_engine step opens the startup, and a
// profile that starts an engine must stop it with the release step), and
// so is a run whose engine.managed (or a deployment part's managed) says
// joulebench started the engine without them. A managed run without its
// release would otherwise read as an external engine's, its release
// figures not applicable for the wrong reason.
func managedRunHasItsLifecycle(d *metaDoc) error {
	if d.m.Status != record.StatusComplete {
		return nil
	}
	ls := lifecycle(d.m)
	st, hasStartup := ls[record.StageStartup]
	rel, hasRelease := ls[record.StageRelease]
	switch {
	case hasStartup && !hasRelease:
		return d.at(fmt.Sprintf("stage %q is present but there is no %q stage; a complete run that started its engine also stopped it (release), and one that did not has neither",
			record.StageStartup, record.StageRelease), "stages", st.i)
	case hasRelease && !hasStartup && d.m.Measure == nil:
		// joulebench measure keeps the release after the load it did not
		// send (back to baseline) around a server it did not start.
		return d.at(fmt.Sprintf("stage %q is present but there is no %q stage; a complete run that stopped its engine also started it (startup), and one that did not has neither",
			record.StageRelease, record.StageStartup), "stages", rel.i)
	case managed(d.m) && !hasStartup:
		return d.at(fmt.Sprintf("engine.managed is true but there is no %q or %q stage; a complete run of an engine joulebench started has its startup and release (without them it reads as an external engine's)",
			record.StageStartup, record.StageRelease), "engine", "managed")
	}
	return nil
}

// eventsInTheirStage: each lifecycle event (record.EventStage) lies in its
// stage: never before it starts and, in a complete run, never after it
// ends. engine_started needs its startup in any run (the start_engine step
// opens the stage, then records the event), and in a complete run every
// lifecycle event but engine_ready (recorded for an external engine too,
// which has no startup) needs its stage.
func eventsInTheirStage(d *metaDoc) error {
	ls := lifecycle(d.m)
	complete := d.m.Status == record.StatusComplete
	for i, ev := range d.m.Events {
		name, ok := record.EventStage(ev.Name)
		if !ok {
			continue
		}
		st, ok := ls[name]
		if !ok {
			if ev.Name == record.EventEngineStarted || complete && ev.Name != record.EventEngineReady {
				return d.at(fmt.Sprintf("event %q at %s has no stage %q to lie in", ev.Name, ft(ev.T), name), "events", i, "t")
			}
			continue
		}
		if ev.T < st.Start-stageSlackS || complete && ev.T > st.end()+stageSlackS {
			return d.at(fmt.Sprintf("event %q at %s is outside stage %q (%s); a lifecycle event lies inside its stage", ev.Name, ft(ev.T), name, st.span()),
				"events", i, "t")
		}
	}
	return nil
}

// The rules across run.json and requests.jsonl (listed in runRules).

// formalRequests finds, in a complete run with a closed formal stage, the
// stage, its index in run.json and the formal request sent first and the
// one done last (-1 when none has the time); ok is false for another run.
func formalRequests(d *decodedRun) (st record.Stage, i, first, last int, ok bool) {
	m := d.meta.m
	i = slices.IndexFunc(m.Stages, func(s record.Stage) bool { return s.Name == record.StageFormal })
	if m.Status != record.StatusComplete || i < 0 || m.Stages[i].Open {
		return st, 0, 0, 0, false
	}
	first, last = -1, -1
	rows := d.requests.rows
	for j := range rows {
		q := &rows[j]
		if q.Phase != record.StageFormal {
			continue
		}
		if q.SentAt != 0 && (first < 0 || q.SentAt < rows[first].SentAt) {
			first = j
		}
		if q.DoneAt != 0 && (last < 0 || q.DoneAt > rows[last].DoneAt) {
			last = j
		}
	}
	return m.Stages[i], i, first, last, true
}

// formalStageStartsAtItsFirstRequest: in a complete run the formal stage
// starts at most formalLead before its first request is sent.
// requestInsideItsStage holds each request inside the stage (none is
// sent before it starts); this holds the stage's start to its requests,
// so that its duration is theirs.
func formalStageStartsAtItsFirstRequest(d *decodedRun) error {
	st, i, first, _, ok := formalRequests(d)
	if !ok || first < 0 {
		return nil
	}
	q := &d.requests.rows[first]
	lead, why := formalLead(d.meta.m)
	if q.SentAt-st.Start <= lead {
		return nil
	}
	return d.meta.at(fmt.Sprintf("stage %q starts at %s, %.6g s before its first request is sent (request %q at %s, %s:%d); the formal stage starts at most %s s before it (%s)",
		st.Name, ft(st.Start), q.SentAt-st.Start, q.ID, ft(q.SentAt), filepath.Join(d.dir, RequestsFile), d.requests.line(first), ft(lead), why), "stages", i, "start")
}

// formalStageEndsAtItsLastResponse: in a complete run the formal stage
// ends at its last response: the requests step ends it at the latest
// done_at of its requests (stageSlackS for rounding). requestInsideItsStage
// holds each request inside the stage (none is done after it ends); this
// holds the stage's end to its requests, so that its duration is theirs.
func formalStageEndsAtItsLastResponse(d *decodedRun) error {
	st, i, _, last, ok := formalRequests(d)
	if !ok || last < 0 {
		return nil
	}
	q := &d.requests.rows[last]
	if st.End <= q.DoneAt+stageSlackS {
		return nil
	}
	return d.meta.at(fmt.Sprintf("stage %q ends at %s, %.6g s after its last response (request %q done_at %s, %s:%d); the formal stage ends at its last response",
		st.Name, ft(st.End), st.End-q.DoneAt, q.ID, ft(q.DoneAt), filepath.Join(d.dir, RequestsFile), d.requests.line(last)), "stages", i, "end")
}

// formalLead is how long before its first request the formal stage of m
// may start, and why. A replayed trace sends its first request at its
// time in the window: at once for a window from the trace's first
// timestamp (start_s 0), else within the window's duration_s × scale, or
// at any time when the window runs to the trace's end.
func formalLead(m *record.Meta) (float64, string) {
	tr := m.RequestSet.Trace
	switch {
	case tr == nil || tr.StartS == 0:
		return FormalLeadS, "the requests step sends at once"
	case tr.DurationS > 0:
		return FormalLeadS + tr.DurationS*tr.Scale, "a replayed trace's first request is sent within its window: duration_s × scale"
	}
	return math.Inf(1), "a replayed trace's window to its end"
}
