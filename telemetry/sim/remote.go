package sim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The /metrics families through which a simulated engine serving in
// another process (joulebench serve-sim, an engine pod) tells its
// Activity: the GPUs here follow it remotely (Remote).
const (
	// FamilyPhase is 1 for the engine's phase, labelled phase="loading",
	// "ready" or "stopping".
	FamilyPhase = "sim:engine_phase"
	// FamilyDecoding and FamilyPrefilling are Activity.Running and
	// Activity.Prefilling.
	FamilyDecoding   = "sim:num_requests_decoding"
	FamilyPrefilling = "sim:num_requests_prefilling"
	// FamilySlots is Activity.Slots.
	FamilySlots = "sim:num_slots"
	// FamilyMemFrac is Activity.MemFrac.
	FamilyMemFrac = "sim:gpu_memory_fraction"
	// FamilyHWEnergy and FamilyHWBusy are Activity.HWEnergyJ and
	// HWBusyS of an engine on the hardware model (written only then);
	// FamilySMClock and FamilyPowerCapped its last step's ClockMHz and
	// PowerCapped.
	FamilyHWEnergy    = "sim:gpu_step_energy_above_idle_joules"
	FamilyHWBusy      = "sim:gpu_step_seconds"
	FamilySMClock     = "sim:sm_clock_mhz"
	FamilyPowerCapped = "sim:power_capped"
)

// WriteActivity writes a in the Prometheus text format under the
// families above (their HELP and TYPE lines included); labels, when not
// empty, are the other labels of every sample (`model_name="m"`).
func WriteActivity(w io.Writer, a Activity, labels string) error {
	sep := ""
	if labels != "" {
		sep = ","
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# HELP %s 1 for the engine's phase.\n# TYPE %s gauge\n", FamilyPhase, FamilyPhase)
	for _, p := range []string{PhaseLoading, PhaseReady, PhaseStopping} {
		v := 0
		if a.Phase == p {
			v = 1
		}
		fmt.Fprintf(bw, "%s{%s%sphase=%q} %d\n", FamilyPhase, labels, sep, p, v)
	}
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s gauge\n%s{%s} %g\n", name, help, name, name, labels, v)
	}
	gauge(FamilyDecoding, "Number of sequences decoding.", float64(a.Running))
	gauge(FamilyPrefilling, "Number of sequences in prefill.", float64(a.Prefilling))
	gauge(FamilyMemFrac, "Fraction of device memory the engine holds (simulated GPUs).", a.MemFrac)
	if a.HW {
		capped := 0.0
		if a.PowerCapped {
			capped = 1
		}
		gauge(FamilyHWEnergy, "One GPU's energy above idle in the hardware model's steps so far (J).", a.HWEnergyJ)
		gauge(FamilyHWBusy, "Wall time of the hardware model's steps so far (s).", a.HWBusyS)
		gauge(FamilySMClock, "SM clock of the last step (MHz).", a.ClockMHz)
		gauge(FamilyPowerCapped, "1 when the power limit held the last step's clock.", capped)
	}
	return bw.Flush()
}

// ParseActivity reads an Activity from a /metrics text (WriteActivity's
// families; the others are skipped). A text without FamilyPhase at 1 is
// an engine in no phase joulebench knows: an error.
func ParseActivity(r io.Reader) (Activity, error) {
	var a Activity
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, value, ok := splitSample(line)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return Activity{}, fmt.Errorf("/metrics %s: value %q: %w", name, value, err)
		}
		switch name {
		case FamilyPhase:
			if v == 1 {
				a.Phase = labelValue(labels, "phase")
			}
		case FamilyDecoding:
			a.Running = int(v)
		case FamilyPrefilling:
			a.Prefilling = int(v)
		case FamilySlots:
			a.Slots = int(v)
		case FamilyMemFrac:
			a.MemFrac = v
		case FamilyHWEnergy:
			a.HW, a.HWEnergyJ = true, v
		case FamilyHWBusy:
			a.HWBusyS = v
		case FamilySMClock:
			a.ClockMHz = v
		case FamilyPowerCapped:
			a.PowerCapped = v == 1
		}
	}
	if err := sc.Err(); err != nil {
		return Activity{}, fmt.Errorf("/metrics: %w", err)
	}
	switch a.Phase {
	case PhaseLoading, PhaseReady, PhaseStopping:
		return a, nil
	}
	return Activity{}, fmt.Errorf("/metrics: no %s at 1 for loading, ready or stopping (not a simulated engine?)", FamilyPhase)
}

// splitSample splits `name{labels} value [timestamp]`.
func splitSample(line string) (name, labels, value string, ok bool) {
	rest := line
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return "", "", "", false
		}
		name, labels, rest = line[:i], line[i+1:j], line[j+1:]
	} else {
		i := strings.IndexAny(line, " \t")
		if i < 0 {
			return "", "", "", false
		}
		name, rest = line[:i], line[i:]
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", "", "", false
	}
	return name, labels, f[0], true
}

// labelValue is the value of label key in `a="x",b="y"` ("" when absent).
func labelValue(labels, key string) string {
	for _, part := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && k == key {
			if s, err := strconv.Unquote(v); err == nil {
				return s
			}
		}
	}
	return ""
}

// Remote is the Load of a simulated engine serving elsewhere (an engine
// pod): its owner records each reading of the engine's /metrics (Set,
// ReadActivity) while the engine is there; Activity is the last reading, and PhaseOff before the first
// one, once Gone was called, and while /metrics does not answer (the
// GPUs are the node's: they idle with no engine on them).
type Remote struct {
	mu   sync.Mutex
	last Activity
	gone bool
}

var _ Load = (*Remote)(nil)

// Activity is the engine's last reported activity, PhaseOff when none.
func (r *Remote) Activity() Activity {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone || r.last.Phase == "" {
		return Activity{Phase: PhaseOff}
	}
	return r.last
}

// Set records a reading (a zero Activity: the engine did not answer).
func (r *Remote) Set(a Activity) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.gone {
		r.last = a
	}
}

// Gone says the engine is gone for good: the GPUs idle from now on,
// whatever a late reading says.
func (r *Remote) Gone() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gone, r.last = true, Activity{}
}

// ReadActivity reads a simulated engine's Activity from its /metrics at
// url (a read bounded to 2 s).
func ReadActivity(ctx context.Context, hc *http.Client, url string) (Activity, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Activity{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Activity{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Activity{}, fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	return ParseActivity(io.LimitReader(resp.Body, 1<<20))
}

// Follow is the Load of the simulated engine whose /metrics is at url
// (joulebench serve-sim on this node), read every interval until ctx is
// done; a reading that fails leaves the GPUs idle until one answers
// (the engine is not there). An empty url is no engine: GPUs that idle.
func Follow(ctx context.Context, hc *http.Client, url string, every time.Duration) *Remote {
	r := &Remote{}
	if url == "" {
		return r
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			a, err := ReadActivity(ctx, hc, url)
			if err != nil {
				a = Activity{}
			}
			r.Set(a)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return r
}
