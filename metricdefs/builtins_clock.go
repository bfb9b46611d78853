package metricdefs

import (
	"context"
	"fmt"
	"math"

	"github.com/joulebench/joulebench/internal/clocksync"
)

// ClockAuditView is what clock_audit() returns to expressions: one
// sentence per source whose clock cannot be trusted to place its samples
// (reasons), valid when there is none, and the largest drift seen.
type ClockAuditView struct {
	Reasons []string `expr:"reasons"`
	Valid   bool     `expr:"valid"`
	// MaxDriftS is the largest |end − start offset| among the sources
	// with both (s).
	MaxDriftS float64 `expr:"max_drift_s"`
	// Sources is how many clocks run.json's telemetry.clock_sync lists.
	Sources int `expr:"sources"`
}

// clockBuiltinDefs are the built-ins of the clock audit.
func clockBuiltinDefs() []builtinDef {
	return []builtinDef{{
		Builtin: Builtin{"clock_audit", `clock_audit(max_drift_s) {reasons, valid, max_drift_s, sources}`,
			`the audit of the clocks of power sources on other nodes (run.json telemetry.clock_sync): each source's offset to the run clock measured at the start and at the end of the run may move at most max_drift_s plus the two estimates' uncertainty (half of each round trip); a source without its end offset fails (fails closed); no entry: valid, sources 0`},
		fn: func(p ...any) (any, error) {
			d, err := dataFrom(p[0].(context.Context))
			if err != nil {
				return nil, err
			}
			maxDrift, ok := toFloat(p[1])
			if !ok || math.IsNaN(maxDrift) || maxDrift < 0 {
				return nil, fmt.Errorf("clock_audit: max_drift_s must be a number ≥ 0, got %v", p[1])
			}
			return d.clockAudit(maxDrift), nil
		},
		types: ctxT(new(func(context.Context, float64) ClockAuditView)),
	}}
}

// clockAudit holds each clock_sync entry to Mapping.CheckDrift's rule.
func (d *Data) clockAudit(maxDriftS float64) ClockAuditView {
	cs := d.Meta.Telemetry.ClockSync
	v := ClockAuditView{Reasons: []string{}, Sources: len(cs)}
	for _, c := range cs {
		name := c.Source
		if c.Host != "" {
			name += " (host " + c.Host + ")"
		}
		if c.EndOffsetS == nil || c.EndRTTS == nil {
			v.Reasons = append(v.Reasons, name+": no end offset: the clock was not measured again at the end of the run, so its drift is unknown")
			continue
		}
		m := clocksync.NewMapping(clocksync.Estimate{OffsetS: c.StartOffsetS, RTTS: c.StartRTTS}).
			WithEnd(clocksync.Estimate{OffsetS: *c.EndOffsetS, RTTS: *c.EndRTTS})
		v.MaxDriftS = math.Max(v.MaxDriftS, math.Abs(m.DriftS()))
		if err := m.CheckDrift(maxDriftS); err != nil {
			v.Reasons = append(v.Reasons, name+": "+err.Error())
		}
	}
	v.Valid = len(v.Reasons) == 0
	return v
}
