//go:build cgo

package nvmltest

import (
	"sync"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
)

// GPU is one simulated GPU's settings state. Fields are read and written
// under the Server's lock (Lock/Unlock).
type GPU struct {
	// LimitMW is the power limit in force; DefaultMW, MinMW and MaxMW
	// the default and allowed range (an A100 SXM4: 400 W, 100-400 W).
	LimitMW, DefaultMW, MinMW, MaxMW uint32
	// Locked are the locked SM clocks, MemLocked the memory clocks
	// (zero: unlocked).
	Locked, MemLocked [2]uint32
	// MinMemClockMHz and MaxMemClockMHz are P0's memory clock range (an
	// A100 40GB: 1215 MHz only).
	MinMemClockMHz, MaxMemClockMHz uint32
	// MinClockMHz and MaxClockMHz are P0's SM clock range.
	MinClockMHz, MaxClockMHz uint32
	// ClockMHz and Reasons are what the clock and clock-event reasons
	// read.
	ClockMHz uint32
	Reasons  uint64
	// ReasonsErr, when not SUCCESS, is what reading the clock-event
	// reasons returns (a driver that cannot report them).
	ReasonsErr gonvml.Return
	// SetErr, when not SUCCESS, is what every set returns (e.g.
	// ERROR_NO_PERMISSION); LimitUnsupported makes the limit queries
	// return ERROR_NOT_SUPPORTED.
	SetErr           gonvml.Return
	LimitUnsupported bool
	// ReadBackOffsetMW is added to the limit read back (a setting that
	// does not take).
	ReadBackOffsetMW uint32
	// Sets counts the set and reset calls.
	Sets int
}

// Server is the simulated DGX A100 with stateful settings.
type Server struct {
	*dgxa100.Server
	mu   sync.Mutex
	GPUs [8]*GPU
	// BeforeSet, when set, is called before every set or reset (with the
	// lock not held), e.g. to see the journal on disk.
	BeforeSet func()
}

// Lock and Unlock guard the GPUs' fields.
func (s *Server) Lock()   { s.mu.Lock() }
func (s *Server) Unlock() { s.mu.Unlock() }

// New returns the server with every GPU at 400 W (its default, range
// 100-400 W), clocks unlocked, P0 SM clocks 210-1410 MHz.
func New() *Server {
	s := &Server{Server: dgxa100.New()}
	for i, nd := range s.Devices {
		g := &GPU{LimitMW: 400000, DefaultMW: 400000, MinMW: 100000, MaxMW: 400000, MinClockMHz: 210, MaxClockMHz: 1410, ClockMHz: 1410,
			MinMemClockMHz: 1215, MaxMemClockMHz: 1215}
		s.GPUs[i] = g
		s.wire(nd.(*dgxa100.Device), g)
	}
	return s
}

func (s *Server) set(g *GPU, f func()) gonvml.Return {
	if s.BeforeSet != nil {
		s.BeforeSet()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g.Sets++
	if g.SetErr != 0 && g.SetErr != gonvml.SUCCESS {
		return g.SetErr
	}
	f()
	return gonvml.SUCCESS
}

func (s *Server) wire(d *dgxa100.Device, g *GPU) {
	limits := func() gonvml.Return {
		if g.LimitUnsupported {
			return gonvml.ERROR_NOT_SUPPORTED
		}
		return gonvml.SUCCESS
	}
	d.GetPowerManagementLimitFunc = func() (uint32, gonvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return g.LimitMW + g.ReadBackOffsetMW, limits()
	}
	d.GetPowerManagementDefaultLimitFunc = func() (uint32, gonvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return g.DefaultMW, limits()
	}
	d.GetPowerManagementLimitConstraintsFunc = func() (uint32, uint32, gonvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return g.MinMW, g.MaxMW, limits()
	}
	d.SetPowerManagementLimitFunc = func(mw uint32) gonvml.Return {
		return s.set(g, func() { g.LimitMW = mw })
	}
	d.SetGpuLockedClocksFunc = func(lo, hi uint32) gonvml.Return {
		return s.set(g, func() { g.Locked = [2]uint32{lo, hi} })
	}
	d.ResetGpuLockedClocksFunc = func() gonvml.Return {
		return s.set(g, func() { g.Locked = [2]uint32{} })
	}
	d.SetMemoryLockedClocksFunc = func(lo, hi uint32) gonvml.Return {
		return s.set(g, func() { g.MemLocked = [2]uint32{lo, hi} })
	}
	d.ResetMemoryLockedClocksFunc = func() gonvml.Return {
		return s.set(g, func() { g.MemLocked = [2]uint32{} })
	}
	d.GetMinMaxClockOfPStateFunc = func(c gonvml.ClockType, p gonvml.Pstates) (uint32, uint32, gonvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if c == gonvml.CLOCK_MEM {
			return g.MinMemClockMHz, g.MaxMemClockMHz, gonvml.SUCCESS
		}
		return g.MinClockMHz, g.MaxClockMHz, gonvml.SUCCESS
	}
	d.GetClockInfoFunc = func(gonvml.ClockType) (uint32, gonvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return g.ClockMHz, gonvml.SUCCESS
	}
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, gonvml.Return) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if g.ReasonsErr != 0 && g.ReasonsErr != gonvml.SUCCESS {
			return 0, g.ReasonsErr
		}
		return g.Reasons, gonvml.SUCCESS
	}
}
