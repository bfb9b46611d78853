//go:build cgo

package nvml

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// Source reads local NVIDIA GPUs through NVML.
type Source struct {
	lib   gonvml.Interface
	clock telemetry.Clock
	logf  func(string)
	inv   Inventory
	devs  []*device

	// mu serialises Read and Close and guards the per-device state.
	mu        sync.Mutex
	closed    bool
	anomalies []telemetry.Anomaly
	throttle  telemetry.ThrottleLog
}

var (
	_ telemetry.Source           = (*Source)(nil)
	_ telemetry.ThrottleReporter = (*Source)(nil)
	_ telemetry.AnomalyReporter  = (*Source)(nil)
	_ telemetry.DriverReporter   = (*Source)(nil)
)

// clock-event API in use for a device.
const (
	eventsNone = iota
	eventsCurrent
	eventsLegacy // GetCurrentClocksThrottleReasons, drivers before 535
)

type device struct {
	info    DeviceInfo
	h       gonvml.Device
	counter bool
	field   bool                 // power from NVML_FI_DEV_POWER_INSTANT
	fv      [1]gonvml.FieldValue // reused buffer
	mem     bool
	sm      bool
	events  int

	lastMJ uint64
	haveMJ bool
}

// Open initialises the system NVML library (libnvidia-ml.so.1) and selects
// devices. Errors that mean "no NVML here" wrap ErrUnavailable.
func Open(opts Options) (*Source, error) {
	return New(gonvml.New(), opts)
}

// New initialises lib and probes the selected devices: identity, energy
// counter, power field, memory, SM clock and clock-event reasons. If Init
// fails nothing else is called on lib. On any later error lib is shut down.
func New(lib gonvml.Interface, opts Options) (*Source, error) {
	if lib == nil {
		return nil, errors.New("nvml: no library")
	}
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		return nil, initError(ret)
	}
	s := &Source{lib: lib, clock: opts.Clock, logf: opts.Logf}
	if s.clock == nil {
		s.clock = telemetry.WallClock
	}
	if err := s.probe(opts.GPUs); err != nil {
		_ = lib.Shutdown()
		return nil, err
	}
	return s, nil
}

func (s *Source) probe(selected []string) error {
	lib := s.lib
	if v, ret := lib.SystemGetDriverVersion(); ret == gonvml.SUCCESS {
		s.inv.Driver = v
	}
	if v, ret := lib.SystemGetNVMLVersion(); ret == gonvml.SUCCESS {
		s.inv.NVML = v
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == gonvml.SUCCESS && v > 0 {
		s.inv.CUDA = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	}
	n, ret := lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return fmt.Errorf("nvml: count devices: %s", retName(ret))
	}
	if n == 0 {
		return fmt.Errorf("nvml: %w: the driver (%s) sees no GPU; %s", ErrUnavailable, orUnknown(s.inv.Driver), alternatives)
	}
	var handles []gonvml.Device
	if len(selected) == 0 {
		for i := range n {
			h, ret := lib.DeviceGetHandleByIndex(i)
			if ret != gonvml.SUCCESS {
				return fmt.Errorf("nvml: gpu%d: get handle: %s", i, retName(ret))
			}
			handles = append(handles, h)
		}
	} else {
		for _, sel := range selected {
			var h gonvml.Device
			var ret gonvml.Return
			if i, err := strconv.Atoi(sel); err == nil {
				if i >= n {
					return fmt.Errorf("nvml: --gpus: no GPU %d (this machine has %d: 0..%d)", i, n, n-1)
				}
				h, ret = lib.DeviceGetHandleByIndex(i)
			} else {
				h, ret = lib.DeviceGetHandleByUUID(sel)
			}
			if ret != gonvml.SUCCESS {
				return fmt.Errorf("nvml: --gpus: GPU %s: %s", sel, retName(ret))
			}
			handles = append(handles, h)
		}
	}
	seen := map[int]bool{}
	for k, h := range handles {
		d, err := probeDevice(h, k)
		if err != nil {
			return err
		}
		if seen[d.info.Index] {
			return fmt.Errorf("nvml: --gpus: GPU %d selected twice (by index and UUID)", d.info.Index)
		}
		seen[d.info.Index] = true
		s.devs = append(s.devs, d)
		s.inv.Devices = append(s.inv.Devices, d.info)
	}
	return nil
}

// probeDevice reads a device's identity and finds out what it can measure.
// pos is its position in the selection (used when the index is unknown).
func probeDevice(h gonvml.Device, pos int) (*device, error) {
	d := &device{h: h}
	idx, ret := h.GetIndex()
	if ret != gonvml.SUCCESS {
		idx = pos
	}
	d.info = DeviceInfo{Index: idx, ID: deviceID(idx), MemTotalBytes: -1, Architecture: "unknown"}
	where := d.info.ID
	if d.info.Name, ret = h.GetName(); ret != gonvml.SUCCESS {
		if lost(ret) {
			return nil, fmt.Errorf("nvml %s: name: %s", where, retName(ret))
		}
		d.info.Name = "NVIDIA GPU"
	}
	if d.info.UUID, ret = h.GetUUID(); ret != gonvml.SUCCESS {
		return nil, fmt.Errorf("nvml %s: uuid: %s", where, retName(ret))
	}
	if a, ret := h.GetArchitecture(); ret == gonvml.SUCCESS {
		d.info.Architecture = archName(a)
	}
	if m, ret := h.GetMemoryInfo(); ret == gonvml.SUCCESS {
		d.mem = true
		d.info.Memory = true
		d.info.MemTotalBytes = clampInt64(m.Total)
	}

	// Energy counter (Volta and newer).
	switch _, ret := h.GetTotalEnergyConsumption(); {
	case ret == gonvml.SUCCESS:
		d.counter = true
		d.info.Method = MethodCounter
	case lost(ret):
		return nil, fmt.Errorf("nvml %s: energy counter: %s", where, retName(ret))
	default:
		d.info.Method = MethodPower
		d.info.EnergyNote = "no energy counter (" + retName(ret) + "; needs Volta or newer): energy is integrated from power samples"
	}

	// Power: the instantaneous field, else GetPowerUsage.
	d.fv[0] = gonvml.FieldValue{FieldId: gonvml.FI_DEV_POWER_INSTANT}
	if ret := h.GetFieldValues(d.fv[:]); ret == gonvml.SUCCESS && gonvml.Return(d.fv[0].NvmlReturn) == gonvml.SUCCESS {
		if _, ok := fieldFloat(&d.fv[0]); ok {
			d.field = true
			d.info.PowerField = PowerFieldInstant
		}
	}
	if !d.field {
		switch _, ret := h.GetPowerUsage(); {
		case ret == gonvml.SUCCESS:
			d.info.PowerField = PowerFieldUsage
		default:
			return nil, fmt.Errorf("nvml %s (%s): no power reading: %s (instant field and GetPowerUsage both unavailable)", where, d.info.Name, retName(ret))
		}
	}

	// The enforced power limit (mW), which bounds a plausible reading.
	switch mw, ret := h.GetEnforcedPowerLimit(); {
	case ret == gonvml.SUCCESS:
		d.info.PowerLimitW = float64(mw) / 1000
	case lost(ret):
		return nil, fmt.Errorf("nvml %s: power limit: %s", where, retName(ret))
	}

	if _, ret := h.GetClockInfo(gonvml.CLOCK_SM); ret == gonvml.SUCCESS {
		d.sm = true
		d.info.SMClock = true
	}
	switch _, ret := h.GetCurrentClocksEventReasons(); {
	case ret == gonvml.SUCCESS:
		d.events = eventsCurrent
	case ret == gonvml.ERROR_FUNCTION_NOT_FOUND:
		if _, ret := h.GetCurrentClocksThrottleReasons(); ret == gonvml.SUCCESS {
			d.events = eventsLegacy
		}
	}
	d.info.ClockEvents = d.events != eventsNone
	return d, nil
}

// Name returns "nvml".
func (s *Source) Name() string { return Name }

// Inventory returns the versions and the selected devices.
func (s *Source) Inventory() Inventory {
	inv := s.inv
	inv.Devices = append([]DeviceInfo(nil), s.inv.Devices...)
	return inv
}

// Driver returns the NVIDIA driver version.
func (s *Source) Driver() string { return s.inv.Driver }

// Devices lists the selected GPUs with the energy method and power field of
// each.
func (s *Source) Devices(context.Context) ([]record.Device, error) {
	out := make([]record.Device, len(s.devs))
	for i, d := range s.devs {
		out[i] = record.Device{
			ID:          d.info.ID,
			Name:        d.info.Name,
			UUID:        d.info.UUID,
			Method:      d.info.Method,
			PowerField:  d.info.PowerField,
			PowerLimitW: d.info.PowerLimitW,
		}
	}
	return out, nil
}

// Read returns one reading per device: energy counter (when the device has
// one), power, memory in use. It also reads the SM clock and clock-event
// reasons for Throttled. An NVML error on energy or power, or a lost GPU on
// any call, is returned (the sampler then ends the run).
func (s *Source) Read(ctx context.Context) ([]telemetry.Reading, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, telemetry.ErrStopped
	}
	out := make([]telemetry.Reading, len(s.devs))
	for i, d := range s.devs {
		r := telemetry.Reading{Device: d.info.ID, MemUsedBytes: -1}
		if d.counter {
			mj, ret := d.h.GetTotalEnergyConsumption()
			if ret != gonvml.SUCCESS {
				return nil, d.readErr("energy counter", ret)
			}
			if d.haveMJ && mj < d.lastMJ {
				s.counterReset(d, mj)
			}
			d.lastMJ, d.haveMJ = mj, true
			r.EnergyJ, r.HasEnergy = float64(mj)/1000, true
		}
		w, err := d.power()
		if err != nil {
			return nil, err
		}
		r.PowerW = w
		if d.mem {
			m, ret := d.h.GetMemoryInfo()
			switch {
			case ret == gonvml.SUCCESS:
				r.MemUsedBytes = clampInt64(m.Used)
			case lost(ret):
				return nil, d.readErr("memory", ret)
			}
		}
		if d.events != eventsNone {
			if err := s.readEvents(d); err != nil {
				return nil, err
			}
		}
		out[i] = r
	}
	return out, nil
}

// power reads the device's power in W from its power field.
func (d *device) power() (float64, error) {
	if d.field {
		d.fv[0] = gonvml.FieldValue{FieldId: gonvml.FI_DEV_POWER_INSTANT}
		ret := d.h.GetFieldValues(d.fv[:])
		if ret == gonvml.SUCCESS {
			ret = gonvml.Return(d.fv[0].NvmlReturn)
		}
		if ret != gonvml.SUCCESS {
			return 0, d.readErr("power ("+PowerFieldInstant+")", ret)
		}
		mw, ok := fieldFloat(&d.fv[0])
		if !ok || mw < 0 || math.IsNaN(mw) || math.IsInf(mw, 0) {
			return 0, fmt.Errorf("nvml %s (%s): power (%s): unusable value (type %d)", d.info.ID, d.info.UUID, PowerFieldInstant, d.fv[0].ValueType)
		}
		return mw / 1000, nil
	}
	mw, ret := d.h.GetPowerUsage()
	if ret != gonvml.SUCCESS {
		return 0, d.readErr("power ("+PowerFieldUsage+")", ret)
	}
	return float64(mw) / 1000, nil
}

// readEvents reads the SM clock and the clock-event reasons and records the
// throttling causes.
func (s *Source) readEvents(d *device) error {
	var bits uint64
	var ret gonvml.Return
	if d.events == eventsCurrent {
		bits, ret = d.h.GetCurrentClocksEventReasons()
	} else {
		bits, ret = d.h.GetCurrentClocksThrottleReasons()
	}
	if ret != gonvml.SUCCESS {
		if lost(ret) {
			return d.readErr("clock-event reasons", ret)
		}
		return nil
	}
	causes := telemetry.ClockEventCauses(bits)
	if len(causes) == 0 {
		return nil
	}
	mhz := 0.0
	if d.sm {
		c, ret := d.h.GetClockInfo(gonvml.CLOCK_SM)
		switch {
		case ret == gonvml.SUCCESS:
			mhz = float64(c)
		case lost(ret):
			return d.readErr("SM clock", ret)
		}
	}
	s.throttle.Observe(d.info.ID, causes, mhz)
	return nil
}

func (s *Source) counterReset(d *device, mj uint64) {
	a := telemetry.Anomaly{
		T:      s.clock(),
		Device: d.info.ID,
		Kind:   telemetry.AnomalyCounterReset,
		Detail: fmt.Sprintf("energy counter of %s (%s) went from %d mJ to %d mJ (driver reload, GPU reset or wrap): kept raw in power.csv, the analysis counts it as a reset", d.info.ID, d.info.UUID, d.lastMJ, mj),
	}
	s.anomalies = append(s.anomalies, a)
	if s.logf != nil {
		s.logf(a.Detail)
	}
}

func (d *device) readErr(what string, ret gonvml.Return) error {
	return &readError{dev: d.info.ID, uuid: d.info.UUID, what: what, ret: ret}
}

// readError is an NVML error while sampling. It unwraps to the
// nvml.Return, so errors.Is(err, nvml.ERROR_GPU_IS_LOST) works.
type readError struct {
	dev, uuid, what string
	ret             gonvml.Return
}

func (e *readError) Error() string {
	msg := fmt.Sprintf("nvml %s (%s): %s: %s", e.dev, e.uuid, e.what, retName(e.ret))
	if lost(e.ret) {
		msg += " (GPU lost or driver gone)"
	}
	return msg
}

func (e *readError) Unwrap() error { return e.ret }

// Throttled reports the devices whose clocks were slowed (power cap,
// thermal, power brake, board limit, reliability) since the previous call.
func (s *Source) Throttled() (bool, string) { return s.throttle.Report() }

// Anomalies returns the counter resets seen so far.
func (s *Source) Anomalies() []telemetry.Anomaly {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]telemetry.Anomaly(nil), s.anomalies...)
}

// Close shuts NVML down; later reads return telemetry.ErrStopped.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if ret := s.lib.Shutdown(); ret != gonvml.SUCCESS {
		return fmt.Errorf("nvml: shutdown: %s", retName(ret))
	}
	return nil
}

// fieldFloat decodes an NVML field value (a C union in host byte order).
func fieldFloat(fv *gonvml.FieldValue) (float64, bool) {
	v := fv.Value[:]
	switch gonvml.ValueType(fv.ValueType) {
	case gonvml.VALUE_TYPE_DOUBLE:
		return math.Float64frombits(binary.NativeEndian.Uint64(v)), true
	case gonvml.VALUE_TYPE_UNSIGNED_INT:
		return float64(binary.NativeEndian.Uint32(v)), true
	case gonvml.VALUE_TYPE_UNSIGNED_LONG, gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return float64(binary.NativeEndian.Uint64(v)), true
	case gonvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return float64(int64(binary.NativeEndian.Uint64(v))), true
	case gonvml.VALUE_TYPE_SIGNED_INT:
		return float64(int32(binary.NativeEndian.Uint32(v))), true
	case gonvml.VALUE_TYPE_UNSIGNED_SHORT:
		return float64(binary.NativeEndian.Uint16(v)), true
	}
	return 0, false
}

// lost reports NVML returns after which the device cannot be read again.
func lost(ret gonvml.Return) bool {
	switch ret {
	case gonvml.ERROR_GPU_IS_LOST, gonvml.ERROR_UNINITIALIZED, gonvml.ERROR_DRIVER_NOT_LOADED,
		gonvml.ERROR_RESET_REQUIRED, gonvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return true
	}
	return false
}

// initErr is a failed nvmlInit: a sentence saying why and what to do.
// Its text is built without calling NVML (nvml.Return.Error may call the
// library once it is loaded).
type initErr struct {
	ret gonvml.Return
	msg string
}

func (e *initErr) Error() string   { return e.msg }
func (e *initErr) Unwrap() []error { return []error{ErrUnavailable, e.ret} }

func initError(ret gonvml.Return) error {
	var why string
	switch ret {
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		why = "the NVML library (libnvidia-ml.so.1) was not found: no NVIDIA driver is installed on this machine, or it is not on the loader path"
	case gonvml.ERROR_DRIVER_NOT_LOADED:
		why = "the NVIDIA kernel driver is not loaded (no GPU, or the driver failed to start; nvidia-smi says more)"
	case gonvml.ERROR_NO_PERMISSION:
		why = "no permission to open the NVIDIA devices (/dev/nvidia*): run as a user allowed to use the GPUs"
	case gonvml.ERROR_LIB_RM_VERSION_MISMATCH:
		why = "the NVML library and the loaded kernel driver have different versions (driver updated without a reboot?)"
	default:
		why = "nvmlInit failed: " + retName(ret)
	}
	return &initErr{ret: ret, msg: fmt.Sprintf("nvml: %s: %s; %s", ErrUnavailable, why, alternatives)}
}

// retNames names NVML returns without calling the library.
var retNames = map[gonvml.Return]string{
	gonvml.SUCCESS:                       "SUCCESS",
	gonvml.ERROR_UNINITIALIZED:           "ERROR_UNINITIALIZED",
	gonvml.ERROR_INVALID_ARGUMENT:        "ERROR_INVALID_ARGUMENT",
	gonvml.ERROR_NOT_SUPPORTED:           "ERROR_NOT_SUPPORTED",
	gonvml.ERROR_NO_PERMISSION:           "ERROR_NO_PERMISSION",
	gonvml.ERROR_ALREADY_INITIALIZED:     "ERROR_ALREADY_INITIALIZED",
	gonvml.ERROR_NOT_FOUND:               "ERROR_NOT_FOUND",
	gonvml.ERROR_INSUFFICIENT_SIZE:       "ERROR_INSUFFICIENT_SIZE",
	gonvml.ERROR_INSUFFICIENT_POWER:      "ERROR_INSUFFICIENT_POWER",
	gonvml.ERROR_DRIVER_NOT_LOADED:       "ERROR_DRIVER_NOT_LOADED",
	gonvml.ERROR_TIMEOUT:                 "ERROR_TIMEOUT",
	gonvml.ERROR_IRQ_ISSUE:               "ERROR_IRQ_ISSUE",
	gonvml.ERROR_LIBRARY_NOT_FOUND:       "ERROR_LIBRARY_NOT_FOUND",
	gonvml.ERROR_FUNCTION_NOT_FOUND:      "ERROR_FUNCTION_NOT_FOUND",
	gonvml.ERROR_CORRUPTED_INFOROM:       "ERROR_CORRUPTED_INFOROM",
	gonvml.ERROR_GPU_IS_LOST:             "ERROR_GPU_IS_LOST",
	gonvml.ERROR_RESET_REQUIRED:          "ERROR_RESET_REQUIRED",
	gonvml.ERROR_OPERATING_SYSTEM:        "ERROR_OPERATING_SYSTEM",
	gonvml.ERROR_LIB_RM_VERSION_MISMATCH: "ERROR_LIB_RM_VERSION_MISMATCH",
	gonvml.ERROR_IN_USE:                  "ERROR_IN_USE",
	gonvml.ERROR_MEMORY:                  "ERROR_MEMORY",
	gonvml.ERROR_NO_DATA:                 "ERROR_NO_DATA",
	gonvml.ERROR_NOT_READY:               "ERROR_NOT_READY",
	gonvml.ERROR_UNKNOWN:                 "ERROR_UNKNOWN",
}

// retName names an NVML return without calling the library.
func retName(ret gonvml.Return) string {
	if n, ok := retNames[ret]; ok {
		return n
	}
	return fmt.Sprintf("NVML return %d", int32(ret))
}

// archRubin is NVML_DEVICE_ARCH_RUBIN. go-nvml v0.12.9-0 (the CUDA 12.9
// nvml.h, chosen because its header builds without warnings) stops at
// NVML_DEVICE_ARCH_BLACKWELL 10; the CUDA 13 nvml.h (go-nvml v0.13.4-1)
// defines "#define NVML_DEVICE_ARCH_RUBIN 13". The values are the driver's,
// not the header's, so a newer driver reports 13 to either binding. 11 and 12
// are not named: CUDA 12.9 has 11 = T23X (Orin), CUDA 13 has 11 = DLA,
// 12 = DLA2.
const archRubin gonvml.DeviceArchitecture = 13

// archName names an NVML_DEVICE_ARCH_* value.
func archName(a gonvml.DeviceArchitecture) string {
	switch a {
	case gonvml.DEVICE_ARCH_KEPLER:
		return "kepler"
	case gonvml.DEVICE_ARCH_MAXWELL:
		return "maxwell"
	case gonvml.DEVICE_ARCH_PASCAL:
		return "pascal"
	case gonvml.DEVICE_ARCH_VOLTA:
		return "volta"
	case gonvml.DEVICE_ARCH_TURING:
		return "turing"
	case gonvml.DEVICE_ARCH_AMPERE:
		return "ampere"
	case gonvml.DEVICE_ARCH_ADA:
		return "ada"
	case gonvml.DEVICE_ARCH_HOPPER:
		return "hopper"
	case gonvml.DEVICE_ARCH_BLACKWELL:
		return "blackwell"
	case archRubin:
		return "rubin"
	}
	return "unknown"
}

func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
