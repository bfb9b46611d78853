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

// limitLoadMemory sets GOGC to loadGCPercent while a run loads, restores
// it once, and leaves a user's GOGC alone; Evaluate has it restored
// before the evaluation's own limit is set.
func TestLimitLoadMemory(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	restore := limitLoadMemory()
	during := debug.SetGCPercent(loadGCPercent)
	restore()
	if during != 25 {
		t.Errorf("GOGC while loading %d, want 25", during)
	}
	if got := debug.SetGCPercent(70); got != 100 {
		t.Errorf("GOGC after loading %d, want 100 restored", got)
	}
	restore() // a second call restores nothing
	if got := debug.SetGCPercent(100); got != 70 {
		t.Errorf("a second restore set GOGC to %d, want it left at 70", got)
	}

	t.Setenv("GOGC", "100")
	restore = limitLoadMemory()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, GOGC while loading %d, want 100", got)
	}
	restore()

	t.Setenv("GOGC", "")
	atEval := 0
	p := noUserDirs()
	p.LimitMemory = func() func() {
		atEval = debug.SetGCPercent(100)
		return func() {}
	}
	if _, err := p.Evaluate(t.Context(), sampleRunOK, "", nil); err != nil {
		t.Fatal(err)
	}
	if atEval != 100 {
		t.Errorf("GOGC when evaluation starts %d, want 100 (loading's restored)", atEval)
	}
}
