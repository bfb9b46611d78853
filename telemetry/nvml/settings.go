//go:build cgo

package nvml

import (
	"errors"
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/telemetry/gpusettings"
)

// Settings changes the power limits and locked clocks of local GPUs
// through NVML: a gpusettings.Controller.
type Settings struct {
	lib gonvml.Interface
}

var _ gpusettings.Controller = (*Settings)(nil)

// OpenSettings initialises the system NVML library for GPU settings.
func OpenSettings() (gpusettings.Controller, error) { return NewSettings(gonvml.New()) }

// NewSettings initialises lib; if Init fails nothing else is called on it.
func NewSettings(lib gonvml.Interface) (*Settings, error) {
	if lib == nil {
		return nil, errors.New("nvml: no library")
	}
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		return nil, initError(ret)
	}
	return &Settings{lib: lib}, nil
}

// Name returns "nvml".
func (*Settings) Name() string { return Name }

// Volatile is false: a GPU keeps its settings after the process ends.
func (*Settings) Volatile() bool { return false }

// Close shuts NVML down.
func (s *Settings) Close() error {
	if ret := s.lib.Shutdown(); ret != gonvml.SUCCESS {
		return fmt.Errorf("nvml: shutdown: %s", retName(ret))
	}
	return nil
}

// settingsErr turns an NVML return into an error that wraps
// gpusettings.ErrNoPermission or ErrNotSupported where it means that.
func settingsErr(what string, ret gonvml.Return) error {
	switch ret {
	case gonvml.ERROR_NO_PERMISSION:
		return fmt.Errorf("nvml: %s: %w (%s)", what, gpusettings.ErrNoPermission, retName(ret))
	case gonvml.ERROR_NOT_SUPPORTED:
		return fmt.Errorf("nvml: %s: %w (%s)", what, gpusettings.ErrNotSupported, retName(ret))
	}
	return fmt.Errorf("nvml: %s: %s", what, retName(ret))
}

func (s *Settings) handle(index int) (gonvml.Device, error) {
	h, ret := s.lib.DeviceGetHandleByIndex(index)
	if ret != gonvml.SUCCESS {
		return nil, settingsErr(fmt.Sprintf("gpu%d: get handle", index), ret)
	}
	return h, nil
}

// Devices reads every GPU's power limit, default, allowed range and the
// SM clocks of its P0 state (go-nvml v0.12.9-0 cannot list the supported
// clocks, so the range stands for them; NVML rounds a locked clock to a
// supported one).
func (s *Settings) Devices() ([]gpusettings.DeviceState, error) {
	n, ret := s.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return nil, settingsErr("count devices", ret)
	}
	out := make([]gpusettings.DeviceState, 0, n)
	for i := range n {
		h, err := s.handle(i)
		if err != nil {
			return nil, err
		}
		d := gpusettings.DeviceState{Index: i}
		d.UUID, _ = h.GetUUID()
		d.Name, _ = h.GetName()
		cur, r1 := h.GetPowerManagementLimit()
		def, r2 := h.GetPowerManagementDefaultLimit()
		lo, hi, r3 := h.GetPowerManagementLimitConstraints()
		if r1 == gonvml.SUCCESS && r2 == gonvml.SUCCESS && r3 == gonvml.SUCCESS {
			d.PowerLimitOK = true
			d.PowerLimitW, d.DefaultLimitW = float64(cur)/1000, float64(def)/1000
			d.MinLimitW, d.MaxLimitW = float64(lo)/1000, float64(hi)/1000
		}
		for _, st := range record.GPUSettingsTable() {
			op, ok := lockOf(st.Key)
			if !ok {
				continue
			}
			if mn, mx, ret := h.GetMinMaxClockOfPState(op.clock, gonvml.PSTATE_0); ret == gonvml.SUCCESS && mx > 0 {
				if d.Locks == nil {
					d.Locks = map[string]gpusettings.Clocks{}
				}
				d.Locks[st.Key] = gpusettings.Clocks{MinMHz: mn, MaxMHz: mx}
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// SetPowerLimit sets the limit (NVML takes milliwatts).
func (s *Settings) SetPowerLimit(index int, w float64) error {
	h, err := s.handle(index)
	if err != nil {
		return err
	}
	if ret := h.SetPowerManagementLimit(uint32(w*1000 + 0.5)); ret != gonvml.SUCCESS {
		return settingsErr(fmt.Sprintf("gpu%d: set power limit", index), ret)
	}
	return nil
}

// PowerLimit reads the limit back.
func (s *Settings) PowerLimit(index int) (float64, error) {
	h, err := s.handle(index)
	if err != nil {
		return 0, err
	}
	mw, ret := h.GetPowerManagementLimit()
	if ret != gonvml.SUCCESS {
		return 0, settingsErr(fmt.Sprintf("gpu%d: read power limit", index), ret)
	}
	return float64(mw) / 1000, nil
}

// lockOp is how NVML locks and unlocks one GPULock setting of
// record.GPUSettingsTable: the clock it ranges over and its calls.
type lockOp struct {
	clock  gonvml.ClockType
	what   string // "SM clocks"
	set    func(h gonvml.Device, lo, hi uint32) gonvml.Return
	unlock func(h gonvml.Device) gonvml.Return
	// unlockWhat names the unlock in an error ("reset locked clocks").
	unlockWhat string
}

// lockOf is the NVML device code of the lock setting key (ok false: NVML
// cannot lock it).
func lockOf(key string) (lockOp, bool) {
	switch key {
	case "clocks":
		return lockOp{clock: gonvml.CLOCK_SM, what: "lock SM clocks", unlockWhat: "reset locked clocks",
			set:    func(h gonvml.Device, lo, hi uint32) gonvml.Return { return h.SetGpuLockedClocks(lo, hi) },
			unlock: func(h gonvml.Device) gonvml.Return { return h.ResetGpuLockedClocks() }}, true
	case "mem_clocks":
		// Ampere and later; a GPU that cannot answers NOT_SUPPORTED.
		return lockOp{clock: gonvml.CLOCK_MEM, what: "lock memory clocks", unlockWhat: "reset locked memory clocks",
			set:    func(h gonvml.Device, lo, hi uint32) gonvml.Return { return h.SetMemoryLockedClocks(lo, hi) },
			unlock: func(h gonvml.Device) gonvml.Return { return h.ResetMemoryLockedClocks() }}, true
	}
	return lockOp{}, false
}

// Lock locks the range of the lock setting key.
func (s *Settings) Lock(index int, key string, c gpusettings.Clocks) error {
	op, ok := lockOf(key)
	if !ok {
		return fmt.Errorf("nvml: gpu%d: %s: %w", index, key, gpusettings.ErrNotSupported)
	}
	h, err := s.handle(index)
	if err != nil {
		return err
	}
	if ret := op.set(h, c.MinMHz, c.MaxMHz); ret != gonvml.SUCCESS {
		return settingsErr(fmt.Sprintf("gpu%d: %s", index, op.what), ret)
	}
	return nil
}

// Unlock unlocks the range of the lock setting key.
func (s *Settings) Unlock(index int, key string) error {
	op, ok := lockOf(key)
	if !ok {
		return fmt.Errorf("nvml: gpu%d: %s: %w", index, key, gpusettings.ErrNotSupported)
	}
	h, err := s.handle(index)
	if err != nil {
		return err
	}
	if ret := op.unlock(h); ret != gonvml.SUCCESS {
		return settingsErr(fmt.Sprintf("gpu%d: %s", index, op.unlockWhat), ret)
	}
	return nil
}

// Locked cannot read locked clocks back: NVML has no query for them.
func (*Settings) Locked(int, string) (gpusettings.Clocks, bool, error) {
	return gpusettings.Clocks{}, false, nil
}

// swPowerCap is NVML's nvmlClocksEventReasonSwPowerCap.
const swPowerCap = 0x4

// Sample reads the SM clock and the clock-event reasons.
func (s *Settings) Sample(index int) (gpusettings.Sample, error) {
	h, err := s.handle(index)
	if err != nil {
		return gpusettings.Sample{}, err
	}
	var out gpusettings.Sample
	if mhz, ret := h.GetClockInfo(gonvml.CLOCK_SM); ret == gonvml.SUCCESS {
		out.SMClockMHz = float64(mhz)
	}
	bits, ret := h.GetCurrentClocksEventReasons()
	if ret != gonvml.SUCCESS {
		out.ReasonsUnread = true
		return out, nil
	}
	out.PowerCap = bits&swPowerCap != 0
	out.Other = append(out.Other, telemetry.ClockEventCauses(bits&^swPowerCap)...)
	return out, nil
}
