package workflow

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/rs/zerolog"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/runclock"
)

// Clock is the run clock (internal/runclock): a monotonic clock mapped to
// Unix time once, at the start of the run, so every timestamp of a run is
// in one clock and immune to wall-clock steps.
type Clock = runclock.Clock

// NewClock starts a run clock now.
func NewClock() *Clock { return runclock.New() }

// RunContext is what every step shares: the clock, the archive being
// written and stage marks. What the step implementations need besides
// (engine, telemetry, request sets...) is the registry's typed D, passed
// to Execute.
type RunContext struct {
	Clock  *Clock
	Out    *archive.Writer
	Log    zerolog.Logger
	Loaded *Loaded
	// Engine is the engine kind, for step `when:` conditions.
	Engine string

	mu   sync.Mutex
	open map[string]float64
}

// StageStart opens a stage at time t and records it in run.json at once,
// without an end, so that a run killed during the stage keeps where it
// was. A failure to write is logged (the next write of run.json reports it
// to the step).
func (rc *RunContext) StageStart(name string, t float64) {
	rc.mu.Lock()
	if rc.open == nil {
		rc.open = map[string]float64{}
	}
	rc.open[name] = t
	rc.mu.Unlock()
	err := rc.Out.UpdateMeta(func(m *record.Meta) {
		for i := range m.Stages {
			if m.Stages[i].Name == name && m.Stages[i].Open {
				m.Stages[i].Start = t
				return
			}
		}
		m.Stages = append(m.Stages, record.Stage{Name: name, Start: t, Open: true})
	})
	if err != nil {
		rc.Log.Error().Err(err).Str("stage", name).Msg("record stage start")
	}
}

// MoveStageStart moves the start of the open stage name to t, and the end
// of the closed stage prev that ended where it started (the lifecycle
// stages meet) with it, in memory and in run.json. A stage not open, or
// prev not ending at its start, is left as it is: false.
func (rc *RunContext) MoveStageStart(name, prev string, t float64) (bool, error) {
	rc.mu.Lock()
	start, ok := rc.open[name]
	if ok {
		rc.open[name] = t
	}
	rc.mu.Unlock()
	if !ok {
		return false, nil
	}
	return true, rc.Out.UpdateMeta(func(m *record.Meta) {
		for i := range m.Stages {
			st := &m.Stages[i]
			switch {
			case st.Name == name && st.Open:
				st.Start = t
			case st.Name == prev && !st.Open && st.End == start:
				st.End = t
			}
		}
	})
}

// StageOpen reports whether a stage is open, and since when.
func (rc *RunContext) StageOpen(name string) (float64, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	t, ok := rc.open[name]
	return t, ok
}

// StageEnd closes an open stage at time t and records it in run.json.
func (rc *RunContext) StageEnd(name string, t float64) error {
	rc.mu.Lock()
	start, ok := rc.open[name]
	delete(rc.open, name)
	rc.mu.Unlock()
	if !ok {
		return fmt.Errorf("stage %s was never started", name)
	}
	return rc.Out.UpdateMeta(func(m *record.Meta) {
		for i := range m.Stages {
			if m.Stages[i].Name == name && m.Stages[i].Open {
				m.Stages[i] = record.Stage{Name: name, Start: start, End: t}
				return
			}
		}
		m.Stages = append(m.Stages, record.Stage{Name: name, Start: start, End: t})
	})
}

// CloseOpenStages ends every open stage at t, or at the latest start of
// the open stages when t is earlier (a run that stops early keeps the
// stages it had, and a stage opened inside another, the warm-up inside
// the startup, still ends within it: the stop was noticed at t, but the
// steps ran on until then). The errors of
// recording the ends are joined, each naming its stage (the ends stay in
// memory and reach run.json with its next successful write).
func (rc *RunContext) CloseOpenStages(t float64) error {
	rc.mu.Lock()
	open := make(map[string]float64, len(rc.open))
	for n, start := range rc.open {
		open[n] = start
	}
	rc.mu.Unlock()
	names := make([]string, 0, len(open))
	for n := range open {
		names = append(names, n)
	}
	sort.Strings(names)
	end := t
	for _, start := range open {
		end = max(end, start)
	}
	var errs []error
	for _, n := range names {
		if err := rc.StageEnd(n, end); err != nil {
			errs = append(errs, fmt.Errorf("end stage %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// Event records a named instant in run.json.
func (rc *RunContext) Event(name string, t float64) error {
	return rc.Out.UpdateMeta(func(m *record.Meta) {
		m.Events = append(m.Events, record.Event{Name: name, T: t})
	})
}

// Execute runs the profile's steps in order with the kinds of reg, each
// given deps. A step whose `when:` is false is skipped. The first failing
// step ends the run; its error names the step.
func Execute[D any](ctx context.Context, rc *RunContext, reg *Registry[D], deps D) error {
	for _, st := range rc.Loaded.Steps {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", st.Label(), err)
		}
		if st.When != nil {
			ok, err := st.When.Eval(rc.Loaded.Params, rc.Engine)
			if err != nil {
				return fmt.Errorf("%s: when: %w", st.Label(), err)
			}
			if !ok {
				rc.Log.Info().Str("step", st.Label()).Msg("skipped: when is false")
				continue
			}
		}
		kind, ok := reg.Lookup(st.Kind)
		if !ok {
			return fmt.Errorf("%s: no implementation for step kind %q", st.Label(), st.Kind)
		}
		rc.Log.Info().Str("step", st.Label()).Msg("start")
		if err := kind.Run(ctx, rc, deps, st.Config); err != nil {
			return fmt.Errorf("%s: %w", st.Label(), err)
		}
	}
	return nil
}
