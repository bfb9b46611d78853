package loadgen

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workload"
)

// Mode is the name of a load shape (an arrival pattern).
type Mode string

// A load shape is one type, in its own file, with its own parameters,
// checks and schedule, described by a ShapeKind and registered once, in
// shapeKinds. Everything outside this package asks the registry
// (Shapes) what a mode is, never spells one.
//
// Closed shapes send what has finished allows (everything at once, or a
// slot freed); open shapes give each request a send time from the start
// of the stage (Shape.Schedule), optionally capped by a number in flight
// (the max_concurrency parameter, see openCap).

// ShapeKind describes a registered load shape: its mode, a line saying
// what it sends, its role (what searches and vLLM's load flags ask for it
// as, if anything), the load parameters it takes, and how to decode them.
type ShapeKind struct {
	Mode Mode
	Doc  string
	Role Role
	// Params are the load parameters it reads (see the Param constants);
	// every other one must be left unset.
	Params []string
	// Decode checks the parameters of c (whose Mode is this kind's) and
	// returns the shape in its canonical form (which may be another
	// kind's: gamma with burstiness 1 is poisson).
	Decode func(c Config) (Shape, error)
}

// Shape is a load shape with its parameters, decoded and checked.
type Shape interface {
	// Record is the shape as run.json records it: the mode and only the
	// parameters it uses.
	Record() *record.LoadShape
	// Open reports whether it sends on a schedule of times (Schedule);
	// a closed shape sends as requests finish.
	Open() bool
	// InFlight is the most requests it keeps in flight (0: no bound).
	InFlight() int
	// Schedule returns the send offsets from the stage's start of n
	// requests; nil for a closed shape.
	Schedule(n int) []time.Duration
}

// Role is what a shape stands for outside this package: the load a search
// point or a vLLM load flag asks for.
type Role int

// Roles.
const (
	NoRole Role = iota
	// RoleAllAtOnce sends every request at once (the formal stage of
	// benchmark-1.5; vLLM's --request-rate inf); "" reads as it.
	RoleAllAtOnce
	// RoleInFlight keeps a fixed number in flight (a sweep's synchronous
	// point, vLLM's --max-concurrency without a rate).
	RoleInFlight
	// RoleRate sends at a mean rate (vLLM's --request-rate).
	RoleRate
	// RoleBurstyRate sends at a mean rate with gaps of a given burstiness
	// (vLLM's --request-rate with --burstiness other than 1).
	RoleBurstyRate
)

// The load parameters, as the requests step and run.json name them.
const (
	ParamMode           = "mode"
	ParamConcurrency    = "concurrency"
	ParamMaxConcurrency = "max_concurrency"
	ParamRate           = "rate"
	ParamBurstiness     = "burstiness"
	ParamRampStartRate  = "ramp_start_rate"
	ParamRampEndRate    = "ramp_end_rate"
)

// shapeKinds are the load shapes, in the order they are listed: the one
// registration of each.
var shapeKinds = []ShapeKind{unlimitedKind, concurrencyKind, constantKind, poissonKind, gammaKind, rampKind}

// shapes is the registry, built once from shapeKinds and never changed.
var shapes = newRegistry(shapeKinds)

// Registry holds the load shapes by mode. It is built once and read only.
type Registry struct {
	kinds  []ShapeKind
	byMode map[Mode]int
	roles  map[Role]Mode
}

// Shapes returns the registry of the load shapes.
func Shapes() *Registry { return shapes }

// newRegistry builds a registry of kinds; a duplicate or empty mode, a
// kind without Decode or a role given twice panics (a programming error,
// as k6's duplicate executor).
func newRegistry(kinds []ShapeKind) *Registry {
	r := &Registry{byMode: map[Mode]int{}, roles: map[Role]Mode{}}
	for _, k := range kinds {
		if k.Mode == "" || k.Decode == nil {
			panic(fmt.Sprintf("load shape %q: needs a mode and a decoder", k.Mode))
		}
		if _, dup := r.byMode[k.Mode]; dup {
			panic(fmt.Sprintf("load shape %q registered twice", k.Mode))
		}
		if k.Role != NoRole {
			if m, dup := r.roles[k.Role]; dup {
				panic(fmt.Sprintf("load shapes %q and %q have the same role", m, k.Mode))
			}
			r.roles[k.Role] = k.Mode
		}
		r.byMode[k.Mode] = len(r.kinds)
		r.kinds = append(r.kinds, k)
	}
	return r
}

// Names lists the modes, in registration order.
func (r *Registry) Names() []string {
	names := make([]string, len(r.kinds))
	for i, k := range r.kinds {
		names[i] = string(k.Mode)
	}
	return names
}

// Kind returns the shape of a mode ("" is the all-at-once shape's); an
// unknown mode is an error listing the valid ones.
func (r *Registry) Kind(mode string) (ShapeKind, error) {
	if mode == "" {
		mode = string(r.Role(RoleAllAtOnce))
	}
	if i, ok := r.byMode[Mode(mode)]; ok {
		k := r.kinds[i]
		k.Params = slices.Clone(k.Params) // the registry's own stays as built
		return k, nil
	}
	return ShapeKind{}, fmt.Errorf("unknown load mode %q (want %s)", mode, strings.Join(r.Names(), ", "))
}

// Role returns the mode of the shape that has role ("" when none has).
func (r *Registry) Role(role Role) Mode { return r.roles[role] }

// takers says which shapes take param: "mode gamma", "modes constant,
// poisson and gamma".
func (r *Registry) takers(param string) string {
	var names []string
	for _, k := range r.kinds {
		if takes(k, param) {
			names = append(names, string(k.Mode))
		}
	}
	switch len(names) {
	case 0:
		return "no mode"
	case 1:
		return "mode " + names[0]
	}
	return "modes " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// ParseMode reads a mode name ("" is the all-at-once shape's).
func ParseMode(s string) (Mode, error) {
	k, err := shapes.Kind(s)
	return k.Mode, err
}

// unused are the checks that a parameter the shape does not take is left
// unset, with the message that says which shapes take it. concurrency
// and max_concurrency have none: every shape reads them (or refuses them
// with its own message).
var unused = []struct {
	param string
	set   func(c Config) bool
	msg   func(c Config, takers string, m Mode) string
}{
	{ParamRate, func(c Config) bool { return c.Rate != 0 }, func(c Config, takers string, m Mode) string {
		return fmt.Sprintf("rate %v applies to %s, not %s", c.Rate, takers, m)
	}},
	{ParamBurstiness, func(c Config) bool { return c.burstiness() != 1 }, func(c Config, takers string, m Mode) string {
		return fmt.Sprintf("burstiness %v applies to %s, not %s (%s with burstiness 1 is %s)", c.Burstiness, takers, m,
			shapes.Role(RoleBurstyRate), shapes.Role(RoleRate))
	}},
	{ParamRampStartRate, func(c Config) bool { return c.RampStartRate != 0 || c.RampEndRate != 0 }, func(c Config, takers string, m Mode) string {
		return fmt.Sprintf("ramp_start_rate and ramp_end_rate apply to %s, not %s", takers, m)
	}},
}

// Shape decodes c's load shape: the mode first, then that mode's own
// parameters. Every parameter that the mode does not use must be left
// unset, so that a load is never silently other than the one asked for
// (concurrency 16 with the all-at-once mode is an error, not an
// all-at-once run). Messages name the requests step's parameters.
func (c Config) Shape() (Shape, error) {
	k, err := shapes.Kind(string(c.Mode))
	if err != nil {
		return nil, err
	}
	b := c.burstiness()
	switch {
	case c.Concurrency < 0:
		return nil, fmt.Errorf("concurrency %d: must be >= 0", c.Concurrency)
	case c.MaxConcurrency < 0:
		return nil, fmt.Errorf("max_concurrency %d: must be >= 0", c.MaxConcurrency)
	case !(b > 0) || math.IsInf(b, 1):
		return nil, fmt.Errorf("burstiness %v: must be a finite number > 0", c.Burstiness)
	}
	for _, u := range unused {
		if u.set(c) && !takes(k, u.param) {
			return nil, fmt.Errorf("%s", u.msg(c, shapes.takers(u.param), k.Mode))
		}
	}
	c.Mode = k.Mode
	return k.Decode(c)
}

// takes reports whether k reads param.
func takes(k ShapeKind, param string) bool { return slices.Contains(k.Params, param) }

// Validate checks the configuration: its load shape (see Shape) and its
// limits.
func (c Config) Validate() error {
	if _, err := c.Shape(); err != nil {
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

// burstiness is Burstiness with 0 read as 1 (no burstiness given).
func (c Config) burstiness() float64 {
	if c.Burstiness == 0 {
		return 1
	}
	return c.Burstiness
}

// Normalized returns the configuration of a valid c in its one canonical
// form, the one Run runs and Load records: its shape's mode and only the
// parameters it uses (each shape says its canonical form: "" is the
// all-at-once mode, which capped at N in flight is the fixed-concurrency
// one, as vLLM's --max-concurrency without a rate; an open mode's cap
// given as concurrency, the older spelling, is MaxConcurrency);
// Burstiness is 1 where it does not apply. An invalid c is returned as
// it is.
func (c Config) Normalized() Config {
	s, err := c.Shape()
	if err != nil {
		return c
	}
	l := s.Record()
	c.Mode, c.Concurrency, c.MaxConcurrency, c.Rate, c.Burstiness = Mode(l.Mode), l.Concurrency, l.MaxConcurrency, l.Rate, l.Burstiness
	if c.Burstiness == 0 {
		c.Burstiness = 1
	}
	c.RampStartRate, c.RampEndRate = 0, 0
	if l.RampStartRate != nil && l.RampEndRate != nil {
		c.RampStartRate, c.RampEndRate = *l.RampStartRate, *l.RampEndRate
	}
	return c
}

// Load is the load shape of a valid c as run.json records it: the mode
// and only the parameters it uses (see Normalized); nil for an invalid c.
func (c Config) Load() *record.LoadShape {
	s, err := c.Shape()
	if err != nil {
		return nil
	}
	return s.Record()
}

// Burst returns the requests of reqs (after MaxRequests) that a valid c
// sends together at the start, before any has finished: all of them for a
// closed shape without a bound in flight, the first fill of one with a
// bound; none for an open shape (its sends are spread over time). They
// are what a Preparer prepares.
func (c Config) Burst(reqs []workload.Request) []workload.Request {
	if c.MaxRequests > 0 && c.MaxRequests < len(reqs) {
		reqs = reqs[:c.MaxRequests]
	}
	s, err := c.Shape()
	switch {
	case err != nil || s.Open():
		return nil
	case s.InFlight() > 0:
		return reqs[:min(s.InFlight(), len(reqs))]
	}
	return reqs
}

// Schedule returns the send offsets from the stage's start of n requests
// of a valid, open c (nil for a closed one).
func (c Config) Schedule(n int) []time.Duration {
	s, err := c.Shape()
	if err != nil {
		return nil
	}
	return s.Schedule(n)
}

// AllAtOnce reports whether a valid c sends every request at once (a
// closed shape with no bound in flight).
func (c Config) AllAtOnce() bool {
	s, err := c.Shape()
	return err == nil && !s.Open() && s.InFlight() == 0
}

// seconds turns t seconds into a Duration, to the nearest nanosecond.
func seconds(t float64) time.Duration { return time.Duration(math.Round(t * 1e9)) }
