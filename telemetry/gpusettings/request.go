// Package gpusettings applies GPU power limits and locked SM clocks for the
// length of a run: it checks a request against every device before
// changing anything, journals the previous values (journal.go) before the
// first change, applies the request to every device or to none, reads
// every value back, and restores the previous values when the run ends.
// A Controller does the device work: NVML's (telemetry/nvml) for real
// GPUs, the simulated GPUs' (telemetry/sim) for the simulator.
package gpusettings

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Parameter names: a run's --set keys and the profile parameters that carry
// a setting (the flags --gpu-power-limit and --gpu-clocks set the same).
const (
	ParamPowerLimit = "gpu_power_limit_w"
	ParamClocks     = "gpu_clocks"
	ParamMemClocks  = "gpu_mem_clocks"
)

// Clocks is a locked SM clock range in MHz.
type Clocks struct {
	MinMHz, MaxMHz uint32
}

// String is "MIN,MAX".
func (c Clocks) String() string { return fmt.Sprintf("%d,%d", c.MinMHz, c.MaxMHz) }

// Request is what a run asks of the GPUs. The zero value asks nothing.
type Request struct {
	// AllW, when positive, is the power limit of every GPU in watts.
	AllW float64
	// PerGPU maps a GPU index to its power limit in watts (INDEX=W).
	PerGPU map[int]float64
	// Clocks, when set, are the locked SM clocks of every GPU; MemClocks
	// the locked memory clocks, where the GPU supports locking them.
	Clocks, MemClocks *Clocks
}

// Empty reports whether r asks nothing.
func (r Request) Empty() bool {
	return r.AllW == 0 && len(r.PerGPU) == 0 && r.Clocks == nil && r.MemClocks == nil
}

// PowerLimitString is the power limit as asked, in canonical form: "250",
// "0=250,1=300", or "" when none.
func (r Request) PowerLimitString() string {
	if r.AllW > 0 {
		return formatW(r.AllW)
	}
	parts := make([]string, 0, len(r.PerGPU))
	for _, i := range slices.Sorted(maps.Keys(r.PerGPU)) {
		parts = append(parts, strconv.Itoa(i)+"="+formatW(r.PerGPU[i]))
	}
	return strings.Join(parts, ",")
}

// ClocksString is the clocks as asked ("MIN,MAX"), or "".
func (r Request) ClocksString() string { return clocksString(r.Clocks) }

// MemClocksString is the memory clocks as asked ("MIN,MAX"), or "".
func (r Request) MemClocksString() string { return clocksString(r.MemClocks) }

func clocksString(c *Clocks) string {
	if c == nil {
		return ""
	}
	return c.String()
}

// limitFor is the power limit asked of GPU index, and whether one is.
func (r Request) limitFor(index int) (float64, bool) {
	if r.AllW > 0 {
		return r.AllW, true
	}
	w, ok := r.PerGPU[index]
	return w, ok
}

func formatW(w float64) string { return strconv.FormatFloat(w, 'f', -1, 64) }

// ParseRequest parses --gpu-power-limit (W for every GPU, or INDEX=W,...)
// and --gpu-clocks (MIN,MAX in MHz); empty strings ask nothing. The error
// names the option and the rule.
func ParseRequest(powerLimit, clocks string) (Request, error) {
	var r Request
	var errs []error
	if s := strings.TrimSpace(powerLimit); s != "" {
		if err := r.parsePower(s); err != nil {
			errs = append(errs, fmt.Errorf("--gpu-power-limit %q: %w", powerLimit, err))
		}
	}
	if s := strings.TrimSpace(clocks); s != "" {
		c, err := parseClocks(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("--gpu-clocks %q: %w", clocks, err))
		}
		r.Clocks = c
	}
	return r, errors.Join(errs...)
}

// ParseMemClocks adds --gpu-mem-clocks (MIN,MAX in MHz; empty: none) to r.
func (r *Request) ParseMemClocks(s string) error {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	c, err := parseClocks(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("--gpu-mem-clocks %q: %w", s, err)
	}
	r.MemClocks = c
	return nil
}

func (r *Request) parsePower(s string) error {
	if !strings.Contains(s, "=") {
		w, err := parseWatts(s)
		if err != nil {
			return err
		}
		r.AllW = w
		return nil
	}
	r.PerGPU = map[int]float64{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%q: expected INDEX=W for every GPU once one is given by index (e.g. 0=250,1=300)", part)
		}
		i, err := strconv.Atoi(strings.TrimSpace(k))
		if err != nil || i < 0 {
			return fmt.Errorf("%q: the GPU index must be a whole number 0 or more", part)
		}
		if _, dup := r.PerGPU[i]; dup {
			return fmt.Errorf("GPU %d is given twice", i)
		}
		w, err := parseWatts(v)
		if err != nil {
			return fmt.Errorf("%q: %w", part, err)
		}
		r.PerGPU[i] = w
	}
	return nil
}

func parseWatts(s string) (float64, error) {
	w, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "W"), 64)
	if err != nil || !(w > 0) || w > 1e5 {
		return 0, fmt.Errorf("expected a power limit in watts above 0 (e.g. 250), got %q", s)
	}
	return w, nil
}

func parseClocks(s string) (*Clocks, error) {
	lo, hi, ok := strings.Cut(s, ",")
	if !ok {
		return nil, errors.New("expected MIN,MAX in MHz (e.g. 1200,1500)")
	}
	mn, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 32)
	mx, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 32)
	if err1 != nil || err2 != nil || mn == 0 {
		return nil, errors.New("expected MIN,MAX as whole numbers of MHz above 0 (e.g. 1200,1500)")
	}
	if mn > mx {
		return nil, fmt.Errorf("MIN %d is above MAX %d", mn, mx)
	}
	return &Clocks{MinMHz: uint32(mn), MaxMHz: uint32(mx)}, nil
}

// SplitSets takes the GPU settings' parameters out of key=value --set
// values: they are a run's GPU settings whatever its profile declares.
// vals are the values of ParamPowerLimit, ParamClocks and ParamMemClocks;
// given says whether any was given.
func SplitSets(sets []string) (rest []string, vals [3]string, given bool) {
	for _, kv := range sets {
		k, v, _ := strings.Cut(kv, "=")
		switch strings.TrimSpace(k) {
		case ParamPowerLimit:
			vals[0], given = v, true
		case ParamClocks:
			vals[1], given = v, true
		case ParamMemClocks:
			vals[2], given = v, true
		default:
			rest = append(rest, kv)
		}
	}
	return rest, vals, given
}

// CheckSets checks the GPU settings' parameters among --set values (a
// campaign's runs, before anything runs) and returns the other values,
// the profile's.
func CheckSets(sets []string) ([]string, error) {
	rest, v, _ := SplitSets(sets)
	req, err := ParseRequest(v[0], v[1])
	if err == nil {
		err = req.ParseMemClocks(v[2])
	}
	return rest, err
}
