package steps

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/workflow"
)

func TestRegistryHoldsEveryKind(t *testing.T) {
	r := Registry()
	want := "archive,baseline,monitor,observe,preflight,release,requests,start_engine,verify_engine,warmup"
	if got := strings.Join(r.Names(), ","); got != want {
		t.Fatalf("kinds = %s, want %s", got, want)
	}
	// Each kind's config type, and every default passes its own Validate
	// (a profile that names a kind without `with:` must load).
	types := map[string]any{
		"archive": &ArchiveConfig{}, "baseline": &BaselineConfig{}, "monitor": &MonitorConfig{},
		"preflight": &PreflightConfig{}, "release": &ReleaseConfig{}, "requests": &RequestsConfig{},
		"start_engine": &StartEngineConfig{}, "verify_engine": &VerifyEngineConfig{}, "warmup": &WarmupConfig{},
		"observe": &ObserveConfig{},
	}
	for _, n := range r.Names() {
		k, _ := r.Lookup(n)
		if k.Doc == "" {
			t.Errorf("%s: no doc (profiles builtins lists it)", n)
		}
		cfg, _ := r.NewConfig(n)
		if reflect.TypeOf(cfg) != reflect.TypeOf(types[n]) {
			t.Errorf("%s: config %T, want %T", n, cfg, types[n])
		}
		if v, ok := cfg.(workflow.Validator); ok {
			if err := v.Validate(); err != nil {
				t.Errorf("%s: defaults fail Validate: %v", n, err)
			}
		}
	}
	if Registry() == r {
		t.Error("Registry must build a new registry each call")
	}
}

func TestConfigValidate(t *testing.T) {
	d := func(s string) workflow.Duration {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return workflow.Duration(v)
	}
	neg := -0.5
	hot := 2.5
	cases := []struct {
		name string
		cfg  workflow.Validator
		want string // "" valid, else a fragment of the error
	}{
		{"baseline zero", &BaselineConfig{}, "duration must be positive"},
		{"baseline ok", &BaselineConfig{Duration: d("1s")}, ""},
		{"monitor 5ms", &MonitorConfig{Interval: d("5ms")}, "at least 10ms, got 5ms"},
		{"monitor 10ms", &MonitorConfig{Interval: d("10ms")}, ""},
		{"start no timeout", &StartEngineConfig{}, "ready_timeout must be positive"},
		{"verify unknown", &VerifyEngineConfig{Check: []string{"model", "colour"}}, `unknown identity check "colour"`},
		{"preflight unknown", &PreflightConfig{Check: []string{"network"}}, `unknown preflight check "network"`},
		{"preflight negative", &PreflightConfig{MinFreeDiskMB: -1}, "must not be negative"},
		{"warmup negative", &WarmupConfig{Requests: -1}, "must not be negative"},
		{"release tolerance 0", &ReleaseConfig{Tolerance: 0, Hold: d("1s"), MaxWait: d("2s")}, "tolerance must be a fraction in (0, 1), got 0"},
		{"release tolerance 1", &ReleaseConfig{Tolerance: 1, Hold: d("1s"), MaxWait: d("2s")}, "tolerance must be a fraction"},
		{"release max_wait < hold", &ReleaseConfig{Tolerance: 0.05, Hold: d("30s"), MaxWait: d("10s")}, "max_wait (10s) must be at least hold (30s)"},
		{"release mem negative", &ReleaseConfig{Tolerance: 0.05, MemToleranceMB: -1}, "mem_tolerance_mb must not be negative"},
		{"release ok", &ReleaseConfig{Tolerance: 0.05, Hold: d("1s"), MaxWait: d("1s")}, ""},
		{"requests unknown mode", &RequestsConfig{Mode: "burst", Repeat: 1}, `unknown mode "burst"`},
		{"requests concurrency 0", &RequestsConfig{Mode: "concurrency", Repeat: 1}, "concurrency ≥ 1"},
		{"requests poisson no rate", &RequestsConfig{Mode: "poisson", Repeat: 1}, "rate > 0"},
		{"requests repeat 0", &RequestsConfig{Mode: "unlimited"}, "repeat must be at least 1"},
		{"requests negative count", &RequestsConfig{Mode: "unlimited", Repeat: 1, Count: -1}, "must not be negative"},
		{"requests cold temperature", &RequestsConfig{Mode: "unlimited", Repeat: 1, Temperature: &neg}, "temperature must be in [0, 2], got -0.5"},
		{"requests hot temperature", &RequestsConfig{Mode: "unlimited", Repeat: 1, Temperature: &hot}, "got 2.5"},
		{"requests negative max_requests", &RequestsConfig{Mode: "unlimited", Repeat: 1, MaxRequests: -1}, "max_requests"},
		{"requests ok", &RequestsConfig{Mode: "poisson", Rate: 2, Repeat: 3}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("unexpected: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("err = %v, want …%s…", err, c.want)
			}
		})
	}
}
