// Package gpusettings applies the GPU settings of record.GPUSettingsTable
// (power limits, locked clocks) for the length of a run: it checks a request against every device before
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

	"github.com/joulebench/joulebench/archive/record"
)

// ParamPowerLimit is the power limit's parameter (a run's --set key and
// the profile parameter; record.GPUSettingsTable names every setting's).
const ParamPowerLimit = "gpu_power_limit_w"

// Clocks is a locked clock range in MHz.
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
	// Locks maps a GPULock setting's Key (record.GPUSettingsTable) to
	// the range locked on every GPU.
	Locks map[string]Clocks
}

// Empty reports whether r asks nothing.
func (r Request) Empty() bool {
	return r.AllW == 0 && len(r.PerGPU) == 0 && len(r.Locks) == 0
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

// String is setting s as asked, in canonical form ("250", "0=250,1=300",
// "MIN,MAX"), or "" when not asked.
func (r Request) String(s record.GPUSetting) string {
	if s.Kind == record.GPULimit {
		return r.PowerLimitString()
	}
	if c, ok := r.Locks[s.Key]; ok {
		return c.String()
	}
	return ""
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

// ParseRequest parses the settings' values as given (flags, --set values,
// a profile's parameters): for each setting of record.GPUSettingsTable a
// power limit (W for every GPU, or INDEX=W,...) or a locked range (MIN,MAX
// in MHz); empty values ask nothing. The error names the option and the
// rule.
func ParseRequest(v record.GPUSettingValues) (Request, error) {
	var r Request
	var errs []error
	for _, s := range record.GPUSettingsTable() {
		if err := r.Parse(s, *s.Value(&v)); err != nil {
			errs = append(errs, err)
		}
	}
	return r, errors.Join(errs...)
}

// Parse adds setting s's value v (empty: none) to r.
func (r *Request) Parse(s record.GPUSetting, v string) error {
	t := strings.TrimSpace(v)
	if t == "" {
		return nil
	}
	var err error
	switch s.Kind {
	case record.GPULimit:
		err = r.parsePower(t)
	default:
		var c *Clocks
		if c, err = parseClocks(t); c != nil {
			if r.Locks == nil {
				r.Locks = map[string]Clocks{}
			}
			r.Locks[s.Key] = *c
		}
	}
	if err != nil {
		return fmt.Errorf("--%s %q: %w", s.Flag, v, err)
	}
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
// vals are their values; given says whether any was given.
func SplitSets(sets []string) (rest []string, vals record.GPUSettingValues, given bool) {
	table := record.GPUSettingsTable()
next:
	for _, kv := range sets {
		k, v, _ := strings.Cut(kv, "=")
		for _, s := range table {
			if strings.TrimSpace(k) == s.Param {
				*s.Value(&vals), given = v, true
				continue next
			}
		}
		rest = append(rest, kv)
	}
	return rest, vals, given
}

// CheckSets checks the GPU settings' parameters among --set values (a
// campaign's runs, before anything runs) and returns the other values,
// the profile's.
func CheckSets(sets []string) ([]string, error) {
	rest, v, _ := SplitSets(sets)
	_, err := ParseRequest(v)
	return rest, err
}
