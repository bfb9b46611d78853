package loadgen

import "fmt"

// The parts every open shape shares: its cap on the requests in flight
// (the max_concurrency parameter, or concurrency, its older spelling) and,
// for a shape with a mean rate, the rate.

// openCap is an open shape's cap on the requests in flight (0: none).
type openCap struct{ max int }

func (openCap) Open() bool      { return true }
func (o openCap) InFlight() int { return o.max }

// decodeCap reads the cap of c's open shape: max_concurrency, or
// concurrency (the older spelling); both given must agree.
func decodeCap(c Config) (openCap, error) {
	if c.Concurrency > 0 && c.MaxConcurrency > 0 && c.Concurrency != c.MaxConcurrency {
		return openCap{}, fmt.Errorf("mode %s: concurrency %d and max_concurrency %d both cap the requests in flight: give one", c.Mode, c.Concurrency, c.MaxConcurrency)
	}
	return openCap{max(c.Concurrency, c.MaxConcurrency)}, nil
}

// decodeRate reads the mean rate of c's shape, in requests/s (> 0; +Inf
// sends everything at once).
func decodeRate(c Config) (float64, error) {
	if !(c.Rate > 0) {
		return 0, fmt.Errorf("mode %s needs a rate > 0 requests/s, got %v", c.Mode, c.Rate)
	}
	return c.Rate, nil
}

// openParams are the parameters of an open shape: its cap's, then its own.
func openParams(own ...string) []string {
	return append([]string{ParamConcurrency, ParamMaxConcurrency}, own...)
}
