package main

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/workflow"
)

// The load flags of vLLM's `bench serve`, each mapped onto a profile
// parameter (benchmark-1.0 and benchmark-1.5 have them all).
var vllmLoadFlags = []struct{ flag, param string }{
	{"request-rate", "rate"},
	{"burstiness", "burstiness"},
	{"max-concurrency", "max_concurrency"},
	{"num-prompts", "request_count"},
}

func loadFlags(f *pflag.FlagSet) {
	f.Float64("request-rate", 0, "as vLLM bench serve: formal requests per second (--set rate=R, and mode poisson, or gamma with --burstiness, unless --set mode is given); inf: all at once (mode unlimited)")
	f.Float64("burstiness", 1, "as vLLM bench serve, with --request-rate: shape of the gamma-distributed gaps (--set burstiness=B; 1 = poisson, below 1 burstier)")
	f.Int("max-concurrency", 0, "as vLLM bench serve: most formal requests in flight (--set max_concurrency=N; without a rate, N in flight: mode concurrency)")
	f.Int("num-prompts", 0, "as vLLM bench serve: formal requests (--set request_count=N)")
}

// loadFlagValues are the vLLM load flags given on the command line.
type loadFlagValues struct {
	rate, burstiness                  float64
	maxConcurrency, numPrompts        int
	rateSet, burstSet, maxSet, numSet bool
}

func (v loadFlagValues) any() bool { return v.rateSet || v.burstSet || v.maxSet || v.numSet }

// loadFlagsGiven reads the vLLM load flags that were given.
func (a *app) loadFlagsGiven(changed func(string) bool) loadFlagValues {
	return loadFlagValues{
		rate: a.v.GetFloat64("request-rate"), burstiness: a.v.GetFloat64("burstiness"),
		maxConcurrency: a.v.GetInt("max-concurrency"), numPrompts: a.v.GetInt("num-prompts"),
		rateSet: changed("request-rate"), burstSet: changed("burstiness"), maxSet: changed("max-concurrency"), numSet: changed("num-prompts"),
	}
}

// applyLoadFlags maps the vLLM load flags given onto --set values of the
// profile (its parameters read from the profile itself), refusing a flag
// whose parameter the profile lacks.
func (a *app) applyLoadFlags(profile string, sets []string, v loadFlagValues) ([]string, error) {
	if !v.any() {
		return sets, nil
	}
	src, name, err := a.readProfile(profile)
	if err != nil {
		return nil, withCode(exitInvalid, err)
	}
	l, err := workflow.Load(src, name, workflow.Options{Lookup: a.finder().Find})
	if err != nil {
		return nil, withCode(exitInvalid, err)
	}
	return mapLoadFlags(sets, v, l.Profile.Name, func(p string) bool { _, ok := l.Params[p]; return ok })
}

// mapLoadFlags turns the vLLM load flags of v into --set values appended
// to sets: --request-rate R sets rate (and mode poisson, or gamma when
// --burstiness is not 1, unless --set mode is given; inf sets mode
// unlimited), --burstiness burstiness, --max-concurrency max_concurrency,
// --num-prompts request_count. declared says whether the profile has a
// parameter; a flag whose parameter it lacks, a value out of range, or a
// --set that says otherwise is an error naming the flag.
func mapLoadFlags(sets []string, v loadFlagValues, profile string, declared func(string) bool) ([]string, error) {
	given := map[string]string{}
	for _, kv := range sets {
		if k, val, ok := strings.Cut(kv, "="); ok {
			given[strings.TrimSpace(k)] = strings.TrimSpace(val)
		}
	}
	out := slices.Clone(sets)
	add := func(flag, param, val string) error {
		if !declared(param) {
			return invalidf("--%s: profile %s has no parameter %s, so it cannot take this flag (its load is set by the profile: joulebench profiles show %s)", flag, profile, param, profile)
		}
		if old, ok := given[param]; ok {
			if old != val {
				return invalidf("--%s %s and --set %s=%s disagree: give one", flag, val, param, old)
			}
			return nil
		}
		given[param] = val
		out = append(out, param+"="+val)
		return nil
	}
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	for _, f := range vllmLoadFlags {
		var err error
		switch f.flag {
		case "request-rate":
			err = mapRate(v, f.param, add, given, declared)
		case "burstiness":
			if !v.burstSet {
				continue
			}
			if !(v.burstiness > 0) || math.IsInf(v.burstiness, 0) {
				return nil, invalidf("--burstiness %v: must be a finite number > 0 (1 is poisson)", v.burstiness)
			}
			if !(v.rateSet && !math.IsInf(v.rate, 1)) && given["mode"] != "gamma" {
				return nil, invalidf("--burstiness applies to a finite --request-rate (as in vLLM), or to --set mode=gamma with a rate")
			}
			err = add(f.flag, f.param, num(v.burstiness))
		case "max-concurrency":
			if !v.maxSet {
				continue
			}
			if v.maxConcurrency < 1 {
				return nil, invalidf("--max-concurrency %d: at least 1", v.maxConcurrency)
			}
			err = add(f.flag, f.param, strconv.Itoa(v.maxConcurrency))
		case "num-prompts":
			if !v.numSet {
				continue
			}
			if v.numPrompts < 1 {
				return nil, invalidf("--num-prompts %d: at least 1", v.numPrompts)
			}
			err = add(f.flag, f.param, strconv.Itoa(v.numPrompts))
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// mapRate maps --request-rate onto rate and, unless --set mode is given,
// mode (poisson; gamma with a --burstiness other than 1; unlimited for
// inf).
func mapRate(v loadFlagValues, param string, add func(flag, param, val string) error, given map[string]string, declared func(string) bool) error {
	if !v.rateSet {
		return nil
	}
	if !(v.rate > 0) {
		return invalidf("--request-rate %v: must be > 0 requests/s (inf: all at once)", v.rate)
	}
	_, modeGiven := given["mode"]
	if math.IsInf(v.rate, 1) {
		if !declared("mode") || modeGiven {
			return nil
		}
		return add("request-rate", "mode", "unlimited")
	}
	if err := add("request-rate", param, strconv.FormatFloat(v.rate, 'g', -1, 64)); err != nil {
		return err
	}
	if !declared("mode") || modeGiven {
		return nil
	}
	mode := "poisson"
	if v.burstSet && v.burstiness != 1 {
		mode = "gamma"
	}
	return add("request-rate", "mode", mode)
}
