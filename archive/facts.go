package archive

import (
	"fmt"
	"math"

	"github.com/joulebench/joulebench/archive/record"
)

// facts are what run.json states about its run that the data files are
// held to (docs/archive-v1.md, "Bounds"): the run's span, its stages, the
// devices it measured and whether it says it finished. A row that
// contradicts them is refused with its file and line.
type facts struct {
	w window
	// stages by name (names are unique: stageNamesUnique).
	stages map[string]record.Stage
	// complete: run.json's status is complete, so every request of a
	// stage's phase lies wholly inside that stage.
	complete bool
	// devices are the listed devices' physical bounds by id; nil when
	// the devices are not known (a file read on its own: any device up
	// to the largest bound) or run.json lists none (an archive of a
	// writer that did not record them: every device is a GPU).
	devices map[string]deviceBound
	// listed names the listed devices, for messages.
	listed string
	// unlisted is the bound of a device when devices is nil.
	unlisted deviceBound
}

// deviceBound is a listed device's physical bound on power_w.
type deviceBound struct {
	maxW   float64
	domain string
}

// stageSlackS absorbs the rounding of a stage's start and end against the
// times of its requests: both are read from the one run clock, and the
// writer ends a stage at its last request's done_at exactly.
const stageSlackS = 1e-6

// loneFacts are the facts of a data file read without its run.json: any
// Unix time, any device, the widest physical bounds.
func loneFacts() *facts {
	return &facts{w: anyTime, unlisted: deviceBound{maxW: record.MaxNodePowerW, domain: "any"}}
}

// runFacts are the facts run.json m states (m has passed ReadMeta).
func runFacts(m *record.Meta) *facts {
	f := &facts{w: runWindow(m), stages: make(map[string]record.Stage, len(m.Stages)), complete: m.Status == record.StatusComplete,
		listed: devicesList(m.Hardware.Devices)}
	for _, s := range m.Stages {
		f.stages[s.Name] = s
	}
	if len(m.Hardware.Devices) == 0 {
		f.unlisted = deviceBound{maxW: record.MaxGPUPowerW, domain: record.DomainGPU}
		return f
	}
	f.devices = make(map[string]deviceBound, len(m.Hardware.Devices))
	for _, d := range m.Hardware.Devices {
		maxW, _ := record.MaxPowerW(d.Domain) // a domain outside Domains was refused
		f.devices[d.ID] = deviceBound{maxW: maxW, domain: d.DomainOrGPU()}
	}
	return f
}

// The rules on a power.csv sample (powerRules), each saying why s breaks
// it ("" when it keeps to it).

// powerTimeInRun: a sample's time lies in the run's window.
func (f *facts) powerTimeInRun(s *record.PowerSample) string {
	if msg := f.w.check("t", s.T); msg != "" {
		return "column t: " + msg
	}
	return ""
}

// powerNotNegative: a power reading is never negative.
func powerNotNegative(s *record.PowerSample) string {
	if s.PowerW < 0 {
		return fmt.Sprintf("column power_w: %v W is negative (a power reading is never negative; a failed reading is left out, not written as a number)", s.PowerW)
	}
	return ""
}

// energyNotNegative: an energy counter is never negative.
func energyNotNegative(s *record.PowerSample) string {
	if s.HasEnergy && s.EnergyJ < 0 {
		return fmt.Sprintf("column energy_j: %v J is negative (a cumulative energy counter is never negative)", s.EnergyJ)
	}
	return ""
}

// listedDeviceWithinItsBound: a sample is of a device run.json's
// hardware.devices lists (any device when it lists none, or when there is
// no run.json), and its power is at most the physical bound of the
// device's domain (record.MaxPowerW).
func (f *facts) listedDeviceWithinItsBound(s *record.PowerSample) string {
	b := f.unlisted
	if f.devices != nil {
		var ok bool
		if b, ok = f.devices[s.Device]; !ok {
			return fmt.Sprintf("column device: device %q is not one run.json's hardware.devices lists (%s); power of a device the run did not measure is never counted", s.Device, f.listed)
		}
	}
	if s.PowerW > b.maxW {
		return fmt.Sprintf("column power_w: %s W is above %s W, the most one %s device draws (a physical bound, not a plausibility check)", ft(s.PowerW), ft(b.maxW), b.domain)
	}
	return ""
}

// energyWithinCounterBound: an energy counter is at most
// record.MaxEnergyJ, where float64 still resolves a millijoule.
func energyWithinCounterBound(s *record.PowerSample) string {
	if s.HasEnergy && s.EnergyJ > record.MaxEnergyJ {
		return fmt.Sprintf("column energy_j: %s J is above 2^43 J (%s J), where float64 no longer resolves 1 mJ: a stage's energy, a difference of two readings, would be rounded; re-base the counter (subtract its first reading)", ft(s.EnergyJ), ft(record.MaxEnergyJ))
	}
	return ""
}

// requestInsideItsStage says why request q lies outside the stage of its
// phase ("" when inside, or when no stage has its phase's name): it is sent at or after
// the stage's start and, in a complete run, its last time (done_at, or
// the latest it has) is at or before the stage's end. A run that stopped
// early ended its open stages at its last power sample, when requests
// still in flight had not finished: only the start holds there.
func (f *facts) requestInsideItsStage(q *record.Request) string {
	st, ok := f.stages[q.Phase]
	if !ok {
		return ""
	}
	if q.SentAt != 0 && q.SentAt < st.Start-stageSlackS {
		return fmt.Sprintf("request %q (phase %s) is sent at %s, before stage %q starts at %s (run.json); a request of a stage's phase lies inside the stage", q.ID, q.Phase, ft(q.SentAt), st.Name, ft(st.Start))
	}
	if !f.complete || st.Open {
		return ""
	}
	last, name := q.DoneAt, "done_at"
	if last == 0 {
		last, name = math.Max(q.SentAt, q.FirstTokenAt), "its last time"
		if t, ok := q.LastTokenTime(); ok {
			last = math.Max(last, t)
		}
	}
	if last > st.End+stageSlackS {
		return fmt.Sprintf("request %q (phase %s): %s %s is after stage %q ends at %s (run.json; %.6g s after its end); in a complete run a request of a stage's phase lies inside the stage (the stage ends at its last response)", q.ID, q.Phase, name, ft(last), st.Name, ft(st.End), last-st.End)
	}
	return ""
}

// samplesInTimeOrder is the rule that each device's samples come in order
// of time, once each: a device's time never goes back (it may repeat), one
// device has one sample per time, and no row is repeated (a line written
// twice, or two files joined). It is called on each sample in file order.
//
// A row repeated has the device and time of an earlier one. While each
// device's times increase from row to row no row can repeat, and only the
// latest time of each device is kept; the first time that does not
// increase, every row so far goes into an index of whole rows, which
// checks every row from then on.
func samplesInTimeOrder(d *decoded[record.PowerSample]) func(i int) string {
	last := map[string]*rowAt{}
	var seen *dupIndex[powerKey]
	return func(i int) string {
		s := &d.rows[i]
		prev := last[s.Device]
		seenDev := prev != nil
		if seenDev && s.T == prev.t && keyOf(s) != prev.key {
			return fmt.Sprintf("device %s has a second sample at t=%v (line %d): one device, one sample per time", s.Device, s.T, d.line(prev.i))
		}
		if seen == nil && seenDev && s.T <= prev.t {
			seen = newDupIndex[powerKey](min(len(d.rows), 1<<22))
			for j := range i {
				seen.add(keyOf(&d.rows[j]), j)
			}
		}
		if seen != nil {
			if first, dup := seen.add(keyOf(s), i); dup {
				return fmt.Sprintf("duplicated line: the same sample of device %s at t=%v as line %d; a line written twice, or two files joined?", s.Device, s.T, d.line(first))
			}
		}
		if seenDev && s.T < prev.t {
			return fmt.Sprintf("column t: time goes back: device %s at t=%s after t=%s (%.6g s earlier) on line %d; each device's samples are written in order of time", s.Device, ft(s.T), ft(prev.t), prev.t-s.T, d.line(prev.i))
		}
		if !seenDev {
			prev = new(rowAt)
			last[s.Device] = prev
		}
		*prev = rowAt{s.T, i, keyOf(s)}
		return ""
	}
}

// rowAt is a device's latest row: its time, index and whole sample.
type rowAt struct {
	t   float64
	i   int
	key powerKey
}

// powerKey is a whole sample, its numbers by their bits (so that 0 and -0,
// written differently, differ).
type powerKey struct {
	device      string
	t, p, e     uint64
	hasE        bool
	memUsedByte int64
}

func keyOf(s *record.PowerSample) powerKey {
	return powerKey{s.Device, math.Float64bits(s.T), math.Float64bits(s.PowerW), math.Float64bits(s.EnergyJ), s.HasEnergy, s.MemUsedBytes}
}
