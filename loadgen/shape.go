package loadgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workload"
)

// Mode is an arrival pattern (a load shape).
type Mode string

// Modes. Unlimited and Concurrency are closed: what is sent depends on
// what has finished (nothing, or a slot). The others are open: each
// request has a send time from the start of the stage (Schedule),
// optionally capped by a number in flight (Config.MaxConcurrency).
const (
	Unlimited   Mode = "unlimited"
	Concurrency Mode = "concurrency"
	// Constant sends at a fixed rate: request i at i / rate.
	Constant Mode = "constant"
	// Poisson sends with exponential gaps of mean 1 / rate (Arrivals).
	Poisson Mode = "poisson"
	// Gamma sends with gamma-distributed gaps of shape burstiness and
	// mean 1 / rate, as vLLM's bench serve --burstiness defines them:
	// burstiness 1 is Poisson (and is run and recorded as Poisson), below
	// 1 burstier (the gaps' CV is 1/√burstiness), above 1 more regular.
	Gamma Mode = "gamma"
	// Ramp sends at a rate that rises (or falls) linearly over the stage
	// from RampStartRate to RampEndRate (RampArrivals): exact times, no
	// randomness.
	Ramp Mode = "ramp"
)

// Modes lists the valid modes.
var Modes = []Mode{Unlimited, Concurrency, Constant, Poisson, Gamma, Ramp}

// ParseMode reads a mode name ("" is unlimited).
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return Unlimited, nil
	}
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown load mode %q (want %s)", s, modeList())
}

func modeList() string {
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}

// open reports whether a mode sends on a schedule of times.
func (m Mode) open() bool {
	return m == Constant || m == Poisson || m == Gamma || m == Ramp
}

// rated reports whether a mode takes Rate.
func (m Mode) rated() bool { return m == Constant || m == Poisson || m == Gamma }

// Validate checks the configuration. Every parameter that the mode does not
// use must be left unset, so that a load is never silently other than the
// one asked for (concurrency 16 with mode unlimited is an error, not an
// unlimited run). Messages name the requests step's parameters.
func (c Config) Validate() error {
	mode, err := ParseMode(string(c.Mode))
	if err != nil {
		return err
	}
	if err := c.validateShape(mode); err != nil {
		return err
	}
	switch {
	case c.MaxRequests < 0:
		return fmt.Errorf("max_requests %d: must be >= 0", c.MaxRequests)
	case c.MaxDuration < 0:
		return fmt.Errorf("max_duration %v: must be >= 0", c.MaxDuration)
	case c.Limits.Timeout < 0 || c.Limits.Stall < 0:
		return fmt.Errorf("request timeout %v, stall timeout %v: must be >= 0", c.Limits.Timeout, c.Limits.Stall)
	case c.Watch != nil && c.WatchEvery <= 0:
		return fmt.Errorf("watch interval %v: must be > 0", c.WatchEvery)
	}
	return nil
}

// validateShape checks the shape's parameters for mode.
func (c Config) validateShape(mode Mode) error {
	b := c.burstiness()
	switch {
	case c.Concurrency < 0:
		return fmt.Errorf("concurrency %d: must be >= 0", c.Concurrency)
	case c.MaxConcurrency < 0:
		return fmt.Errorf("max_concurrency %d: must be >= 0", c.MaxConcurrency)
	case !(b > 0) || math.IsInf(b, 1):
		return fmt.Errorf("burstiness %v: must be a finite number > 0", c.Burstiness)
	case mode == Concurrency && c.Concurrency < 1:
		return fmt.Errorf("mode concurrency needs concurrency ≥ 1, got %d", c.Concurrency)
	case mode == Concurrency && c.MaxConcurrency > 0:
		return fmt.Errorf("mode concurrency sets its requests in flight with concurrency (%d); max_concurrency (%d) caps the other modes", c.Concurrency, c.MaxConcurrency)
	case mode == Unlimited && c.Concurrency > 0:
		return fmt.Errorf("concurrency %d with mode unlimited: set mode concurrency for a fixed number in flight (or max_concurrency to cap)", c.Concurrency)
	case mode.open() && c.Concurrency > 0 && c.MaxConcurrency > 0 && c.Concurrency != c.MaxConcurrency:
		return fmt.Errorf("mode %s: concurrency %d and max_concurrency %d both cap the requests in flight: give one", mode, c.Concurrency, c.MaxConcurrency)
	case mode.rated() && !(c.Rate > 0):
		return fmt.Errorf("mode %s needs a rate > 0 requests/s, got %v", mode, c.Rate)
	case !mode.rated() && c.Rate != 0:
		return fmt.Errorf("rate %v applies to modes constant, poisson and gamma, not %s", c.Rate, mode)
	case mode != Gamma && b != 1:
		return fmt.Errorf("burstiness %v applies to mode gamma, not %s (gamma with burstiness 1 is poisson)", c.Burstiness, mode)
	case mode != Ramp && (c.RampStartRate != 0 || c.RampEndRate != 0):
		return fmt.Errorf("ramp_start_rate and ramp_end_rate apply to mode ramp, not %s", mode)
	case mode == Ramp:
		return validateRamp(c.RampStartRate, c.RampEndRate)
	}
	return nil
}

func validateRamp(r0, r1 float64) error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	if !finite(r0) || !finite(r1) || r0 < 0 || r1 < 0 || !(r0+r1 > 0) {
		return fmt.Errorf("mode ramp needs ramp_start_rate and ramp_end_rate finite, >= 0 and not both 0 (requests/s), got %v and %v", r0, r1)
	}
	return nil
}

// burstiness is Burstiness with 0 read as 1 (Poisson's).
func (c Config) burstiness() float64 {
	if c.Burstiness == 0 {
		return 1
	}
	return c.Burstiness
}

// Normalized returns the configuration of a valid c in its one canonical
// form, the one Run runs and Load records: "" is unlimited; unlimited
// capped at N in flight is concurrency N (vLLM's --max-concurrency
// without a rate); gamma with burstiness 1 is poisson; an open mode's cap
// given as concurrency (the older spelling) is MaxConcurrency; burstiness
// is 1 outside gamma.
func (c Config) Normalized() Config {
	if c.Mode == "" {
		c.Mode = Unlimited
	}
	if c.Mode == Unlimited && c.MaxConcurrency > 0 {
		c.Mode, c.Concurrency, c.MaxConcurrency = Concurrency, c.MaxConcurrency, 0
	}
	if c.Mode.open() && c.Concurrency > 0 {
		c.MaxConcurrency, c.Concurrency = c.Concurrency, 0
	}
	b := c.burstiness()
	if c.Mode == Gamma && b == 1 {
		c.Mode = Poisson
	}
	c.Burstiness = 1
	if c.Mode == Gamma {
		c.Burstiness = b
	}
	return c
}

// Load is the load shape of a valid c as run.json records it: the mode
// and only the parameters it uses (see Normalized).
func (c Config) Load() *record.LoadShape {
	n := c.Normalized()
	l := &record.LoadShape{Mode: string(n.Mode)}
	switch {
	case n.Mode == Concurrency:
		l.Concurrency = n.Concurrency
	case n.Mode.open():
		l.MaxConcurrency = n.MaxConcurrency
	}
	if n.Mode.rated() {
		l.Rate = n.Rate
	}
	if n.Mode == Gamma {
		l.Burstiness = n.Burstiness
	}
	if n.Mode == Ramp {
		l.RampStartRate, l.RampEndRate = &n.RampStartRate, &n.RampEndRate
	}
	return l
}

// Burst returns the requests of reqs (after MaxRequests) that a valid c
// sends together at the start, before any has finished: all of them when
// unlimited, the first fill of a concurrency stage; none for an open mode
// (its sends are spread over time). They are what a Preparer prepares.
func (c Config) Burst(reqs []workload.Request) []workload.Request {
	if c.MaxRequests > 0 && c.MaxRequests < len(reqs) {
		reqs = reqs[:c.MaxRequests]
	}
	switch n := c.Normalized(); n.Mode {
	case Unlimited:
		return reqs
	case Concurrency:
		return reqs[:min(n.Concurrency, len(reqs))]
	}
	return nil
}

// Schedule returns the send offsets from the stage's start of n requests
// of a valid, open c (nil for unlimited and concurrency).
func (c Config) Schedule(n int) []time.Duration {
	c = c.Normalized()
	switch c.Mode {
	case Constant:
		return ConstantArrivals(n, c.Rate)
	case Poisson:
		return Arrivals(n, c.Rate, c.Seed)
	case Gamma:
		return GammaArrivals(n, c.Rate, c.Burstiness, c.Seed)
	case Ramp:
		return RampArrivals(n, c.RampStartRate, c.RampEndRate)
	}
	return nil
}

// seconds turns t seconds into a Duration, to the nearest nanosecond.
func seconds(t float64) time.Duration { return time.Duration(math.Round(t * 1e9)) }

// ConstantArrivals returns the send offsets of n requests at a constant
// rate (requests per second): request i at i / rate. A rate of +Inf gives
// all zeros.
func ConstantArrivals(n int, rate float64) []time.Duration {
	out := make([]time.Duration, n)
	if math.IsInf(rate, 1) {
		return out
	}
	for i := range out {
		out[i] = seconds(float64(i) / rate)
	}
	return out
}

// RampArrivals returns the send offsets of n requests whose rate rises (or
// falls) linearly in time from r0 at the first send to r1 at
// T = 2n / (r0 + r1), when an (n+1)-th request would go: λ(t) = r0 + k·t
// with k = (r1 − r0) / T, so that its integral Λ(T) = n. Request i goes at
// the t where Λ(t) = r0·t + k·t²/2 = i:
//
//	t_i = 2i / (r0 + √(r0² + 2k·i))
//
// (the root of the quadratic written without the cancellation of
// (−r0 + √…)/k; it is i / r0 when k = 0). r0 and r1 are >= 0, not both 0.
func RampArrivals(n int, r0, r1 float64) []time.Duration {
	out := make([]time.Duration, n)
	if n == 0 {
		return out
	}
	k := (r1 - r0) * (r0 + r1) / (2 * float64(n)) // (r1 − r0) / T
	for i := 1; i < n; i++ {
		x := float64(i)
		out[i] = seconds(2 * x / (r0 + math.Sqrt(r0*r0+2*k*x)))
	}
	return out
}

// GammaArrivals returns the send offsets of n requests whose gaps are
// gamma-distributed with shape burstiness and mean 1 / rate (scale
// 1 / (rate · burstiness)), as vLLM's bench serve draws them; the first
// request is sent at once. The draws come from a PCG generator seeded with
// seed through the method written here (Marsaglia and Tsang's, with
// Box–Muller normals), so a seed always gives the same schedule whatever
// the Go version. A rate of +Inf gives all zeros.
//
// Unlike vLLM (0.10 and later), the first request is not delayed by a gap
// and the schedule is not rescaled to end at exactly n / rate: the gaps
// are a renewal process, as the Poisson mode's are.
func GammaArrivals(n int, rate, burstiness float64, seed int64) []time.Duration {
	out := make([]time.Duration, n)
	if math.IsInf(rate, 1) {
		return out
	}
	g := gammaSource{src: rand.NewPCG(uint64(seed), 0x67616d6d61)} // "gamma"
	scale := 1 / (rate * burstiness)
	t := 0.0
	for i := 1; i < n; i++ {
		t += g.next(burstiness) * scale
		out[i] = seconds(t)
	}
	return out
}

// gammaSource draws gamma variates of scale 1 from a PCG generator.
type gammaSource struct{ src *rand.PCG }

// uniform returns a uniform variate in (0, 1].
func (g gammaSource) uniform() float64 {
	return float64(g.src.Uint64()>>11+1) / (1 << 53)
}

// normal returns a standard normal variate (Box–Muller, one of the pair).
func (g gammaSource) normal() float64 {
	u1, u2 := g.uniform(), g.uniform()
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// next returns a Gamma(a, 1) variate, a > 0: Marsaglia and Tsang, "A
// simple method for generating gamma variables" (ACM TOMS 26(3), 2000),
// with their boost for a < 1: Gamma(a) = Gamma(a+1) · U^(1/a).
func (g gammaSource) next(a float64) float64 {
	boost := 1.0
	if a < 1 {
		boost = math.Pow(g.uniform(), 1/a)
		a++
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := g.normal()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := g.uniform()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v * boost
		}
	}
}
