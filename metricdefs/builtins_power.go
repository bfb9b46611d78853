package metricdefs

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/archive/record"

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
			return d.powerAudit(names, nums[0], nums[1], nums[2], []string{record.DomainGPU})
		},
		types: []any{new(func(context.Context, []any, float64, float64, float64) PowerAuditView)},
	}, {
		Builtin: Builtin{"domain_power_audit", `domain_power_audit(domains, stages, max_gap_s, limit_factor, sanity_max_w) {gaps, missing, bounds, zeros, order, reasons, valid, max_gap_s}`,
			`power_audit over the devices of the named domains ("gpu", "cpu", "dram", "node") instead of the GPUs: the audit of an energy figure of another boundary`},
		fn: func(p ...any) (any, error) {
			d, err := dataFrom(p[0].(context.Context))
			if err != nil {
				return nil, err
			}
			doms, err := domainNames("domain_power_audit", p[1])
			if err != nil {
				return nil, err
			}
			names, ok := p[2].([]any)
			if !ok {
				return nil, fmt.Errorf("domain_power_audit: stages must be a list of stage names, got %T", p[2])
			}
			var nums [3]float64
			for i := range nums {
				f, ok := toFloat(p[3+i])
				if !ok || math.IsNaN(f) || f < 0 {
					return nil, fmt.Errorf("domain_power_audit: argument %d must be a number ≥ 0, got %v", i+3, p[3+i])
				}
				nums[i] = f
			}
			return d.powerAudit(names, nums[0], nums[1], nums[2], doms)
		},
		types: []any{new(func(context.Context, []any, []any, float64, float64, float64) PowerAuditView)},
	}, {
		Builtin: Builtin{"domain_energy", `domain_energy(domains, a, b, method) float`,
			`energy in J on [a, b] summed over the devices of the named domains ("gpu", "cpu", "dram", "node"; those absent count 0, none present is an error: guard with "cpu" in run.domains); method as energy()`},
		fn: func(p ...any) (any, error) {
			method := p[4].(string)
			return domainSum("domain_energy", p, func(pd *measure.PowerData, a, b float64) (float64, error) {
				return pd.Energy(a, b, method)
			})
		},
		types: []any{new(func(context.Context, []any, float64, float64, string) float64)},
	}, {
		Builtin: Builtin{"domain_mean_power", `domain_mean_power(domains, a, b) float`,
			`time-weighted mean power in W over [a, b] summed over the devices of the named domains (trapezoid), as mean_power() for the GPUs`},
		fn: func(p ...any) (any, error) {
			return domainSum("domain_mean_power", p, func(pd *measure.PowerData, a, b float64) (float64, error) {
				total := 0.0
				for _, dev := range pd.Devices() {
					w, err := pd.MeanPower(dev, a, b)
					if err != nil {
						return 0, err
					}
					total += w
				}
				return total, nil
			})
		},
		types: []any{new(func(context.Context, []any, float64, float64) float64)},
	}}
}

// domainNames checks a list of domain names.
func domainNames(fn string, v any) ([]string, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: domains must be a list such as [\"cpu\", \"dram\"], got %T", fn, v)
	}
	out := make([]string, len(l))
	for i, x := range l {
		s, ok := x.(string)
		if !ok || !slices.Contains(record.Domains, s) {
			return nil, fmt.Errorf("%s: domain %d is %v: want one of %s", fn, i+1, x, strings.Join(record.Domains, ", "))
		}
		out[i] = s
	}
	return out, nil
}

// domainPowerOf is domainPower for a built-in's list argument.
func (d *Data) domainPowerOf(fn string, v any) ([]*measure.PowerData, error) {
	doms, err := domainNames(fn, v)
	if err != nil {
		return nil, err
	}
	names := make([]any, len(doms))
	for i, s := range doms {
		names[i] = s
	}
	pds, err := d.domainPower(names)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	return pds, nil
}

// powerAudit runs measure's audit over the devices of the given domains
// with the bounds of each device.
func (d *Data) powerAudit(names []any, maxGap, factor, sanity float64, domains []string) (PowerAuditView, error) {
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
	var a measure.Audit
	for _, dom := range domains {
		x := d.auditDomain(dom, stages, maxGap, factor, sanity)
		a.Gaps, a.Missing, a.Bounds = append(a.Gaps, x.Gaps...), append(a.Missing, x.Missing...), append(a.Bounds, x.Bounds...)
		a.Zeros, a.Order, a.MaxGapS = append(a.Zeros, x.Zeros...), append(a.Order, x.Order...), max(a.MaxGapS, x.MaxGapS)
	}
	r := a.Reasons()
	return PowerAuditView{Gaps: orEmpty(a.Gaps), Missing: orEmpty(a.Missing), Bounds: orEmpty(a.Bounds), Zeros: orEmpty(a.Zeros),
		Order: orEmpty(a.Order), Reasons: orEmpty(r), Valid: len(r) == 0, MaxGapS: a.MaxGapS}, nil
}

// auditDomain audits the devices of one domain: those of
// hardware.devices expected, each bounded by its limit or the sanity
// bound.
func (d *Data) auditDomain(dom string, stages []measure.AuditStage, maxGap, factor, sanity float64) measure.Audit {
	o := measure.AuditOptions{MaxGapS: maxGap, BoundW: map[string]float64{}, BoundWhy: map[string]string{}}
	for _, dev := range d.Meta.Hardware.Devices {
		if dev.DomainOrGPU() == dom {
			o.Devices = append(o.Devices, dev.ID)
		}
	}
	for _, dev := range d.Devices {
		if dev.Domain != dom {
			continue
		}
		switch {
		case dev.PowerLimitW > 0 && factor > 0:
			o.BoundW[dev.ID] = factor * dev.PowerLimitW
			o.BoundWhy[dev.ID] = fmt.Sprintf("%g × its power limit %g W", factor, dev.PowerLimitW)
		case sanity > 0:
			o.BoundW[dev.ID] = sanity
			o.BoundWhy[dev.ID] = fmt.Sprintf("the profile's bound for a %s device whose power limit is not known", dom)
		}
	}
	pd := d.DomainPower[dom]
	if dom == record.DomainGPU {
		pd = d.Power
	}
	if pd == nil {
		// No samples at all: every expected device is missing.
		var a measure.Audit
		for _, st := range stages {
			for _, dev := range o.Devices {
				a.Missing = append(a.Missing, fmt.Sprintf("device %s has no power samples at all (stage %s)", dev, st.Name))
			}
		}
		return a
	}
	return pd.Audit(stages, o)
}

// orEmpty makes nil an empty list (expressions print [] rather than nil).
func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// domainSum is a domain built-in called as name(ctx, domains, a, b, ...):
// of sums over the power data of the named domains on [a, b].
func domainSum(name string, p []any, of func(pd *measure.PowerData, a, b float64) (float64, error)) (any, error) {
	d, err := dataFrom(p[0].(context.Context))
	if err != nil {
		return nil, err
	}
	a, b, err := twoFloats(p[2], p[3])
	if err != nil {
		return nil, err
	}
	pds, err := d.domainPowerOf(name, p[1])
	if err != nil {
		return nil, err
	}
	total := 0.0
	for _, pd := range pds {
		v, err := of(pd, a, b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		total += v
	}
	return total, nil
}
