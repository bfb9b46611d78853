package metricdefs

import (
	"context"
	"fmt"
	"math"

	"github.com/joulebench/joulebench/measure"
)

// PowerAuditView is what power_audit() returns to expressions: each list
// holds one sentence per finding, naming the device, the stage and the
// times; reasons is all of them, valid is true when there is none.
type PowerAuditView struct {
	Gaps    []string `expr:"gaps"`
	Missing []string `expr:"missing"`
	Bounds  []string `expr:"bounds"`
	Zeros   []string `expr:"zeros"`
	Order   []string `expr:"order"`
	Reasons []string `expr:"reasons"`
	Valid   bool     `expr:"valid"`
	// MaxGapS is the largest gap between two samples of one device
	// inside any audited stage (s).
	MaxGapS float64 `expr:"max_gap_s"`
}

// powerBuiltinDefs are the built-ins of the power validity audit.
func powerBuiltinDefs() []builtinDef {
	return []builtinDef{{
		Builtin: Builtin{"power_audit", `power_audit(stages, max_gap_s, limit_factor, sanity_max_w) {gaps, missing, bounds, zeros, order, reasons, valid, max_gap_s}`,
			`the power validity audit over the named stages (absent ones skipped): per device, the largest gap between successive samples overlapping each stage ≤ max_gap_s; every device of hardware.devices sampled from each stage's start to its end; every sample inside a stage ≤ limit_factor × the device's power limit (run.json power_limit_w), or ≤ sanity_max_w when the limit is unknown; not every sample of a stage 0 W; time never going back in power.csv. Each list names the device, the stage and where`},
		fn: func(p ...any) (any, error) {
			d, err := dataFrom(p[0].(context.Context))
			if err != nil {
				return nil, err
			}
			names, ok := p[1].([]any)
			if !ok {
				return nil, fmt.Errorf("power_audit: stages must be a list of stage names, got %T", p[1])
			}
			var nums [3]float64
			for i := range nums {
				f, ok := toFloat(p[2+i])
				if !ok || math.IsNaN(f) || f < 0 {
					return nil, fmt.Errorf("power_audit: argument %d must be a number ≥ 0, got %v", i+2, p[2+i])
				}
				nums[i] = f
			}
			return d.powerAudit(names, nums[0], nums[1], nums[2])
		},
		types: []any{new(func(context.Context, []any, float64, float64, float64) PowerAuditView)},
	}}
}

// powerAudit runs measure's audit with the bounds of each device.
func (d *Data) powerAudit(names []any, maxGap, factor, sanity float64) (PowerAuditView, error) {
	var stages []measure.AuditStage
	for i, n := range names {
		s, ok := n.(string)
		if !ok {
			return PowerAuditView{}, fmt.Errorf("power_audit: stage %d is %T, not a name", i+1, n)
		}
		if st, ok := d.Stages[s]; ok {
			stages = append(stages, measure.AuditStage{Name: st.Name, Start: st.Start, End: st.End})
		}
	}
	o := measure.AuditOptions{MaxGapS: maxGap, BoundW: map[string]float64{}, BoundWhy: map[string]string{}}
	for _, dev := range d.Meta.Hardware.Devices {
		o.Devices = append(o.Devices, dev.ID)
	}
	for _, dev := range d.Devices {
		switch {
		case dev.PowerLimitW > 0 && factor > 0:
			o.BoundW[dev.ID] = factor * dev.PowerLimitW
			o.BoundWhy[dev.ID] = fmt.Sprintf("%g × its power limit %g W", factor, dev.PowerLimitW)
		case sanity > 0:
			o.BoundW[dev.ID] = sanity
			o.BoundWhy[dev.ID] = "power_sanity_max_w: its power limit is not known"
		}
	}
	if d.Power == nil {
		// No samples at all: every expected device is missing.
		var v PowerAuditView
		for _, st := range stages {
			for _, dev := range o.Devices {
				v.Missing = append(v.Missing, fmt.Sprintf("device %s has no power samples at all (stage %s)", dev, st.Name))
			}
		}
		v.Reasons, v.Valid = v.Missing, len(v.Missing) == 0
		return v, nil
	}
	a := d.Power.Audit(stages, o)
	r := a.Reasons()
	return PowerAuditView{Gaps: orEmpty(a.Gaps), Missing: orEmpty(a.Missing), Bounds: orEmpty(a.Bounds), Zeros: orEmpty(a.Zeros),
		Order: orEmpty(a.Order), Reasons: orEmpty(r), Valid: len(r) == 0, MaxGapS: a.MaxGapS}, nil
}

// orEmpty makes nil an empty list (expressions print [] rather than nil).
func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
