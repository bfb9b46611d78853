package gpusettings

import (
	"errors"
	"fmt"
	"strings"
)

// Errors a Controller wraps so that the run can say what to do.
var (
	// ErrNoPermission: the driver refused the change (NVML's
	// NO_PERMISSION).
	ErrNoPermission = errors.New("no permission to change GPU settings")
	// ErrNotSupported: the GPU cannot take the setting.
	ErrNotSupported = errors.New("not supported by this GPU")
)

// HowToGrant says how to get the permission a change needs.
const HowToGrant = "changing a power limit or locked clocks needs root on Linux: run joulebench as root (e.g. sudo -E joulebench run ...), " +
	"or set the limit yourself with `sudo nvidia-smi -pl W` / `sudo nvidia-smi -lgc MIN,MAX` and run without --gpu-power-limit/--gpu-clocks"

// DeviceState is what a Controller reports of one GPU: its current power
// limit, the default and allowed range, and the supported SM clocks.
type DeviceState struct {
	Index int
	UUID  string
	Name  string
	// PowerLimitW is the limit in force now; DefaultLimitW the device's
	// default; MinLimitW..MaxLimitW the range it accepts. PowerLimitOK is
	// false when the device cannot change its limit.
	PowerLimitW, DefaultLimitW, MinLimitW, MaxLimitW float64
	PowerLimitOK                                     bool
	// MinClockMHz..MaxClockMHz are the SM clocks the device supports;
	// ClocksOK is false when it cannot lock them.
	MinClockMHz, MaxClockMHz uint32
	ClocksOK                 bool
	// MinMemClockMHz..MaxMemClockMHz are the memory clocks it supports;
	// MemClocksOK is false when it cannot lock them.
	MinMemClockMHz, MaxMemClockMHz uint32
	MemClocksOK                    bool
}

// Sample is one reading of a device's clock and clock-event reasons.
type Sample struct {
	// SMClockMHz is the SM clock; 0 when unknown.
	SMClockMHz float64
	// PowerCap is true while the software power cap holds the clock
	// down (NVML's SW_POWER_CAP clock-event reason).
	PowerCap bool
	// Other are the other active reasons (e.g. hw_thermal_slowdown).
	Other []string
	// ReasonsUnread is true when the clock-event reasons could not be
	// read: PowerCap and Other say nothing then.
	ReasonsUnread bool
}

// Controller changes and reads one machine's GPU settings. Indexes are the
// driver's GPU indexes.
type Controller interface {
	// Name names the controller in run.json and the journal ("nvml",
	// "sim").
	Name() string
	// Volatile reports whether the settings vanish with this process (the
	// simulator's GPUs): then no journal is written.
	Volatile() bool
	// Devices reports every GPU's state.
	Devices() ([]DeviceState, error)
	// SetPowerLimit sets GPU index's power limit; PowerLimit reads it back.
	SetPowerLimit(index int, w float64) error
	PowerLimit(index int) (float64, error)
	// SetLockedClocks locks GPU index's SM clocks; ResetLockedClocks
	// unlocks them.
	SetLockedClocks(index int, c Clocks) error
	ResetLockedClocks(index int) error
	// SetMemLockedClocks locks GPU index's memory clocks;
	// ResetMemLockedClocks unlocks them. They cannot be read back.
	SetMemLockedClocks(index int, c Clocks) error
	ResetMemLockedClocks(index int) error
	// LockedClocks reads the locked clocks back; ok is false when the
	// device cannot report them (NVML has no such query).
	LockedClocks(index int) (c Clocks, ok bool, err error)
	// Sample reads GPU index's SM clock and clock-event reasons.
	Sample(index int) (Sample, error)
	// Close releases the controller.
	Close() error
}

// Check refuses a request that some device cannot take, before anything
// is changed: a GPU index not present, a limit outside a device's allowed
// range, clocks outside its supported clocks, a device that cannot change
// the setting. Every problem is listed.
func Check(req Request, devs []DeviceState) error {
	if req.Empty() {
		return nil
	}
	if len(devs) == 0 {
		return errors.New("no GPU to apply the settings to")
	}
	byIndex := map[int]DeviceState{}
	for _, d := range devs {
		byIndex[d.Index] = d
	}
	var errs []string
	for i := range req.PerGPU {
		if _, ok := byIndex[i]; !ok {
			errs = append(errs, fmt.Sprintf("--gpu-power-limit: no GPU %d (GPUs present: %s)", i, indexes(devs)))
		}
	}
	for _, d := range devs {
		if w, ok := req.limitFor(d.Index); ok {
			switch {
			case !d.PowerLimitOK:
				errs = append(errs, fmt.Sprintf("GPU %d (%s): its power limit cannot be changed: %v", d.Index, d.Name, ErrNotSupported))
			case w < d.MinLimitW || w > d.MaxLimitW:
				errs = append(errs, fmt.Sprintf("GPU %d (%s): power limit %s W is outside its allowed range %s-%s W (default %s W)",
					d.Index, d.Name, formatW(w), formatW(d.MinLimitW), formatW(d.MaxLimitW), formatW(d.DefaultLimitW)))
			}
		}
		if c := req.Clocks; c != nil {
			switch {
			case !d.ClocksOK:
				errs = append(errs, fmt.Sprintf("GPU %d (%s): its SM clocks cannot be locked: %v", d.Index, d.Name, ErrNotSupported))
			case c.MinMHz < d.MinClockMHz || c.MaxMHz > d.MaxClockMHz:
				errs = append(errs, fmt.Sprintf("GPU %d (%s): clocks %s MHz are outside its supported SM clocks %d-%d MHz",
					d.Index, d.Name, c, d.MinClockMHz, d.MaxClockMHz))
			}
		}
		if c := req.MemClocks; c != nil {
			switch {
			case !d.MemClocksOK:
				errs = append(errs, fmt.Sprintf("GPU %d (%s): its memory clocks cannot be locked: %v", d.Index, d.Name, ErrNotSupported))
			case c.MinMHz < d.MinMemClockMHz || c.MaxMHz > d.MaxMemClockMHz:
				errs = append(errs, fmt.Sprintf("GPU %d (%s): memory clocks %s MHz are outside its supported memory clocks %d-%d MHz",
					d.Index, d.Name, c, d.MinMemClockMHz, d.MaxMemClockMHz))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("GPU settings refused, nothing changed:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}

func indexes(devs []DeviceState) string {
	s := make([]string, len(devs))
	for i, d := range devs {
		s[i] = fmt.Sprint(d.Index)
	}
	return strings.Join(s, ", ")
}
