//go:build cgo

package nvml

import (
	"errors"
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/telemetry/gpusettings"
)

// Settings changes the power limits and locked SM clocks of local GPUs
// through NVML: a gpusettings.Controller. Memory clocks are left alone.
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
		if mn, mx, ret := h.GetMinMaxClockOfPState(gonvml.CLOCK_SM, gonvml.PSTATE_0); ret == gonvml.SUCCESS && mx > 0 {
			d.ClocksOK = true
			d.MinClockMHz, d.MaxClockMHz = mn, mx
		}
		if mn, mx, ret := h.GetMinMaxClockOfPState(gonvml.CLOCK_MEM, gonvml.PSTATE_0); ret == gonvml.SUCCESS && mx > 0 {
			d.MemClocksOK = true
			d.MinMemClockMHz, d.MaxMemClockMHz = mn, mx
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

// SetLockedClocks locks the SM clocks.
func (s *Settings) SetLockedClocks(index int, c gpusettings.Clocks) error {
	h, err := s.handle(index)
	if err != nil {
		return err
	}
	if ret := h.SetGpuLockedClocks(c.MinMHz, c.MaxMHz); ret != gonvml.SUCCESS {
		return settingsErr(fmt.Sprintf("gpu%d: lock SM clocks", index), ret)
	}
	return nil
}

// ResetLockedClocks unlocks the SM clocks.
func (s *Settings) ResetLockedClocks(index int) error {
	h, err := s.handle(index)
	if err != nil {
		return err
	}
	if ret := h.ResetGpuLockedClocks(); ret != gonvml.SUCCESS {
		return settingsErr(fmt.Sprintf("gpu%d: reset locked clocks", index), ret)
	}
	return nil
}

// SetMemLockedClocks locks the memory clocks (Ampere and later; a GPU
// that cannot answers NOT_SUPPORTED).
func (s *Settings) SetMemLockedClocks(index int, c gpusettings.Clocks) error {
	h, err := s.handle(index)
	if err != nil {
		return err
	}
	if ret := h.SetMemoryLockedClocks(c.MinMHz, c.MaxMHz); ret != gonvml.SUCCESS {
		return settingsErr(fmt.Sprintf("gpu%d: lock memory clocks", index), ret)
	}
	return nil
}

// ResetMemLockedClocks unlocks the memory clocks.
func (s *Settings) ResetMemLockedClocks(index int) error {
	h, err := s.handle(index)
	if err != nil {
		return err
	}
	if ret := h.ResetMemoryLockedClocks(); ret != gonvml.SUCCESS {
		return settingsErr(fmt.Sprintf("gpu%d: reset locked memory clocks", index), ret)
	}
	return nil
}

// LockedClocks cannot read locked clocks back: NVML has no query for them.
func (*Settings) LockedClocks(int) (gpusettings.Clocks, bool, error) {
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
