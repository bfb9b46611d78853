package metricdefs

import (
	"context"
	"fmt"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"
)

// residentBuiltinDefs are the built-ins of attribution by residency (from a
// request's send to its end, prefill included), for per-turn energy of
// conversations.
func residentBuiltinDefs() []builtinDef {
	return []builtinDef{
		attributionBuiltin(Builtin{"attribute_resident", `attribute_resident(requests, method) list`, `per-request GPU energy by residency, from sent_at to done_at (prefill included), each piece of time split equally among the requests resident in it: [{id, energy_j, tokens, j_per_token}] in the order given`},
			(*measure.PowerData).AttributeResident),
	}
}

// attributionBuiltin is a built-in fn(requests, method) that splits GPU
// energy among requests with attr and returns one AttributionView each.
func attributionBuiltin(b Builtin, attr func(*measure.PowerData, []*record.Request, string) ([]measure.Attribution, error)) builtinDef {
	return builtinDef{
		Builtin: b,
		fn: func(p ...any) (any, error) {
			pd, err := powerFrom(p[0].(context.Context))
			if err != nil {
				return nil, err
			}
			reqs, err := toRequests(p[1])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", b.Name, err)
			}
			at, err := attr(pd, reqs, p[2].(string))
			if err != nil {
				return nil, err
			}
			out := make([]AttributionView, len(at))
			for i, a := range at {
				out[i] = AttributionView{ID: a.ID, EnergyJ: a.EnergyJ, Tokens: a.Tokens, JPerToken: a.JPerToken}
			}
			return out, nil
		},
		types: []any{new(func(context.Context, []any, string) []AttributionView), new(func(context.Context, []*record.Request, string) []AttributionView)},
	}
}
