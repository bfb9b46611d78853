package runner

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workflow"
)

// The load options of vLLM's `bench serve`, each mapped onto a profile
// parameter (benchmark-1.0 and benchmark-1.5 have them all).
var vllmLoadFlags = []struct{ flag, param string }{
	{"request-rate", loadgen.ParamRate},
	{"burstiness", loadgen.ParamBurstiness},
	{"max-concurrency", loadgen.ParamMaxConcurrency},
	{"num-prompts", "request_count"},
}

// LoadOptions are vLLM bench serve's load options (--request-rate,
// --burstiness, --max-concurrency, --num-prompts); the ...Set fields say
// which were given.
type LoadOptions struct {
	Rate, Burstiness                                         float64
	MaxConcurrency, NumPrompts                               int
	RateSet, BurstinessSet, MaxConcurrencySet, NumPromptsSet bool
}

func (v LoadOptions) any() bool {
	return v.RateSet || v.BurstinessSet || v.MaxConcurrencySet || v.NumPromptsSet
}

// applyLoad maps the load options given onto --set values of the profile
// (its parameters read from the profile itself), refusing an option whose
// parameter the profile lacks.
func (r *Runner) applyLoad(profile string, sets []string) ([]string, error) {
	v := r.s.Load
	if !v.any() {
		return sets, nil
	}
	src, name, err := r.readProfile(profile)
	if err != nil {
		return nil, WithCode(CodeInvalid, err)
	}
	l, err := workflow.Load(src, name, workflow.Options{Lookup: r.s.FindProfile})
	if err != nil {
		return nil, WithCode(CodeInvalid, err)
	}
	out, err := mapLoadFlags(sets, v, l.Profile.Name, func(p string) bool { _, ok := l.Params[p]; return ok })
	if err != nil {
		return nil, err
	}
	return r.numPromptsUnsteady(out, v, l.Params), nil
}

// numPromptsUnsteady accepts --num-prompts N below window × min_windows
// (vLLM bench serve's familiar count, e.g. 100 against 2 windows of 100)
// as a run without a steady-state result, said once, where the profile
// would otherwise refuse it: it adds accept_unsteady=true unless --set
// gives accept_unsteady.
func (r *Runner) numPromptsUnsteady(sets []string, v LoadOptions, params map[string]any) []string {
	if !v.NumPromptsSet {
		return sets
	}
	if _, declared := params["accept_unsteady"]; !declared {
		return sets
	}
	val := map[string]string{}
	for _, kv := range sets {
		if k, x, ok := strings.Cut(kv, "="); ok {
			val[strings.TrimSpace(k)] = strings.TrimSpace(x)
		}
	}
	if _, given := val["accept_unsteady"]; given {
		return sets
	}
	intOf := func(name string) (int, bool) {
		if x, ok := val[name]; ok {
			n, err := strconv.Atoi(x)
			return n, err == nil
		}
		switch n := params[name].(type) {
		case int:
			return n, true
		case int64:
			return int(n), true
		}
		return 0, false
	}
	window, ok1 := intOf("window")
	minWin, ok2 := intOf("min_windows")
	if !ok1 || !ok2 || v.NumPrompts >= window*minWin {
		return sets
	}
	fmt.Fprintf(r.s.Messages, "--num-prompts %d: fewer than window × min_windows = %d × %d = %d, so steady state cannot be reached: this run reports formal J/token, not steady-state (accept_unsteady=true; --num-prompts %d or more for steady state)\n",
		v.NumPrompts, window, minWin, window*minWin, window*minWin)
	return append(sets, "accept_unsteady=true")
}

// mapLoadFlags turns the vLLM load flags of v into --set values appended
// to sets: --request-rate R sets rate (and, unless --set mode is given,
// the mode of the load shape a rate asks for, see mapRate; inf sets the
// all-at-once mode), --burstiness burstiness, --max-concurrency max_concurrency,
// --num-prompts request_count. declared says whether the profile has a
// parameter; a flag whose parameter it lacks, a value out of range, or a
// --set that says otherwise is an error naming the flag.
func mapLoadFlags(sets []string, v LoadOptions, profile string, declared func(string) bool) ([]string, error) {
	given := map[string]string{}
	for _, kv := range sets {
		if k, val, ok := strings.Cut(kv, "="); ok {
			given[strings.TrimSpace(k)] = strings.TrimSpace(val)
		}
	}
	out := slices.Clone(sets)
	add := func(flag, param, val string) error {
		if !declared(param) {
			return Invalidf("--%s: profile %s has no parameter %s, so it cannot take this flag (its load is set by the profile: joulebench profiles show %s)", flag, profile, param, profile)
		}
		if old, ok := given[param]; ok {
			if old != val {
				return Invalidf("--%s %s and --set %s=%s disagree: give one", flag, val, param, old)
			}
			return nil
		}
		given[param] = val
		out = append(out, param+"="+val)
		return nil
	}
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	shapes := loadgen.Shapes()
	for _, f := range vllmLoadFlags {
		var err error
		switch f.flag {
		case "request-rate":
			err = mapRate(v, f.param, add, given, declared)
		case "burstiness":
			if !v.BurstinessSet {
				continue
			}
			if !(v.Burstiness > 0) || math.IsInf(v.Burstiness, 0) {
				return nil, Invalidf("--burstiness %v: must be a finite number > 0 (1 is %s)", v.Burstiness, shapes.Role(loadgen.RoleRate))
			}
			if bursty := shapes.Role(loadgen.RoleBurstyRate); !(v.RateSet && !math.IsInf(v.Rate, 1)) && given[loadgen.ParamMode] != string(bursty) {
				return nil, Invalidf("--burstiness applies to a finite --request-rate (as in vLLM), or to --set mode=%s with a rate", bursty)
			}
			err = add(f.flag, f.param, num(v.Burstiness))
		case "max-concurrency":
			if !v.MaxConcurrencySet {
				continue
			}
			if v.MaxConcurrency < 1 {
				return nil, Invalidf("--max-concurrency %d: at least 1", v.MaxConcurrency)
			}
			err = add(f.flag, f.param, strconv.Itoa(v.MaxConcurrency))
		case "num-prompts":
			if !v.NumPromptsSet {
				continue
			}
			if v.NumPrompts < 1 {
				return nil, Invalidf("--num-prompts %d: at least 1", v.NumPrompts)
			}
			err = add(f.flag, f.param, strconv.Itoa(v.NumPrompts))
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// mapRate maps --request-rate onto rate and, unless --set mode is given,
// mode: the load shape whose role is a rate (RoleRate; RoleBurstyRate
// with a --burstiness other than 1; RoleAllAtOnce for inf).
func mapRate(v LoadOptions, param string, add func(flag, param, val string) error, given map[string]string, declared func(string) bool) error {
	if !v.RateSet {
		return nil
	}
	if !(v.Rate > 0) {
		return Invalidf("--request-rate %v: must be > 0 requests/s (inf: all at once)", v.Rate)
	}
	shapes := loadgen.Shapes()
	_, modeGiven := given[loadgen.ParamMode]
	if math.IsInf(v.Rate, 1) {
		if !declared(loadgen.ParamMode) || modeGiven {
			return nil
		}
		return add("request-rate", loadgen.ParamMode, string(shapes.Role(loadgen.RoleAllAtOnce)))
	}
	if err := add("request-rate", param, strconv.FormatFloat(v.Rate, 'g', -1, 64)); err != nil {
		return err
	}
	if !declared(loadgen.ParamMode) || modeGiven {
		return nil
	}
	mode := shapes.Role(loadgen.RoleRate)
	if v.BurstinessSet && v.Burstiness != 1 {
		mode = shapes.Role(loadgen.RoleBurstyRate)
	}
	return add("request-rate", loadgen.ParamMode, string(mode))
}

// RunsSet turns asiai's --runs N (given says whether it was) into the
// parameter override runs=N appended to sets. A --set runs= with another
// value is invalid, as is N below 1.
func RunsSet(sets []string, n int, given bool) ([]string, error) {
	if !given {
		return sets, nil
	}
	if n < 1 {
		return nil, Invalidf("--runs %d: at least 1", n)
	}
	for _, kv := range sets {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.TrimSpace(k) == "runs" && strings.TrimSpace(v) != strconv.Itoa(n) {
			return nil, Invalidf("--runs %d and --set %s disagree: give one", n, kv)
		}
	}
	return append(slices.Clone(sets), "runs="+strconv.Itoa(n)), nil
}

// steadyRequests raises request_count to window × min_windows (the
// successful formal requests steady state needs) when the profile, with
// sets, asks for fewer, said once; a profile without these parameters, or
// request_count 0 (each prompt once), is left as it is.
func (r *Runner) steadyRequests(profile string, sets []string) ([]string, error) {
	src, name, err := r.readProfile(profile)
	if err != nil {
		return nil, WithCode(CodeInvalid, err)
	}
	over := map[string]string{}
	for _, kv := range sets {
		if k, v, ok := strings.Cut(kv, "="); ok {
			over[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	l, err := workflow.Load(src, name, workflow.Options{Lookup: r.s.FindProfile, Overrides: over})
	if err != nil {
		return nil, WithCode(CodeInvalid, err)
	}
	window, ok1 := paramInt(l, "window")
	minWin, ok2 := paramInt(l, "min_windows")
	count, ok3 := paramInt(l, "request_count")
	if !ok1 || !ok2 || !ok3 || count == 0 || count >= window*minWin {
		return sets, nil
	}
	fmt.Fprintf(r.s.Messages, "--steady-requests: request_count %d raised to window × min_windows = %d × %d = %d, the successful formal requests steady state needs\n",
		count, window, minWin, window*minWin)
	out := slices.DeleteFunc(slices.Clone(sets), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return strings.TrimSpace(k) == "request_count"
	})
	return append(out, "request_count="+strconv.Itoa(window*minWin)), nil
}
