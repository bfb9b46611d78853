package measure

import (
	"fmt"
	"math"
	"slices"

	"github.com/joulebench/joulebench/archive/record"
)

// RequestsIn is how many requests generated in [a, b], each counted by the
// share of its output tokens generated there, pro rata as in Attribute
// (token_times when recorded, else spread uniformly over the generation
// interval). A request wholly inside counts 1, one half inside ½; failed
// requests and requests without output tokens count 0. With the tokens of
// the same interval, T/RequestsIn is the mean output tokens per request
// there, so that energy/RequestsIn = (energy/T) × (T/RequestsIn).
func RequestsIn(reqs []*record.Request, a, b float64) (float64, error) {
	var s *Shapes
	return s.RequestsIn(reqs, a, b)
}

// RequestsIn is RequestsIn with the requests' token shapes kept by s.
func (s *Shapes) RequestsIn(reqs []*record.Request, a, b float64) (float64, error) {
	if math.IsNaN(a) || math.IsNaN(b) || b < a {
		return 0, fmt.Errorf("requests_in: interval [%v, %v] is not an interval", a, b)
	}
	if i := slices.Index(reqs, nil); i >= 0 {
		return 0, fmt.Errorf("requests_in: request %d is nil", i)
	}
	sl := s.of(reqs)
	n := 0.0
	for i, r := range reqs {
		if err := sl.err(i); err != nil {
			return 0, fmt.Errorf("requests_in: request %s: %w", r.ID, err)
		}
		sh := &sl.shapes[i]
		if sh.kind == shapeNone || sh.tokens == 0 {
			continue
		}
		n += sh.tokensIn(a, b) / sh.tokens
	}
	return n, nil
}

// TokensIn is how many output tokens the requests generated in [a, b],
// pro rata as in Attribute and SteadyState (token_times when recorded,
// else spread uniformly over the generation interval); failed requests
// count 0. Over the requests that meet an SLO and the steady-state span
// it is the denominator of the steady-state J per good token.
func (s *Shapes) TokensIn(reqs []*record.Request, a, b float64) (float64, error) {
	if math.IsNaN(a) || math.IsNaN(b) || b < a {
		return 0, fmt.Errorf("tokens_in: interval [%v, %v] is not an interval", a, b)
	}
	if i := slices.Index(reqs, nil); i >= 0 {
		return 0, fmt.Errorf("tokens_in: request %d is nil", i)
	}
	sl := s.of(reqs)
	n := 0.0
	for i, r := range reqs {
		if err := sl.err(i); err != nil {
			return 0, fmt.Errorf("tokens_in: request %s: %w", r.ID, err)
		}
		n += sl.shapes[i].tokensIn(a, b)
	}
	return n, nil
}
