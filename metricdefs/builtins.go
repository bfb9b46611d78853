package metricdefs

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/expr-lang/expr"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"
)

// SteadyView is what steady_state() returns to expressions.
type SteadyView struct {
	Reached        bool   `expr:"reached"`
	Reason         string `expr:"reason"`
	StartIndex     int    `expr:"start_index"`
	EndIndex       int    `expr:"end_index"`
	StartRequestID string `expr:"start_request_id"`
	EndRequestID   string `expr:"end_request_id"`
	// SpanStart is the reading of the span's start: first_completion (the
	// completion of the first qualifying window's first request) or
	// earliest_first_token (the earliest first token among its requests).
	SpanStart string    `expr:"span_start"`
	Start     float64   `expr:"start"`
	End       float64   `expr:"end"`
	EnergyJ   float64   `expr:"energy_j"`
	Tokens    float64   `expr:"tokens"`
	JPerToken float64   `expr:"j_per_token"`
	Windows   int       `expr:"windows"`
	WindowCVs []float64 `expr:"window_cvs"`
	// WindowJPerToken is each of those windows' J/token (reached only):
	// its requests' attributed energy over their output tokens.
	WindowJPerToken []float64 `expr:"window_j_per_token"`
	// Window and CVMax are the parameters searched with, so that what
	// draws the result needs no other source for them.
	Window int     `expr:"window"`
	CVMax  float64 `expr:"cv_max"`
}

// ReleaseView is what release() returns to expressions.
type ReleaseView struct {
	Closed           bool    `expr:"closed"`
	CompleteAt       float64 `expr:"complete_at"`
	PowerSettledAt   float64 `expr:"power_settled_at"`
	MemoryReleasedAt float64 `expr:"memory_released_at"`
	ExitedAt         float64 `expr:"exited_at"`
	Reason           string  `expr:"reason"`
	RecordingEnded   bool    `expr:"recording_ended"`
}

// AttributionView is an element of what attribute() returns.
type AttributionView struct {
	ID        string  `expr:"id"`
	EnergyJ   float64 `expr:"energy_j"`
	Tokens    float64 `expr:"tokens"`
	JPerToken float64 `expr:"j_per_token"`
}

// CounterCheckView is what counter_vs_trapz() returns to expressions.
type CounterCheckView struct {
	CounterJ float64 `expr:"counter_j"`
	TrapzJ   float64 `expr:"trapz_j"`
	RelDiff  float64 `expr:"rel_diff"`
	Glitches int     `expr:"glitches"`
	Note     string  `expr:"note"`
}

// Builtin documents one function available to expressions.
type Builtin struct {
	Name      string
	Signature string
	Doc       string
}

type builtinDef struct {
	Builtin
	fn    func(params ...any) (any, error)
	types []any
}

// numList1 declares a function of one list of numbers (plus optional
// float arguments) with an overload for each list type expressions produce.
func numList1(name, doc string, f func([]float64) (float64, error)) builtinDef {
	return builtinDef{
		Builtin: Builtin{name, name + "(xs) float", doc},
		fn: func(p ...any) (any, error) {
			xs, err := toFloats(p[0])
			if err != nil {
				return nil, err
			}
			return f(xs)
		},
		types: []any{new(func([]float64) float64), new(func([]int) float64), new(func([]any) float64)},
	}
}

// coreBuiltinDefs are the built-ins by domain, in the order `profiles
// builtins` lists them.
func coreBuiltinDefs() []builtinDef {
	var defs []builtinDef
	for _, domain := range [][]builtinDef{energyBuiltinDefs(), methodBuiltinDefs(), statsBuiltinDefs(), asiaiBuiltinDefs(), powerBuiltinDefs(), clockBuiltinDefs()} {
		defs = append(defs, domain...)
	}
	return defs
}

// ctxT is the types of a built-in that takes the evaluation context.
func ctxT(f any) []any { return []any{f} }

// methodBuiltinDefs are the methodology's built-ins over requests and
// stages: attribution, steady state and release.
func methodBuiltinDefs() []builtinDef {
	return []builtinDef{
		attributionBuiltin(Builtin{"attribute", `attribute(requests, method) list`, `per-request GPU energy by generation interval: [{id, energy_j, tokens, j_per_token}] in the order given`},
			(*measure.PowerData).Attribute),
		{
			Builtin: Builtin{"requests_in", `requests_in(requests, a, b) float`, `requests generating in [a, b], each counted by the share of its output tokens generated there (pro rata as in attribute)`},
			fn: func(p ...any) (any, error) {
				d, reqs, a, b, err := requestsInterval("requests_in", p)
				if err != nil {
					return nil, err
				}
				return d.shapes.RequestsIn(reqs, a, b)
			},
			types: []any{new(func(context.Context, []*record.Request, float64, float64) float64), new(func(context.Context, []any, float64, float64) float64)},
		},
		{
			Builtin: Builtin{"steady_state", `steady_state(requests, window, cv_max, min_windows, formal_end, method[, span_start]) {reached, reason, start_index, end_index, start_request_id, end_request_id, span_start, start, end, energy_j, tokens, j_per_token, windows, window_cvs, window_j_per_token, window, cv_max}`,
				`steady-state search over successful formal requests in completion order (docs/methodology.md: windows of W requests sliding by one, CV of per-request J/token); the span starts at the completion of the first qualifying window's first request (span_start "first_completion", the default) or at the earliest first token among its requests ("earliest_first_token"); window and cv_max are those searched with`},
			fn:    steadyStateBuiltin,
			types: []any{new(func(context.Context, []any, float64, float64, float64, float64, string) SteadyView), new(func(context.Context, []*record.Request, float64, float64, float64, float64, string) SteadyView), new(func(context.Context, []any, float64, float64, float64, float64, string, string) SteadyView), new(func(context.Context, []*record.Request, float64, float64, float64, float64, string, string) SteadyView)},
		},
		{
			Builtin: Builtin{"release", `release(from, to, tolerance, hold_s, mem_tolerance_bytes) {closed, complete_at, power_settled_at, memory_released_at, exited_at, reason, recording_ended}`, `release-complete detection after the formal stage: latest of engine exit (event engine_exited), GPU memory back to its baseline-stage level, and the first time from which every device stays within ±tolerance of its baseline-stage power for hold_s; recording_ended: power was back in the band but the samples end before the hold could be seen (the stage had room for it)`},
			fn: func(p ...any) (any, error) {
				d, err := dataFrom(p[0].(context.Context))
				if err != nil {
					return nil, err
				}
				if d.Power == nil {
					return nil, fmt.Errorf("no power source: this run has no power samples")
				}
				from, to, err := twoFloats(p[1], p[2])
				if err != nil {
					return nil, err
				}
				tol, _ := toFloat(p[3])
				hold, _ := toFloat(p[4])
				memTol, _ := toFloat(p[5])
				pw, mem, err := d.baselines()
				if err != nil {
					return nil, err
				}
				exited := d.Events["engine_exited"]
				r, err := d.Power.Release(measure.ReleaseParams{From: from, End: to, Baseline: pw, MemBaseline: mem,
					MemToleranceBytes: int64(memTol), Tolerance: tol, HoldS: hold, ExitedAt: exited,
					ServerKeepsRunning: d.Meta.Measure != nil && !d.Meta.Engine.Managed})
				if err != nil {
					return nil, err
				}
				return ReleaseView{Closed: r.Closed, CompleteAt: r.CompleteAt, PowerSettledAt: r.PowerSettledAt,
					MemoryReleasedAt: r.MemoryReleasedAt, ExitedAt: r.ExitedAt, Reason: r.Reason, RecordingEnded: r.RecordingEnded}, nil
			},
			types: ctxT(new(func(context.Context, float64, float64, float64, float64, float64) ReleaseView)),
		},
	}
}

// builtinDefs is every built-in: the core ones and those of other files.
func builtinDefs() []builtinDef {
	return append(append(append(append(coreBuiltinDefs(), latencyBuiltins()...), sloBuiltinDefs()...), residentBuiltinDefs()...), phaseBuiltinDefs()...)
}

// Builtins lists the functions expressions can call, for `profiles show`
// and the docs.
func Builtins() []Builtin {
	defs := builtinDefs()
	out := make([]Builtin, len(defs))
	for i, d := range defs {
		out[i] = d.Builtin
	}
	return out
}

func builtinOptions() []expr.Option {
	defs := builtinDefs()
	opts := make([]expr.Option, 0, len(defs))
	for _, d := range defs {
		opts = append(opts, expr.Function(d.Name, d.fn, d.types...))
	}
	return opts
}

// glitchNote lists counter glitches in one line.
func glitchNote(gs []measure.CounterGlitch) string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.String()
	}
	return strings.Join(out, "; ")
}

// requestsInterval decodes the arguments of name(ctx, requests, a, b).
func requestsInterval(name string, p []any) (*Data, []*record.Request, float64, float64, error) {
	d, err := dataFrom(p[0].(context.Context))
	if err != nil {
		return nil, nil, 0, 0, err
	}
	reqs, err := toRequests(p[1])
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: %w", name, err)
	}
	a, b, err := twoFloats(p[2], p[3])
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, reqs, a, b, nil
}

// dataInterval is the run data of a built-in's call (p[0], its context)
// and the interval [a, b] of its arguments p[1] and p[2]; a bad interval's
// error names the built-in.
func dataInterval(name string, p []any) (*Data, float64, float64, error) {
	d, err := dataFrom(p[0].(context.Context))
	if err != nil {
		return nil, 0, 0, err
	}
	a, b, err := twoFloats(p[1], p[2])
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, a, b, nil
}

func twoFloats(x, y any) (float64, float64, error) {
	a, ok1 := toFloat(x)
	b, ok2 := toFloat(y)
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("expected two numbers, got %T and %T", x, y)
	}
	if math.IsNaN(a) || math.IsNaN(b) {
		return 0, 0, fmt.Errorf("interval bound is NaN")
	}
	return a, b, nil
}

// steadyStateBuiltin is steady_state(): p is the evaluation context, the
// requests, window, cv_max, min_windows, formal_end, method and, when
// given, the span's start.
func steadyStateBuiltin(p ...any) (any, error) {
	d, err := dataFrom(p[0].(context.Context))
	if err != nil {
		return nil, err
	}
	pd, err := powerFrom(p[0].(context.Context))
	if err != nil {
		return nil, err
	}
	reqs, err := toRequests(p[1])
	if err != nil {
		return nil, fmt.Errorf("steady_state: %w", err)
	}
	w, _ := toFloat(p[2])
	cv, _ := toFloat(p[3])
	mw, _ := toFloat(p[4])
	end, _ := toFloat(p[5])
	if w != math.Trunc(w) || w < 2 {
		return nil, fmt.Errorf("steady_state: window must be an integer ≥ 2, got %v", w)
	}
	if mw != math.Trunc(mw) || mw < 1 {
		return nil, fmt.Errorf("steady_state: min_windows must be an integer ≥ 1, got %v", mw)
	}
	var spanStart measure.SpanStart
	if len(p) > 7 {
		if spanStart, err = measure.ParseSpanStart(p[7].(string)); err != nil {
			return nil, fmt.Errorf("steady_state: %w", err)
		}
	}
	s, err := pd.SteadyState(reqs, measure.SteadyParams{Window: int(w), CVMax: cv, MinWindows: int(mw), FormalEnd: end,
		Method: p[6].(string), SpanStart: spanStart, Shapes: d.shapes})
	if err != nil {
		return nil, err
	}
	return SteadyView{
		Reached: s.Reached, Reason: s.Reason, StartIndex: s.StartIndex, EndIndex: s.EndIndex,
		StartRequestID: s.StartRequestID, EndRequestID: s.EndRequestID, SpanStart: string(s.SpanStart), Start: s.Start, End: s.End,
		EnergyJ: s.EnergyJ, Tokens: s.Tokens, JPerToken: s.JPerToken, Windows: s.Windows, WindowCVs: s.WindowCVs, WindowJPerToken: s.WindowJPerToken,
		Window: int(w), CVMax: cv,
	}, nil
}
