package gpusettings

import (
	"fmt"
	"sync"
)

// fakeGPU is one GPU of the fake: its settings in force.
type fakeGPU struct {
	limitW            float64
	clocks, memClocks Clocks // zero: unlocked
	sample            Sample
}

// fake is a Controller of GPUs in memory for the package's tests: every
// GPU at 400 W (range 100-400 W), SM clocks 210-1410 MHz, memory clocks
// 1215 MHz. fail, when set, is asked before every call ("set-power",
// "power", "set-clocks", "reset-clocks", "set-mem", "reset-mem",
// "clocks", "sample", "devices") and an error it returns is the call's.
type fake struct {
	mu       sync.Mutex
	name     string
	volatile bool
	gpus     []*fakeGPU
	uuids    []string
	// readBackOffsetW is added to the limit read back; clocksReadable
	// makes LockedClocks report the locked clocks (NVML cannot).
	readBackOffsetW float64
	clocksReadable  bool
	fail            func(op string, index int) error
	calls           []string
	closed          bool
}

func newFake(n int) *fake {
	f := &fake{name: "nvml"}
	for i := range n {
		f.gpus = append(f.gpus, &fakeGPU{limitW: 400, sample: Sample{SMClockMHz: 1410}})
		f.uuids = append(f.uuids, fmt.Sprintf("GPU-%d", i))
	}
	return f
}

func (f *fake) do(op string, index int) error {
	f.calls = append(f.calls, fmt.Sprintf("%s %d", op, index))
	if f.fail != nil {
		return f.fail(op, index)
	}
	return nil
}

func (f *fake) gpu(index int) (*fakeGPU, error) {
	if index < 0 || index >= len(f.gpus) {
		return nil, fmt.Errorf("no GPU %d", index)
	}
	return f.gpus[index], nil
}

func (f *fake) Name() string   { return f.name }
func (f *fake) Volatile() bool { return f.volatile }
func (f *fake) Close() error   { f.closed = true; return nil }

func (f *fake) Devices() ([]DeviceState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.do("devices", -1); err != nil {
		return nil, err
	}
	var out []DeviceState
	for i, g := range f.gpus {
		out = append(out, DeviceState{Index: i, UUID: f.uuids[i], Name: "Fake GPU", PowerLimitW: g.limitW, DefaultLimitW: 400,
			MinLimitW: 100, MaxLimitW: 400, PowerLimitOK: true,
			Locks: map[string]Clocks{"clocks": {210, 1410}, "mem_clocks": {1215, 1215}}})
	}
	return out, nil
}

func (f *fake) op(op string, index int, apply func(*fakeGPU)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, err := f.gpu(index)
	if err != nil {
		return err
	}
	if err := f.do(op, index); err != nil {
		return err
	}
	apply(g)
	return nil
}

func (f *fake) SetPowerLimit(index int, w float64) error {
	return f.op("set-power", index, func(g *fakeGPU) { g.limitW = w })
}

func (f *fake) PowerLimit(index int) (float64, error) {
	var w float64
	err := f.op("power", index, func(g *fakeGPU) { w = g.limitW + f.readBackOffsetW })
	return w, err
}

// lockOps are the fake's operation names of each lock.
var lockOps = map[string][2]string{"clocks": {"set-clocks", "reset-clocks"}, "mem_clocks": {"set-mem", "reset-mem"}}

func (g *fakeGPU) lock(key string) *Clocks {
	if key == "mem_clocks" {
		return &g.memClocks
	}
	return &g.clocks
}

func (f *fake) Lock(index int, key string, c Clocks) error {
	return f.op(lockOps[key][0], index, func(g *fakeGPU) { *g.lock(key) = c })
}

func (f *fake) Unlock(index int, key string) error {
	return f.op(lockOps[key][1], index, func(g *fakeGPU) { *g.lock(key) = Clocks{} })
}

func (f *fake) Locked(index int, key string) (Clocks, bool, error) {
	if key != "clocks" {
		return Clocks{}, false, nil
	}
	var c Clocks
	err := f.op("clocks", index, func(g *fakeGPU) { c = g.clocks })
	return c, f.clocksReadable, err
}

func (f *fake) Sample(index int) (Sample, error) {
	var s Sample
	err := f.op("sample", index, func(g *fakeGPU) { s = g.sample })
	return s, err
}

// state is GPU index's limit and locked clocks.
func (f *fake) state(index int) (float64, Clocks, Clocks) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.gpus[index]
	return g.limitW, g.clocks, g.memClocks
}
