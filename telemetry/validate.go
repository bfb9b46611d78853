package telemetry

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/joulebench/joulebench/archive/record"
)

// Plausibility of a live reading (the live half of the power validity
// audit; the profiles' checks are the other half, over what was stored).
const (
	// FlagLimitFactor: a reading above this multiple of the device's power
	// limit is kept but flagged (anomaly power_above_limit), as the
	// audit's power_within_bounds check will.
	FlagLimitFactor = 1.2
	// RefuseLimitFactor: a reading above this multiple of the device's
	// power limit is refused: no board draws twice its enforced limit as a
	// sampled mean.
	RefuseLimitFactor = 2.0
	// FlagUnknownW and RefuseUnknownW are the same bounds for a device
	// whose power limit is not known: the profiles' power_sanity_max_w
	// default, and a bound no single device (or node) reaches. A listed
	// device is refused above its domain's physical bound too
	// (record.MaxPowerW), the bound the archive reader enforces.
	FlagUnknownW   = 2000.0
	RefuseUnknownW = record.MaxNodePowerW
	// ZeroRun is how many 0 W readings in a row make a device flagged as
	// reading nothing (anomaly power_zero).
	ZeroRun = 5
)

// Anomaly kinds the sampler reports (run.json events "<kind>:<device>").
const (
	// AnomalyPowerInvalid: readings refused (not written to power.csv,
	// so they count as gaps): power or energy not a finite number ≥ 0,
	// time not after the device's previous sample, or power above the
	// refusal bound.
	AnomalyPowerInvalid = "power_invalid"
	// AnomalyPowerAboveLimit: readings above FlagLimitFactor × the power
	// limit (or FlagUnknownW), kept.
	AnomalyPowerAboveLimit = "power_above_limit"
	// AnomalyPowerZero: a device read 0 W ZeroRun times in a row.
	AnomalyPowerZero = "power_zero"
)

// validator checks each row before it reaches the sink. Not safe for
// concurrent check calls (the sampler serialises samples); anomalies may be
// read at any time.
type validator struct {
	mu     sync.Mutex
	limitW map[string]float64
	// maxW is each listed device's physical bound (record.MaxPowerW).
	maxW  map[string]float64
	prevT map[string]float64
	zeros map[string]int
	// accepted marks the devices with a reading written; refused counts,
	// for the others, their readings refused in a row, with the first
	// and last reasons.
	accepted map[string]bool
	refused  map[string]*refusedRun
	// found holds one entry per device and kind: the first instance, the
	// count and the first reason.
	found map[[2]string]*finding
	order [][2]string
	// logf gets the first instance of each device and kind.
	logf func(string)
	name string
}

// refusedRun is the readings refused in a row of a device that has had
// none accepted.
type refusedRun struct {
	n           int
	first, last string
}

type finding struct {
	t      float64
	count  int
	reason string
}

func newValidator(name string, logf func(string)) *validator {
	return &validator{name: name, logf: logf, limitW: map[string]float64{}, maxW: map[string]float64{}, prevT: map[string]float64{},
		zeros: map[string]int{}, found: map[[2]string]*finding{}, accepted: map[string]bool{}, refused: map[string]*refusedRun{}}
}

// setDevices records each device's power limit and physical bound.
func (v *validator) setDevices(devs []record.Device) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, d := range devs {
		if m, ok := record.MaxPowerW(d.Domain); ok {
			v.maxW[d.ID] = m
		}
		if d.PowerLimitW > 0 && !math.IsInf(d.PowerLimitW, 0) {
			v.limitW[d.ID] = d.PowerLimitW
		}
	}
}

// filter returns the rows that may be written (in place), recording the
// others.
func (v *validator) filter(rows []record.PowerSample) []record.PowerSample {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := rows[:0]
	for _, r := range rows {
		if why := v.invalid(&r); why != "" {
			v.note(AnomalyPowerInvalid, r.Device, r.T, why+": refused, not written (a gap in the samples)")
			if !v.accepted[r.Device] {
				run := v.refused[r.Device]
				if run == nil {
					run = &refusedRun{first: why}
					v.refused[r.Device] = run
				}
				run.n++
				run.last = why
			}
			continue
		}
		v.accepted[r.Device] = true
		delete(v.refused, r.Device)
		v.prevT[r.Device] = r.T
		if flag, why := v.flagBound(r.Device); r.PowerW > flag {
			v.note(AnomalyPowerAboveLimit, r.Device, r.T, fmt.Sprintf("power %s W above %s: kept, flagged", fmtF(r.PowerW), why))
		}
		if r.PowerW == 0 {
			v.zeros[r.Device]++
			if v.zeros[r.Device] == ZeroRun {
				v.note(AnomalyPowerZero, r.Device, r.T, fmt.Sprintf("0 W on %d readings in a row: the source gives no power reading", ZeroRun))
			}
		} else {
			v.zeros[r.Device] = 0
		}
		out = append(out, r)
	}
	return out
}

// unusable says why a device can give the run no power data ("" while
// every device may): its first RefusedRun readings or more were all
// refused, so every stage would lack it and the archive be refused at the
// end. The devices are named in sorted order.
func (v *validator) unusable() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var devs []string
	for d, run := range v.refused {
		if run.n >= RefusedRun {
			devs = append(devs, d)
		}
	}
	if len(devs) == 0 {
		return ""
	}
	slices.Sort(devs)
	msgs := make([]string, len(devs))
	for i, d := range devs {
		run := v.refused[d]
		msgs[i] = fmt.Sprintf("device %s: none of its %d readings so far could be written (the first: %s; the last: %s)", d, run.n, run.first, run.last)
	}
	return strings.Join(msgs, "; ") + ": the source gives this run no usable power reading, so no energy can be measured"
}

// invalid says why a row must not be written, "" when it may. These are
// the bounds the archive reader enforces on power.csv (docs/archive-v1.md)
// plus the refusal bound.
func (v *validator) invalid(r *record.PowerSample) string {
	prev, seen := v.prevT[r.Device]
	switch {
	case r.Device == "":
		return "no device"
	case math.IsNaN(r.T) || math.IsInf(r.T, 0) || r.T <= 0:
		return "time " + fmtF(r.T) + " is not a time"
	case seen && r.T <= prev:
		return fmt.Sprintf("time %s is not after the previous sample's %s", fmtF(r.T), fmtF(prev))
	case math.IsNaN(r.PowerW) || math.IsInf(r.PowerW, 0):
		return "power " + fmtF(r.PowerW) + " W is not a number"
	case r.PowerW < 0:
		return "power " + fmtF(r.PowerW) + " W is negative"
	case r.HasEnergy && (math.IsNaN(r.EnergyJ) || math.IsInf(r.EnergyJ, 0) || r.EnergyJ < 0):
		return "energy counter " + fmtF(r.EnergyJ) + " J is not a number ≥ 0"
	case r.HasEnergy && r.EnergyJ > record.MaxEnergyJ:
		return "energy counter " + fmtF(r.EnergyJ) + " J is above 2^43 J (float64 no longer resolves 1 mJ)"
	}
	if refuse, why := v.refuseBound(r.Device); r.PowerW > refuse {
		return fmt.Sprintf("power %s W is above %s", fmtF(r.PowerW), why)
	}
	return ""
}

func (v *validator) flagBound(dev string) (float64, string) {
	if l, ok := v.limitW[dev]; ok {
		return FlagLimitFactor * l, fmt.Sprintf("%g × the power limit %s W", FlagLimitFactor, fmtF(l))
	}
	return FlagUnknownW, fmt.Sprintf("%s W (power limit unknown)", fmtF(FlagUnknownW))
}

func (v *validator) refuseBound(dev string) (float64, string) {
	bound, why := RefuseUnknownW, fmt.Sprintf("%s W, more than any device draws", fmtF(RefuseUnknownW))
	if l, ok := v.limitW[dev]; ok {
		bound, why = RefuseLimitFactor*l, fmt.Sprintf("%g × the power limit %s W", RefuseLimitFactor, fmtF(l))
	}
	if m, ok := v.maxW[dev]; ok && m <= bound {
		bound, why = m, fmt.Sprintf("%s W, the most one device of its domain draws (the archive's bound)", fmtF(m))
	}
	return bound, why
}

// note records one instance; the first of a device and kind is logged.
func (v *validator) note(kind, dev string, t float64, what string) {
	k := [2]string{kind, dev}
	f, ok := v.found[k]
	if ok {
		f.count++
		return
	}
	v.found[k] = &finding{t: t, count: 1, reason: what}
	v.order = append(v.order, k)
	if v.logf != nil {
		v.logf(fmt.Sprintf("telemetry %s: device %s at t=%s: %s (further ones are counted, not logged)", v.name, dev, fmtF(t), what))
	}
}

// anomalies lists what was found, one per device and kind, with counts.
func (v *validator) anomalies() []Anomaly {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]Anomaly, 0, len(v.order))
	for _, k := range v.order {
		f := v.found[k]
		out = append(out, Anomaly{T: f.t, Device: k[1], Kind: k[0],
			Detail: fmt.Sprintf("%d reading(s); the first at t=%s: %s", f.count, fmtF(f.t), f.reason)})
	}
	return slices.Clip(out)
}

func fmtF(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
