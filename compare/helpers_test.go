package compare

import (
	"sort"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

func builtin(t *testing.T) *Profile {
	t.Helper()
	p, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// spec describes a synthetic evaluated run.
type spec struct {
	id, scenario, model, engine, params string
	profile                             string  // default benchmark-1.5
	steady, full, tokens                float64 // < 0: not applicable
	startup, release                    float64 // energies in J
	failed                              int     // failed formal requests
	failCheck                           bool    // a check of severity fail failed
	notSteady, notClosed, incomplete    bool
	values                              map[string]any // extra results
}

func metric(v any, unit string) record.Result {
	return record.Result{Kind: "metric", Value: v, Unit: unit}
}

func check(passed bool, severity, message string) record.Result {
	return record.Result{Kind: "check", Value: passed, Passed: &passed, Severity: severity, Message: message}
}

func na(unit, note string) record.Result {
	return record.Result{Kind: "metric", Value: nil, Unit: unit, Note: "not applicable: " + note}
}

// mk builds an evaluated run as compare sees it.
func mk(s spec) Run {
	prof := s.profile
	if prof == "" {
		prof = "benchmark-1.5"
	}
	labels := map[string]string{}
	if s.scenario != "" {
		labels["scenario"] = s.scenario
	}
	if s.params != "" {
		labels["model_params"] = s.params
	}
	m := record.Meta{FormatVersion: 1, RunID: s.id, Simulated: true, Profile: record.ProfileRef{Name: prof},
		Engine: record.EngineInfo{Kind: s.engine, Model: s.model}, Status: record.StatusComplete, Labels: labels}
	if s.incomplete {
		m.Status, m.Reason = record.StatusFailed, "engine exited during the formal stage"
	}
	res := &record.Results{FormatVersion: 1, RunID: s.id, Simulated: true, Profile: record.ProfileRef{Name: prof},
		Values: map[string]record.Result{}}
	if prof == "benchmark-1.5" {
		if s.steady >= 0 && !s.notSteady {
			res.Values["steady_state_j_per_token"] = metric(s.steady, "J/token")
		} else {
			res.Values["steady_state_j_per_token"] = na("J/token", "steady state not reached (see check steady_state_reached)")
		}
		if s.full >= 0 {
			res.Values["full_lifecycle_j_per_token"] = metric(s.full, "J/token")
		}
		if s.tokens >= 0 {
			res.Values["formal_output_tokens"] = metric(int64(s.tokens), "tokens")
		}
		res.Values["startup_energy_j"] = metric(s.startup, "J")
		res.Values["release_energy_j"] = metric(s.release, "J")
		res.Values["failed_requests"] = metric(int64(s.failed), "requests")
		res.Values["steady_state_reached"] = check(!s.notSteady, "warn",
			"steady state not reached; steady-state J/token is excluded from cross-model comparison: best CV 0.0412")
		res.Values["release_closed"] = check(!s.notClosed, "exclude",
			"release did not return to baseline within the maximum wait; the run is excluded from formal results")
		if s.failCheck {
			res.Values["tokens_match"] = check(false, "fail", "output tokens do not match the request set")
		}
		if s.notClosed {
			res.Excluded, res.ExcludeReason = true, "check release_closed failed"
		}
	}
	for k, v := range s.values {
		res.Values[k] = metric(v, "")
	}
	for k := range res.Values {
		res.Order = append(res.Order, k)
	}
	sort.Strings(res.Order)
	return Run{Dir: "runs/" + s.id, Meta: m, Results: res}
}
