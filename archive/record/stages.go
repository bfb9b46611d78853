package record

import (
	"encoding/json"
	"math"
)

// stageJSON is a Stage in run.json: `end` is absent (or null) while the
// stage is open.
type stageJSON struct {
	Name  string   `json:"name"`
	Start float64  `json:"start"`
	End   *float64 `json:"end,omitempty"`
}

// MarshalJSON writes an open stage without `end`.
func (s Stage) MarshalJSON() ([]byte, error) {
	j := stageJSON{Name: s.Name, Start: s.Start}
	if !s.Open {
		end := s.End
		j.End = &end
	}
	return json.Marshal(j)
}

// ClampOpenStages gives every open stage (a run killed or interrupted
// during it) an end at the end of its data, so that formulas over it can be
// evaluated on what was recorded: the newest power sample common to every
// device when the run has power samples, else the latest request time, else
// ended_at, and never before the stage's start. The stages stay Open (their
// end is a clamp, not a mark); it returns their names in run order.
func (r *Run) ClampOpenStages() []string {
	var names []string
	end := r.dataEnd()
	for i := range r.Meta.Stages {
		st := &r.Meta.Stages[i]
		if !st.Open {
			continue
		}
		st.End = math.Max(st.Start, end)
		names = append(names, st.Name)
	}
	return names
}

// dataEnd is where the recorded data ends (see ClampOpenStages).
func (r *Run) dataEnd() float64 {
	if len(r.Power) > 0 {
		latest := map[string]float64{}
		for _, p := range r.Power {
			if t, ok := latest[p.Device]; !ok || p.T > t {
				latest[p.Device] = p.T
			}
		}
		end := math.Inf(1)
		for _, t := range latest {
			end = math.Min(end, t)
		}
		return end
	}
	var end float64
	for _, q := range r.Requests {
		end = math.Max(end, math.Max(q.SentAt, math.Max(q.FirstTokenAt, q.DoneAt)))
	}
	if end == 0 {
		end = r.Meta.EndedAt
	}
	return end
}

// The stages of the method's lifecycle and the events that mark it, as
// the run steps write them (docs/archive-v1.md, "Stages and events").
const (
	StageBaseline = "baseline"
	StageStartup  = "startup"
	StageWarmup   = "warmup"
	StageFormal   = "formal"
	StageRelease  = "release"

	EventEngineStarted   = "engine_started"
	EventEngineReady     = "engine_ready"
	EventEngineExited    = "engine_exited"
	EventMemoryReleased  = "memory_released"
	EventReleaseComplete = "release_complete"
)

// LifecycleStages are the stages of the lifecycle in run order. No two
// overlap, except the warm-up, which lies inside the startup when the run
// started the engine.
func LifecycleStages() []string {
	return []string{StageBaseline, StageStartup, StageWarmup, StageFormal, StageRelease}
}

// EventStage is the stage the lifecycle event name lies in; ok is false
// for another event (a profile's own, a telemetry anomaly).
func EventStage(name string) (stage string, ok bool) {
	switch name {
	case EventEngineStarted, EventEngineReady:
		return StageStartup, true
	case EventEngineExited, EventMemoryReleased, EventReleaseComplete:
		return StageRelease, true
	}
	return "", false
}
