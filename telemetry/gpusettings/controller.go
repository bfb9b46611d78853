package gpusettings

import (
	"errors"
	"fmt"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
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
// limit, the default and allowed range, and the supported clocks.
type DeviceState struct {
	Index int
	UUID  string
	Name  string
	// PowerLimitW is the limit in force now; DefaultLimitW the device's
	// default; MinLimitW..MaxLimitW the range it accepts. PowerLimitOK is
	// false when the device cannot change its limit.
	PowerLimitW, DefaultLimitW, MinLimitW, MaxLimitW float64
	PowerLimitOK                                     bool
	// Locks are the ranges the device supports of each GPULock setting
	// (record.GPUSettingsTable) by Key; a setting absent cannot be locked.
	Locks map[string]Clocks
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
	// Lock locks GPU index's range of the GPULock setting key
	// (record.GPUSettingsTable); Unlock unlocks it.
	Lock(index int, key string, c Clocks) error
	Unlock(index int, key string) error
	// Locked reads the locked range back; ok is false when the device
	// cannot report it (NVML has no such query).
	Locked(index int, key string) (c Clocks, ok bool, err error)
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
		errs = append(errs, checkLocks(req, d)...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("GPU settings refused, nothing changed:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}

// checkLocks lists the locks of req device d cannot take.
func checkLocks(req Request, d DeviceState) []string {
	var errs []string
	for _, s := range record.GPUSettingsTable() {
		c, asked := req.Locks[s.Key]
		if s.Kind != record.GPULock || !asked {
			continue
		}
		rng, ok := d.Locks[s.Key]
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("GPU %d (%s): its %s cannot be locked: %v", d.Index, d.Name, s.Name, ErrNotSupported))
		case c.MinMHz < rng.MinMHz || c.MaxMHz > rng.MaxMHz:
			errs = append(errs, fmt.Sprintf("GPU %d (%s): %s %s %s are outside its supported %s %d-%d %s",
				d.Index, d.Name, s.Short, c, s.Unit, s.Name, rng.MinMHz, rng.MaxMHz, s.Unit))
		}
	}
	return errs
}

func indexes(devs []DeviceState) string {
	s := make([]string, len(devs))
	for i, d := range devs {
		s[i] = fmt.Sprint(d.Index)
	}
	return strings.Join(s, ", ")
}
