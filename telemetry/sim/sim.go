// Package sim is a simulated multi-GPU telemetry source whose power and
// memory follow the load of the simulated engine (engines/sim).
//
// Power model, per device: a first-order lag towards a target that depends
// on the engine's activity. Between two reads the target is held at the
// value computed from the activity seen at the earlier read (causal
// zero-order hold), so the modelled power over (t0, t1] is
//
//	P(t) = T + (P0 - T)·exp(-(t-t0)/tau)
//
// with tau = RiseTauS when rising and DecayTauS when falling, and its
// integral is exact:
//
//	E = T·dt + (P0 - T)·tau·(1 - exp(-dt/tau)).
//
// The cumulative energy counter is that integral, so it is exactly the
// energy of the modelled (noise-free) power. Reported instantaneous power
// adds bounded noise drawn from a PCG generator seeded with Config.Seed, one
// draw per device per read: for a given seed, activity sequence and sequence
// of read times the output is identical.
//
// Targets:
//
//	off (never started)  IdleW
//	loading              LoadW
//	ready                IdleW + ReadyExtraW + (MaxW - IdleW - ReadyExtraW)·a,
//	                     a = min(1, (Running + PrefillWeight·Prefilling) / Slots)
//	stopping             IdleW + StoppingFrac·(LoadW - IdleW)
//	off (after a start)  IdleW + ReleaseOffsetW
//
// Device i scales the part above idle by (1 - DeviceSkew·i), so devices of a
// tensor-parallel group are close but not identical. Memory in use is
// MemBaselineBytes + MemFrac·(MemTotalBytes - MemBaselineBytes) while the
// engine holds memory, MemBaselineBytes when it is off.
package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// Engine phases as reported in Activity.Phase.
const (
	PhaseOff      = "off"
	PhaseLoading  = "loading"
	PhaseReady    = "ready"
	PhaseStopping = "stopping"
)

// Load is what the simulated GPUs observe of the engine; engines/sim
// implements it.
type Load interface {
	Activity() Activity
}

// Activity is the engine's state at one instant.
type Activity struct {
	// Phase is "off", "loading", "ready" or "stopping".
	Phase string
	// Running is the number of sequences decoding.
	Running int
	// Prefilling is the number of sequences in prefill.
	Prefilling int
	// Slots is the engine's concurrent sequence limit.
	Slots int
	// MemFrac is the fraction (0..1) of device memory the engine holds.
	MemFrac float64
	// HW says the engine runs the hardware model (internal/simhw): a
	// ready engine's power follows the energy of its steps (HWEnergyJ)
	// instead of the activity fraction.
	HW bool
	// HWEnergyJ is one GPU's energy above idle in the steps run so far,
	// cumulative; HWBusyS the wall time of those steps.
	HWEnergyJ, HWBusyS float64
	// ClockMHz is the SM clock of the last step; PowerCapped whether the
	// power limit held it below what was allowed.
	ClockMHz    float64
	PowerCapped bool
}

// Config parameterises the simulated GPUs.
type Config struct {
	// Devices is the number of simulated GPUs.
	Devices int
	// IdleW is the idle board power; LoadW the power while the model
	// loads; MaxW the power at full batch.
	IdleW, MaxW, LoadW float64
	// ReadyExtraW is the power above idle of a loaded engine with no work.
	ReadyExtraW float64
	// PrefillWeight is how many decoding sequences one prefilling sequence
	// counts as in the activity fraction.
	PrefillWeight float64
	// StoppingFrac places the stopping power between idle (0) and LoadW (1).
	StoppingFrac float64
	// NoiseW bounds the noise on reported power: uniform in [-NoiseW, +NoiseW].
	// Keep it well inside the release tolerance band (5 % of IdleW).
	NoiseW float64
	// RiseTauS and DecayTauS are the lag time constants (seconds) when the
	// power rises towards, or falls towards, its target.
	RiseTauS, DecayTauS float64
	// DeviceSkew scales device i's power above idle by (1 - DeviceSkew·i).
	DeviceSkew float64
	// MemTotalBytes is each device's memory; MemBaselineBytes what is in
	// use with no engine.
	MemTotalBytes, MemBaselineBytes int64
	// Seed seeds the noise generator.
	Seed int64
	// Counter makes readings carry the cumulative energy counter
	// (HasEnergy, Device.Method "counter"); otherwise only power.
	Counter bool
	// ReleaseOffsetW keeps power this much above idle once the engine has
	// run and stopped, so that release never closes (tests).
	ReleaseOffsetW float64
	// Host and Role, when set, are the node the GPUs are on and the part
	// they serve (a deployment of several parts: NewNodes); IDBase
	// numbers their IDs after another node's (sim<IDBase+i>).
	Host, Role string
	IDBase     int
	// IDs, when set, name the devices instead (a deployment part's
	// devices): device i is IDs[i], and there are as many devices.
	IDs []string
	// Settings, when set, are the GPUs' power limits and locked clocks
	// (settings.go): the power above idle follows their model and reported
	// power never exceeds a device's limit. Nil: full clock, limit MaxW.
	Settings *GPUSettings
	// DeviceName names the devices (default "Simulated GPU"); a hardware
	// preset's says which board it models.
	DeviceName string
	// ClockMaxMHz, ClockMinMHz, ClockIdleMHz and LimitMinW, when set,
	// replace the default model's clock range, idle clock and lowest
	// power limit (a hardware preset's).
	ClockMaxMHz, ClockMinMHz, ClockIdleMHz, LimitMinW float64
}

// deviceName is the devices' name.
func (c Config) deviceName() string {
	if c.DeviceName != "" {
		return c.DeviceName
	}
	return "Simulated GPU"
}

// clocks are the SM clock range, the idle clock and the lowest limit.
func (c Config) clocks() (maxMHz, minMHz, idleMHz, minLimitW float64) {
	maxMHz, minMHz, idleMHz, minLimitW = MaxClockMHz, MinClockMHz, IdleClockMHz, MinLimitW
	if c.ClockMaxMHz > 0 {
		maxMHz = c.ClockMaxMHz
	}
	if c.ClockMinMHz > 0 {
		minMHz = c.ClockMinMHz
	}
	if c.ClockIdleMHz > 0 {
		idleMHz = c.ClockIdleMHz
	}
	if c.LimitMinW > 0 {
		minLimitW = c.LimitMinW
	}
	return maxMHz, minMHz, idleMHz, minLimitW
}

// DefaultConfig is two 80 GiB GPUs idling at 60 W, loading at 180 W and
// reaching 450 W at full batch, with a 2 s decay and an energy counter.
func DefaultConfig() Config {
	return Config{
		Devices:          2,
		IdleW:            60,
		MaxW:             450,
		LoadW:            180,
		ReadyExtraW:      15,
		PrefillWeight:    2,
		StoppingFrac:     0.3,
		NoiseW:           1,
		RiseTauS:         0.5,
		DecayTauS:        2,
		DeviceSkew:       0.02,
		MemTotalBytes:    80 << 30,
		MemBaselineBytes: 512 << 20,
		Seed:             1,
		Counter:          true,
	}
}

type device struct {
	powerW  float64 // modelled power at lastT (noise-free)
	energyJ float64 // cumulative counter at lastT
	target  float64 // target held since lastT
	memB    int64   // memory in use since lastT
}

// Source is the simulated telemetry source.
type Source struct {
	cfg   Config
	load  Load
	clock telemetry.Clock

	mu      sync.Mutex
	rng     *rand.Rand
	init    bool
	lastT   float64
	used    bool // the engine has left "off" at least once
	devs    []device
	hw      hwMark // the hardware model's energy at the last Read
	closed  bool
	failErr error
}

var _ telemetry.Source = (*Source)(nil)

// New returns a simulated source observing load (nil: always off) on the
// run clock (nil: telemetry.WallClock). The model starts at idle at the
// first Read. Zero or negative time constants mean an instant step.
func New(cfg Config, load Load, clock telemetry.Clock) *Source {
	if len(cfg.IDs) > 0 {
		cfg.Devices = len(cfg.IDs)
	}
	if cfg.Devices <= 0 {
		cfg.Devices = 1
	}
	if clock == nil {
		clock = telemetry.WallClock
	}
	seed := uint64(cfg.Seed)
	return &Source{
		cfg:   cfg,
		load:  load,
		clock: clock,
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		devs:  make([]device, cfg.Devices),
	}
}

// Config returns the configuration in use.
func (s *Source) Config() Config { return s.cfg }

// Name returns "sim".
func (s *Source) Name() string { return Name }

// Devices lists the simulated GPUs sim0, sim1, ...
func (s *Source) Devices(context.Context) ([]record.Device, error) {
	method := "power"
	if s.cfg.Counter {
		method = "counter"
	}
	out := make([]record.Device, s.cfg.Devices)
	for i := range out {
		out[i] = record.Device{
			ID:         s.deviceID(i),
			Name:       s.cfg.deviceName(),
			UUID:       fmt.Sprintf("GPU-SIM-%08x-%04d", uint32(s.cfg.Seed), s.cfg.IDBase+i),
			Host:       s.cfg.Host,
			Role:       s.cfg.Role,
			Method:     method,
			PowerField: "sim_board_power",
			Simulated:  true,
			// The power at full batch is the simulated board's limit.
			PowerLimitW: s.cfg.MaxW,
		}
		if g := s.cfg.Settings; g != nil {
			out[i].PowerLimitW = g.LimitW(i)
		}
	}
	return out, nil
}

func (s *Source) deviceID(i int) string {
	if i < len(s.cfg.IDs) {
		return s.cfg.IDs[i]
	}
	return fmt.Sprintf("sim%d", s.cfg.IDBase+i)
}

// InjectError makes every following Read fail with err (a lost GPU);
// nil clears it.
func (s *Source) InjectError(err error) {
	s.mu.Lock()
	s.failErr = err
	s.mu.Unlock()
}

// Read advances the model to clock() and returns one reading per device,
// stamped with that instant.
func (s *Source) Read(ctx context.Context) ([]telemetry.Reading, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, telemetry.ErrStopped
	}
	if s.failErr != nil {
		return nil, s.failErr
	}
	t := s.clock()
	act := Activity{Phase: PhaseOff}
	if s.load != nil {
		act = s.load.Activity()
	}
	s.advance(t)
	s.retarget(act, t)
	out := make([]telemetry.Reading, len(s.devs))
	for i := range s.devs {
		d := &s.devs[i]
		p := d.powerW
		if s.cfg.NoiseW > 0 {
			p += s.cfg.NoiseW * (2*s.rng.Float64() - 1)
		}
		if p < 0 {
			p = 0
		}
		if g := s.cfg.Settings; g != nil {
			p = math.Min(p, g.LimitW(i)) // the firmware holds power at the limit
		}
		out[i] = telemetry.Reading{
			Device:       s.deviceID(i),
			PowerW:       p,
			EnergyJ:      d.energyJ,
			HasEnergy:    s.cfg.Counter,
			MemUsedBytes: d.memB,
			T:            t,
		}
		if !s.cfg.Counter {
			out[i].EnergyJ = 0
		}
	}
	return out, nil
}

// advance moves every device from lastT to t under the held targets.
func (s *Source) advance(t float64) {
	if !s.init {
		s.init = true
		s.lastT = t
		for i := range s.devs {
			s.devs[i] = device{powerW: s.cfg.IdleW, target: s.cfg.IdleW, memB: s.cfg.MemBaselineBytes}
		}
		return
	}
	dt := t - s.lastT
	if dt <= 0 {
		return // a clock that did not move (or went back) changes nothing
	}
	for i := range s.devs {
		d := &s.devs[i]
		tau := s.cfg.RiseTauS
		if d.target < d.powerW {
			tau = s.cfg.DecayTauS
		}
		p, e := Step(d.powerW, d.target, tau, dt)
		d.powerW = p
		d.energyJ += e
	}
	s.lastT = t
}

// hwMark is the hardware model's cumulative energy and busy time at a
// Read.
type hwMark struct {
	t, energyJ, busyS float64
	set               bool
}

// hwAbove is the power above idle of a ready engine under the hardware
// model over the interval since the last Read: its steps' energy above
// idle, and ReadyExtraW while it had no step, over the interval (before
// any interval: ReadyExtraW). The model's steps never draw more than the
// limit, but a busy host may end several in one interval (the engine
// catches up with its schedule): what would exceed the limit there is
// carried to the next interval, so the energy is kept and the power stays
// physical.
func (s *Source) hwAbove(a Activity, t float64) float64 {
	last := s.hw
	if !last.set || a.HWEnergyJ < last.energyJ {
		s.hw = hwMark{t: t, energyJ: a.HWEnergyJ, busyS: a.HWBusyS, set: true}
		return s.cfg.ReadyExtraW
	}
	dt := t - last.t
	if dt <= 0 {
		return s.cfg.ReadyExtraW
	}
	idle := math.Max(0, dt-(a.HWBusyS-last.busyS))
	stepsJ := a.HWEnergyJ - last.energyJ
	maxAbove := s.cfg.MaxW - s.cfg.IdleW
	if g := s.cfg.Settings; g != nil {
		maxAbove = math.Min(maxAbove, g.LimitW(0)-s.cfg.IdleW)
	}
	if room := math.Max(0, maxAbove*dt-s.cfg.ReadyExtraW*idle); stepsJ > room {
		stepsJ = room // the rest is drawn in the next interval
	}
	s.hw = hwMark{t: t, energyJ: last.energyJ + stepsJ, busyS: a.HWBusyS, set: true}
	return (stepsJ + s.cfg.ReadyExtraW*idle) / dt
}

// retarget sets each device's target and memory from the activity seen
// now, at t.
func (s *Source) retarget(a Activity, t float64) {
	c := s.cfg
	if a.Phase != PhaseOff && a.Phase != "" {
		s.used = true
	}
	var above float64 // target power above idle for device 0
	held := true
	switch a.Phase {
	case PhaseLoading:
		above = c.LoadW - c.IdleW
	case PhaseReady:
		if a.HW {
			above = s.hwAbove(a, t)
			break
		}
		above = c.ReadyExtraW + (c.MaxW-c.IdleW-c.ReadyExtraW)*activityFrac(c, a.Running, a.Prefilling, a.Slots)
	case PhaseStopping:
		above = c.StoppingFrac * (c.LoadW - c.IdleW)
	default: // off
		held = false
		if s.used {
			above = c.ReleaseOffsetW
		}
	}
	mem := c.MemBaselineBytes
	if held {
		f := math.Max(0, math.Min(1, a.MemFrac))
		mem += int64(f * float64(c.MemTotalBytes-c.MemBaselineBytes))
	}
	busy := a.Phase == PhaseLoading || a.Phase == PhaseReady && a.Running+a.Prefilling > 0
	for i := range s.devs {
		dev := above * deviceScale(c, i)
		switch g := c.Settings; {
		case g != nil && a.HW && a.Phase == PhaseReady:
			g.observe(i, a.ClockMHz, a.PowerCapped, busy) // the model applied the settings to the power
		case g != nil:
			dev, _ = g.operate(i, dev, busy)
		}
		s.devs[i].target = c.IdleW + dev
		s.devs[i].memB = mem
	}
}

// Step advances a first-order lag from p0 towards target over dt seconds
// with time constant tau and returns the new power and the exact energy
// (integral of power) over the step. tau <= 0 is an instant step.
func Step(p0, target, tau, dt float64) (p, energy float64) {
	if dt <= 0 {
		return p0, 0
	}
	if tau <= 0 {
		return target, target * dt
	}
	x := dt / tau
	decay := math.Exp(-x)
	p = target + (p0-target)*decay
	// (1 - e^-x) computed with Expm1 keeps precision for small steps.
	energy = target*dt + (p0-target)*tau*(-math.Expm1(-x))
	return p, energy
}

// ModelPower returns device i's modelled (noise-free) power at the last
// Read, and false if there was no Read yet or i is out of range.
func (s *Source) ModelPower(i int) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.init || i < 0 || i >= len(s.devs) {
		return 0, false
	}
	return s.devs[i].powerW, true
}

// Close ends the source; later reads return telemetry.ErrStopped.
func (s *Source) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// ErrDeviceLost is a convenient error to inject with InjectError.
var ErrDeviceLost = errors.New("sim: device lost")
