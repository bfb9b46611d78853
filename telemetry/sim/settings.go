package sim

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/joulebench/joulebench/telemetry/gpusettings"
)

// The model of a power limit and locked SM clocks on the simulated GPUs
// (docs/methodology.md, "GPU settings on the simulator", gives each
// constant's source).
//
// Device i runs at clock ratio r = f/MaxClockMHz. Its power above idle at
// ratio r is the power above idle at full clock times r^PowerExponent
// (dynamic power ~ f·V², with V rising about linearly with f across the
// DVFS range). Locked clocks hold r at most lock.Max/MaxClockMHz; a power
// limit L lowers r further, to ((L - IdleW)/above)^(1/PowerExponent), when
// the demand at that clock would exceed L: the clock falls only when
// demand exceeds the cap, and a small decode batch below the cap runs at
// full clock. A scheduler step's decode time scales by
// DecodeMemoryBound + (1 - DecodeMemoryBound)/r (memory-bound: slows less
// than the clock) and its prefill time by PrefillMemoryBound +
// (1 - PrefillMemoryBound)/r (compute-bound: slows about as the clock).
const (
	// MaxClockMHz is the simulated GPU's highest SM clock (an H100/H200
	// SXM's maximum boost clock).
	MaxClockMHz = 1980
	// MinClockMHz is its lowest supported SM clock; IdleClockMHz its clock
	// with no work.
	MinClockMHz  = 210
	IdleClockMHz = 345
	// PowerExponent: power above idle ~ r^3 (f·V², V ~ f).
	PowerExponent = 3.0
	// DecodeMemoryBound is the share of a decode step's time that does
	// not scale with the SM clock.
	DecodeMemoryBound = 0.9
	// PrefillMemoryBound is that share for prefill.
	PrefillMemoryBound = 0.0
	// MinLimitW is the lowest power limit the simulated GPU accepts; its
	// default and highest is Config.MaxW.
	MinLimitW = 100.0
)

// GPUSettings is the power limits and locked clocks of the simulated GPUs:
// a gpusettings.Controller whose settings the simulated power (Source)
// and the simulated engine's speed (Slowdown) follow. Its settings live in
// this process only (Volatile). Safe for concurrent use.
type GPUSettings struct {
	cfg Config

	mu     sync.Mutex
	limitW []float64
	lock   []gpusettings.Clocks // zero: not locked
	last   []gpusettings.Sample
}

var _ gpusettings.Controller = (*GPUSettings)(nil)

// NewGPUSettings returns the settings of cfg's GPUs at their defaults: the
// power limit MaxW, clocks not locked.
func NewGPUSettings(cfg Config) *GPUSettings {
	if cfg.Devices <= 0 {
		cfg.Devices = 1
	}
	g := &GPUSettings{cfg: cfg, limitW: make([]float64, cfg.Devices), lock: make([]gpusettings.Clocks, cfg.Devices), last: make([]gpusettings.Sample, cfg.Devices)}
	for i := range g.limitW {
		g.limitW[i] = cfg.MaxW
		_, _, idle, _ := cfg.clocks()
		g.last[i] = gpusettings.Sample{SMClockMHz: idle}
	}
	return g
}

// observe keeps GPU i's clock and the cap's state as the hardware model
// ran its last step (busy), else the idle clock.
func (g *GPUSettings) observe(i int, clockMHz float64, capped, busy bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if i < 0 || i >= len(g.last) {
		return
	}
	_, _, idle, _ := g.cfg.clocks()
	if !busy || clockMHz <= 0 {
		g.last[i] = gpusettings.Sample{SMClockMHz: idle}
		return
	}
	g.last[i] = gpusettings.Sample{SMClockMHz: clockMHz, PowerCap: capped}
}

// HWLimits are what the hardware model runs a step under: the lowest
// locked maximum clock of the group (0: none locked) and its lowest power
// limit. The slowest GPU of a tensor-parallel group sets the pace.
func (g *GPUSettings) HWLimits() (lockMaxMHz, limitW float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range g.limitW {
		if m := float64(g.lock[i].MaxMHz); m > 0 && (lockMaxMHz == 0 || m < lockMaxMHz) {
			lockMaxMHz = m
		}
		if limitW == 0 || g.limitW[i] < limitW {
			limitW = g.limitW[i]
		}
	}
	return lockMaxMHz, limitW
}

// Name returns "sim".
func (*GPUSettings) Name() string { return Name }

// Volatile is true: the simulated GPUs end with the process.
func (*GPUSettings) Volatile() bool { return true }

// Close does nothing.
func (*GPUSettings) Close() error { return nil }

var errNoDevice = errors.New("sim: no such GPU")

func (g *GPUSettings) check(i int) error {
	if i < 0 || i >= len(g.limitW) {
		return fmt.Errorf("%w: %d", errNoDevice, i)
	}
	return nil
}

// Devices reports each GPU's limit (default MaxW, range MinLimitW..MaxW)
// and its SM clocks (MinClockMHz..MaxClockMHz).
func (g *GPUSettings) Devices() ([]gpusettings.DeviceState, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	maxMHz, minMHz, _, minLimitW := g.cfg.clocks()
	out := make([]gpusettings.DeviceState, len(g.limitW))
	for i := range out {
		out[i] = gpusettings.DeviceState{Index: i, UUID: simUUID(g.cfg.Seed, i), Name: g.cfg.deviceName(),
			PowerLimitW: g.limitW[i], DefaultLimitW: g.cfg.MaxW, MinLimitW: minLimitW, MaxLimitW: g.cfg.MaxW, PowerLimitOK: true,
			Locks: map[string]gpusettings.Clocks{smClocks: {MinMHz: uint32(minMHz), MaxMHz: uint32(maxMHz)}}}
	}
	return out, nil
}

func simUUID(seed int64, i int) string { return fmt.Sprintf("GPU-SIM-%08x-%04d", uint32(seed), i) }

// SetPowerLimit sets GPU i's limit.
func (g *GPUSettings) SetPowerLimit(i int, w float64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.check(i); err != nil {
		return err
	}
	if _, _, _, lo := g.cfg.clocks(); w < lo || w > g.cfg.MaxW {
		return fmt.Errorf("sim: GPU %d: power limit %g W outside %g-%g W", i, w, lo, g.cfg.MaxW)
	}
	g.limitW[i] = w
	return nil
}

// PowerLimit reads GPU i's limit.
func (g *GPUSettings) PowerLimit(i int) (float64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.check(i); err != nil {
		return 0, err
	}
	return g.limitW[i], nil
}

// smClocks is the one lock setting of record.GPUSettingsTable the
// simulator models (the SM clocks): Devices offers no other lock, so a
// request of another is refused before anything changes.
const smClocks = "clocks"

// Lock locks GPU i's SM clocks (another lock is not supported).
func (g *GPUSettings) Lock(i int, key string, c gpusettings.Clocks) error {
	if key != smClocks {
		return fmt.Errorf("sim: GPU %d: %s: %w", i, key, gpusettings.ErrNotSupported)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.check(i); err != nil {
		return err
	}
	g.lock[i] = c
	return nil
}

// Unlock unlocks GPU i's SM clocks (another lock was never locked).
func (g *GPUSettings) Unlock(i int, key string) error {
	if key != smClocks {
		return nil
	}
	return g.Lock(i, key, gpusettings.Clocks{})
}

// Locked reads GPU i's locked clocks back.
func (g *GPUSettings) Locked(i int, key string) (gpusettings.Clocks, bool, error) {
	if key != smClocks {
		return gpusettings.Clocks{}, false, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.check(i); err != nil {
		return gpusettings.Clocks{}, false, err
	}
	return g.lock[i], true, nil
}

// Sample is GPU i's clock and reasons at the last Read of the source.
func (g *GPUSettings) Sample(i int) (gpusettings.Sample, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.check(i); err != nil {
		return gpusettings.Sample{}, err
	}
	return g.last[i], nil
}

// LimitW is GPU i's power limit (0 when out of range).
func (g *GPUSettings) LimitW(i int) float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if i < 0 || i >= len(g.limitW) {
		return 0
	}
	return g.limitW[i]
}

// ratioLocked is GPU i's clock ratio and whether the power limit holds it
// down, for aboveW watts above idle at full clock. g.mu is held.
func (g *GPUSettings) ratioLocked(i int, aboveW float64) (r float64, capped bool) {
	r = 1
	if m := g.lock[i].MaxMHz; m > 0 {
		r = math.Min(1, float64(m)/MaxClockMHz)
	}
	avail := g.limitW[i] - g.cfg.IdleW
	if aboveW > 0 && aboveW*math.Pow(r, PowerExponent) > avail {
		r = math.Pow(math.Max(avail, 0)/aboveW, 1/PowerExponent)
		capped = true
	}
	return math.Max(r, float64(MinClockMHz)/MaxClockMHz), capped
}

// operate is what GPU i does for aboveW watts above idle at full clock:
// the power above idle it draws, and its clock ratio. busy says whether it
// has work (its clock is then the ratio's, else the idle clock); the
// clock and the cap's state are kept for Sample.
func (g *GPUSettings) operate(i int, aboveW float64, busy bool) (drawW, r float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if i < 0 || i >= len(g.limitW) {
		return aboveW, 1 // a device the settings do not know runs at its defaults
	}
	r, capped := g.ratioLocked(i, aboveW)
	drawW = math.Min(aboveW*math.Pow(r, PowerExponent), math.Max(g.limitW[i]-g.cfg.IdleW, 0))
	clock := float64(IdleClockMHz)
	if lo := g.lock[i].MinMHz; lo > 0 {
		clock = math.Max(clock, math.Min(float64(lo), r*MaxClockMHz))
	}
	if busy {
		clock = r * MaxClockMHz
	}
	g.last[i] = gpusettings.Sample{SMClockMHz: clock, PowerCap: capped && busy}
	return drawW, r
}

// Slowdown is how much longer the simulated engine's decode and prefill
// take under the settings, for a step with decoding and prefilling
// sequences of slots: the slowest GPU of the group sets the pace (1, 1
// at the defaults).
func (g *GPUSettings) Slowdown(decoding, prefilling, slots int) (decode, prefill float64) {
	c := g.cfg
	above := c.ReadyExtraW + (c.MaxW-c.IdleW-c.ReadyExtraW)*activityFrac(c, decoding, prefilling, slots)
	g.mu.Lock()
	r := 1.0
	for i := range g.limitW {
		ri, _ := g.ratioLocked(i, above*deviceScale(c, i))
		r = math.Min(r, ri)
	}
	g.mu.Unlock()
	return DecodeMemoryBound + (1-DecodeMemoryBound)/r, PrefillMemoryBound + (1-PrefillMemoryBound)/r
}

// activityFrac is the share of full batch the engine's activity is.
func activityFrac(c Config, running, prefilling, slots int) float64 {
	if slots <= 0 {
		return 0
	}
	f := (float64(running) + c.PrefillWeight*float64(prefilling)) / float64(slots)
	return math.Max(0, math.Min(1, f))
}

// deviceScale is device i's share of the power above idle.
func deviceScale(c Config, i int) float64 { return math.Max(0, 1-c.DeviceSkew*float64(i)) }
