package analysis

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// LimitEvalMemory sets a limit of evalMemHeadroom times the live heap
// when it holds a large run, and restores the previous limit.
func TestLimitEvalMemory(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetMemoryLimit(-1)
	data := make([]byte, 2*evalMemMinBytes) // a run's data, live across the call
	for i := range data {
		data[i] = byte(i)
	}
	restore := LimitEvalMemory()
	got := debug.SetMemoryLimit(-1)
	restore()
	// At least the 128 MiB held, times 1.70 (218 MiB); the test binary's own
	// heap adds a few MiB.
	if lo, hi := int64(float64(len(data))*evalMemHeadroom), int64(float64(len(data)+64<<20)*evalMemHeadroom); got < lo || got > hi {
		t.Errorf("limit during evaluation %d, want %d–%d", got, lo, hi)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("limit after %d, want %d restored", after, before)
	}

	// A user's GOMEMLIMIT is left alone.
	t.Setenv("GOMEMLIMIT", "1GiB")
	restore = LimitEvalMemory()
	got = debug.SetMemoryLimit(-1)
	restore()
	if got != before {
		t.Errorf("with GOMEMLIMIT set the limit became %d", got)
	}
	runtime.KeepAlive(data)
}
