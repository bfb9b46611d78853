package measure

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// ReleaseParams configures release-complete detection.
type ReleaseParams struct {
	From float64 // release stage start (last formal response)
	End  float64 // end of the data to consider (release stage end); 0 = the data's end
	// Baseline is each device's idle power in W; every device needs one.
	Baseline map[string]float64
	// MemBaseline is each device's pre-test memory use in bytes; a device
	// missing here or < 0 has unknown memory and is not checked.
	MemBaseline       map[string]int64
	MemToleranceBytes int64
	Tolerance         float64 // e.g. 0.05: within ±5 % of each device's baseline
	HoldS             float64 // e.g. 30: for this long
	ExitedAt          float64 // engine process exit time; ≤ 0 = unknown / not exited
	// ServerKeepsRunning: the engine was not started by joulebench and
	// is not stopped (joulebench measure around traffic it did not
	// send): its exit is no condition of the release, which closes when
	// memory and power are back at baseline.
	ServerKeepsRunning bool
}

// Release is the result of release-complete detection. A time that was not
// found is 0.
type Release struct {
	// Closed is true when engine exit, memory release and settled power
	// were all found within [From, End].
	Closed bool
	// CompleteAt is the latest of ExitedAt, MemoryReleasedAt and
	// PowerSettledAt; 0 when not Closed.
	CompleteAt       float64
	PowerSettledAt   float64
	MemoryReleasedAt float64
	ExitedAt         float64
	// Reason names what did not happen, and notes (e.g. memory unknown).
	Reason string
	// RecordingEnded is true when power had come back within the band
	// but the samples end before the hold could be seen, although the
	// stage (End) would have had room for it: the recording ended, which
	// is not a failure to return to baseline within the maximum wait.
	RecordingEnded bool
}

// Release detects the end of the release stage (docs/methodology.md, "Release
// stage").
//
// PowerSettledAt is the earliest sample time t ≥ From (of any device) such
// that every sample of every device in [t, t+HoldS] is within
// ±Tolerance×baseline of its device's baseline (bounds included), and every
// device has samples up to at least t+HoldS within End.
//
// MemoryReleasedAt is the earliest sample time t ≥ From (≤ End) at which
// every device with known memory has memory ≤ MemBaseline+MemToleranceBytes,
// judged by its latest sample with a known value at or before t. A device
// with no MemBaseline (or < 0), or without any known memory sample, is not
// checked; when no device can be checked, the memory condition is taken as
// met at From and Reason says memory is unknown.
//
// ExitedAt counts when 0 < ExitedAt ≤ End. O(n log n) in the samples of
// [From, End].
//
// The three conditions are found independently (powerSettled,
// memoryReleased, engineExited) over the same samples; Reason lists what
// each did not find, in that order, then their notes.
func (p *PowerData) Release(rp ReleaseParams) (Release, error) {
	end, base, err := p.checkRelease(rp)
	if err != nil {
		return Release{}, fmt.Errorf("release: %w", err)
	}
	evs := p.samplesIn(rp.From, end)
	power := p.powerSettled(evs, base, rp, end)
	mem := p.memoryReleased(evs, rp, end)
	exit := engineExited(rp.ExitedAt, end)
	if rp.ServerKeepsRunning {
		exit = releasePhase{met: true, note: "the server keeps running (joulebench did not start it): its exit is not awaited"}
	}

	var res Release
	var reasons, notes []string
	for _, ph := range [...]releasePhase{power, mem, exit} {
		if !ph.met {
			reasons = append(reasons, ph.reason)
		}
		if ph.note != "" {
			notes = append(notes, ph.note)
		}
	}
	if power.met {
		res.PowerSettledAt = power.at
	}
	if mem.met {
		res.MemoryReleasedAt = mem.at
	}
	if exit.met {
		res.ExitedAt = exit.at
	}
	res.RecordingEnded = power.recordingEnded
	res.Closed = power.met && mem.met && exit.met
	if res.Closed {
		res.CompleteAt = max(res.ExitedAt, res.MemoryReleasedAt, res.PowerSettledAt)
	}
	res.Reason = strings.Join(append(reasons, notes...), "; ")
	return res, nil
}

// releasePhase is the outcome of one release-complete condition.
type releasePhase struct {
	met    bool
	at     float64 // when the condition was met (met only)
	reason string  // why it was not met (!met only)
	note   string  // a remark either way, e.g. memory unknown
	// recordingEnded: not met because the samples end (power only).
	recordingEnded bool
}

// releaseSample is one device's sample, by index into its series.
type releaseSample struct {
	t   float64
	dev int32
	i   int32
}

// checkRelease validates the parameters and returns the end of the data to
// consider and each device's baseline power, in device order.
func (p *PowerData) checkRelease(rp ReleaseParams) (end float64, base []float64, err error) {
	if p == nil || len(p.devs) == 0 {
		return 0, nil, fmt.Errorf("no power data")
	}
	if math.IsNaN(rp.From) || math.IsInf(rp.From, 0) || math.IsNaN(rp.End) || math.IsInf(rp.End, 0) {
		return 0, nil, fmt.Errorf("invalid interval [%v, %v]", rp.From, rp.End)
	}
	end = rp.End
	if end == 0 {
		end = p.end
	}
	if end < rp.From {
		return 0, nil, fmt.Errorf("end %s is before start %s", fmtT(end), fmtT(rp.From))
	}
	if math.IsNaN(rp.Tolerance) || math.IsInf(rp.Tolerance, 0) || rp.Tolerance < 0 {
		return 0, nil, fmt.Errorf("tolerance must be a number ≥ 0, got %v", rp.Tolerance)
	}
	if math.IsNaN(rp.HoldS) || math.IsInf(rp.HoldS, 0) || rp.HoldS < 0 {
		return 0, nil, fmt.Errorf("hold must be a number of seconds ≥ 0, got %v", rp.HoldS)
	}
	if rp.MemToleranceBytes < 0 {
		return 0, nil, fmt.Errorf("memory tolerance must be ≥ 0 bytes, got %d", rp.MemToleranceBytes)
	}
	if math.IsNaN(rp.ExitedAt) || math.IsInf(rp.ExitedAt, 0) {
		return 0, nil, fmt.Errorf("exit time is %v", rp.ExitedAt)
	}
	base = make([]float64, len(p.devs))
	for k, d := range p.devs {
		b, ok := rp.Baseline[d.name]
		if !ok {
			return 0, nil, fmt.Errorf("no baseline power for device %q", d.name)
		}
		if math.IsNaN(b) || math.IsInf(b, 0) || b < 0 {
			return 0, nil, fmt.Errorf("baseline power of device %q is %v", d.name, b)
		}
		base[k] = b
	}
	return end, base, nil
}

// samplesIn returns every device's samples in [from, end] in time order
// (ties in device order).
func (p *PowerData) samplesIn(from, end float64) []releaseSample {
	var evs []releaseSample
	for k, d := range p.devs {
		lo := sort.SearchFloat64s(d.t, from)
		hi := upperBound(d.t, end)
		for i := lo; i < hi; i++ {
			evs = append(evs, releaseSample{d.t[i], int32(k), int32(i)})
		}
	}
	slices.SortFunc(evs, func(a, b releaseSample) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.dev, b.dev)
	})
	return evs
}

// powerSettled finds PowerSettledAt over evs (the samples in [From, end]):
// a candidate t is good when the first out-of-band sample at or after t
// comes after t+HoldS, and every device has data up to t+HoldS.
func (p *PowerData) powerSettled(evs []releaseSample, base []float64, rp ReleaseParams, end float64) releasePhase {
	reach := math.Inf(1)
	var reachDev string
	for _, d := range p.devs {
		last := math.Inf(-1)
		if i := upperBound(d.t, end) - 1; i >= 0 {
			last = d.t[i]
		}
		if last < reach {
			reach, reachDev = last, d.name
		}
	}
	bad := func(e releaseSample) bool {
		d := p.devs[e.dev]
		return math.Abs(d.p[e.i]-base[e.dev]) > rp.Tolerance*base[e.dev]
	}
	nextBad := make([]float64, len(evs)+1)
	nextBad[len(evs)] = math.Inf(1)
	lastBad := -1
	for i := len(evs) - 1; i >= 0; i-- {
		nextBad[i] = nextBad[i+1]
		if bad(evs[i]) {
			nextBad[i] = evs[i].t
			if lastBad < 0 {
				lastBad = i
			}
		}
	}
	for i := 0; i < len(evs); i++ {
		t := evs[i].t
		if i > 0 && t == evs[i-1].t {
			continue // same instant as the previous candidate
		}
		if t+rp.HoldS > reach {
			break
		}
		if nextBad[i] > t+rp.HoldS {
			return releasePhase{met: true, at: t}
		}
	}
	if ph, ok := recordingEnded(evs, lastBad, reach, reachDev, rp, end); ok {
		return ph
	}
	msg := fmt.Sprintf("power did not stay within ±%s%% of baseline for %s s before t=%s",
		fmtNum(rp.Tolerance*100), fmtNum(rp.HoldS), fmtT(end))
	switch {
	case reach < rp.From:
		msg += fmt.Sprintf("; device %s has no samples in [%s, %s]", reachDev, fmtT(rp.From), fmtT(end))
	case lastBad >= 0:
		e := evs[lastBad]
		d := p.devs[e.dev]
		msg += fmt.Sprintf("; device %s last out of band at t=%s (%s W, baseline %s W)",
			d.name, fmtT(e.t), fmtNum(d.p[e.i]), fmtNum(base[e.dev]))
	default:
		msg += fmt.Sprintf("; in band from t=%s but the samples of device %s end at t=%s", fmtT(rp.From), reachDev, fmtT(reach))
	}
	return releasePhase{reason: msg}
}

// recordingEnded reports the hold that could not be seen because the
// samples end: power is in band from tIn (the first sample time after the
// last out-of-band sample, or the first sample from From) to the end of the
// data (reach), tIn + HoldS lies within the stage (≤ end) but after reach.
// When the stage itself ends first (tIn + HoldS > end), it is the maximum
// wait that ran out, and ok is false.
func recordingEnded(evs []releaseSample, lastBad int, reach float64, reachDev string, rp ReleaseParams, end float64) (releasePhase, bool) {
	i := lastBad + 1
	for lastBad >= 0 && i < len(evs) && evs[i].t == evs[lastBad].t {
		i++
	}
	if i >= len(evs) {
		return releasePhase{}, false // no sample after the last out-of-band one
	}
	tIn := evs[i].t
	if tIn+rp.HoldS > end || tIn+rp.HoldS <= reach {
		return releasePhase{}, false
	}
	return releasePhase{recordingEnded: true, reason: fmt.Sprintf(
		"the recording ended at t=%s (the last sample of device %s) before the release could be confirmed: power was within ±%s%% of baseline from t=%s, %s s of the %s s hold seen; not a failure to return to baseline within the maximum wait (the stage runs to t=%s)",
		fmtT(reach), reachDev, fmtNum(rp.Tolerance*100), fmtT(tIn), fmtNum(reach-tIn), fmtNum(rp.HoldS), fmtT(end))}, true
}

// memoryReleased finds MemoryReleasedAt over evs (the samples in
// [From, end]): the first sample time at which every checked device's
// latest known memory is within its limit.
func (p *PowerData) memoryReleased(evs []releaseSample, rp ReleaseParams, end float64) releasePhase {
	limit := make([]int64, len(p.devs))
	state := make([]int64, len(p.devs)) // latest known memory, -1 = none yet
	checked := make([]bool, len(p.devs))
	var unknown []string
	nChecked := 0
	for k, d := range p.devs {
		mb, ok := rp.MemBaseline[d.name]
		hasMem := d.mem.maxIn(0, upperBound(d.t, end)) >= 0
		if !ok || mb < 0 || !hasMem {
			unknown = append(unknown, d.name)
			continue
		}
		checked[k] = true
		nChecked++
		limit[k] = mb + rp.MemToleranceBytes
		if limit[k] < mb { // overflow
			limit[k] = math.MaxInt64
		}
		state[k] = d.mem.lastKnownBefore(sort.SearchFloat64s(d.t, rp.From))
	}
	if nChecked == 0 {
		return releasePhase{met: true, at: rp.From,
			note: fmt.Sprintf("memory unknown (no pre-test memory level or memory samples for %s); memory condition taken as met at t=%s",
				strings.Join(unknown, ", "), fmtT(rp.From))}
	}
	var ph releasePhase
	if len(unknown) > 0 {
		ph.note = fmt.Sprintf("memory unknown for %s, not checked", strings.Join(unknown, ", "))
	}
	over := 0
	for k := range p.devs {
		if checked[k] && (state[k] < 0 || state[k] > limit[k]) {
			over++
		}
	}
	for i := 0; i < len(evs); {
		t := evs[i].t
		for ; i < len(evs) && evs[i].t == t; i++ {
			k, m := evs[i].dev, p.devs[evs[i].dev].mem.at(int(evs[i].i))
			if !checked[k] || m < 0 {
				continue
			}
			was := state[k] < 0 || state[k] > limit[k]
			state[k] = m
			now := m > limit[k]
			switch {
			case was && !now:
				over--
			case !was && now:
				over++
			}
		}
		if over == 0 {
			ph.met, ph.at = true, t
			return ph
		}
	}
	msg := fmt.Sprintf("GPU memory not back to its pre-test level by t=%s", fmtT(end))
	if len(evs) == 0 {
		msg += fmt.Sprintf("; no samples in [%s, %s]", fmtT(rp.From), fmtT(end))
	}
	for k, d := range p.devs {
		if !checked[k] {
			continue
		}
		if state[k] < 0 {
			msg += fmt.Sprintf("; device %s: no memory sample", d.name)
			break
		}
		if state[k] > limit[k] {
			msg += fmt.Sprintf("; device %s uses %d bytes, pre-test %d + tolerance %d", d.name, state[k], rp.MemBaseline[d.name], rp.MemToleranceBytes)
			break
		}
	}
	ph.reason = msg
	return ph
}

// engineExited is met when the engine exit was recorded (exitedAt > 0) no
// later than end.
func engineExited(exitedAt, end float64) releasePhase {
	switch {
	case exitedAt <= 0:
		return releasePhase{reason: "engine process exit not recorded"}
	case exitedAt > end:
		return releasePhase{reason: fmt.Sprintf("engine exited at t=%s, after the end t=%s", fmtT(exitedAt), fmtT(end))}
	}
	return releasePhase{met: true, at: exitedAt}
}

// upperBound returns the number of elements of the sorted xs that are ≤ x.
func upperBound(xs []float64, x float64) int {
	return sort.Search(len(xs), func(i int) bool { return xs[i] > x })
}
