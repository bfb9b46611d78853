package runflags

import (
	"bytes"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/engines/all"
	telall "github.com/joulebench/joulebench/telemetry/all"
)

func testRegistries() Registries {
	return Registries{Engines: all.Registry(), Telemetry: telall.Registry()}
}

// manyFlags sets flags of every kind: lists, numbers (an infinite rate),
// a duration, an engine setting, power source flags, and secrets.
var manyFlags = []string{
	"--engine", "vllm", "--model", "org/m", "--tp", "2", "--seed", "7", "--engine-bin", "/opt/vllm",
	"--scrape-interval", "250ms", "--metrics-family", "vllm:num_requests_running", "--health-generate",
	"--dataset", "random", "--random-input-len", "100", "--random-range-ratio", "0.5",
	"--request-rate", "inf", "--max-concurrency", "8", "--label", "scenario=chat", "--set", "window=5", "--set", "max_tokens=16",
	"--telemetry", "nvml", "--gpus", "0,1", "--gpu-power-limit", "300", "--format", "json", "--all",
	"--secret-name", "pat", "--log-level", "debug",
	// secrets
	"--api-key", "k3y-secret", "--engine-url", "http://u:pw-secret@127.0.0.1:1", "--engine-env", "HF_TOKEN=tok-secret",
	"--engine-arg", "--api-key=arg-secret", "--extra-body", `{"token":"body-secret"}`, "--hf-endpoint", "https://u:hf-secret@hub",
	"--dcgm-url", "http://u:dcgm-secret@n1:9400/metrics", "--prometheus-url", "http://u:prom-secret@p:9090",
}

var secretValues = []string{"k3y-secret", "pw-secret", "tok-secret", "arg-secret", "body-secret", "hf-secret", "dcgm-secret", "prom-secret"}

func parse(t *testing.T, args ...string) Settings {
	t.Helper()
	s, err := Parse("benchmark-1.5", args, testRegistries())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBuildReadsEveryKind(t *testing.T) {
	s := parse(t, manyFlags...)
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"engines", s.Engines, []string{"vllm"}},
		{"tp", s.TP, 2},
		{"seed", s.Seed, int64(7)},
		{"rate", float64(s.RequestRate), math.Inf(1)},
		{"scrape interval", s.ScrapeInterval, 250 * time.Millisecond},
		{"scrape interval set", s.ScrapeIntervalSet, true},
		{"engine setting", s.EngineSettings["health-generate"], "true"},
		{"telemetry", s.Telemetry["telemetry"], []string{"nvml"}},
		{"nvml gpus", s.Telemetry["gpus"], "0,1"},
		{"dcgm", s.Telemetry["dcgm-url"], []string{"http://u:dcgm-secret@n1:9400/metrics"}},
		{"sets", s.Sets, []string{"window=5", "max_tokens=16"}},
		{"labels", s.Labels, []string{"scenario=chat"}},
		{"api key", s.APIKey, "k3y-secret"},
		{"engine env", s.EngineEnv, []string{"HF_TOKEN=tok-secret"}},
		{"log level", s.LogLevel, "debug"},
		{"defaults: quick", s.Quick, true},
		{"defaults: burstiness", float64(s.Burstiness), 1.0},
		{"no rate ratio set", s.RandomRangeRatioSet, true},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: %#v, want %#v", tc.name, tc.got, tc.want)
		}
	}
	if !slices.Contains(s.Changed, "request-rate") || slices.Contains(s.Changed, "burstiness") {
		t.Errorf("changed %v: want request-rate, not burstiness", s.Changed)
	}
}

// Every flag the run command defines lands in Settings: a field of the
// table, --set and --label, an engine setting or a power source's flag
// (--config is read before the flags: it is not a run's).
func TestEveryFlagHasAField(t *testing.T) {
	f := pflag.NewFlagSet("run", pflag.ContinueOnError)
	Define(f, testRegistries())
	Global(f)
	var s Settings
	known := map[string]bool{"set": true, "label": true, "config": true}
	for _, fd := range s.fields() {
		known[fd.flag] = true
	}
	for _, st := range all.Registry().Declared() {
		known[st.Flag] = true
	}
	telemetryFlags(testRegistries()).VisitAll(func(fl *pflag.Flag) { known[fl.Name] = true })
	f.VisitAll(func(fl *pflag.Flag) {
		if !known[fl.Name] {
			t.Errorf("--%s has no field in Settings", fl.Name)
		}
	})
}

func TestSpecFileRoundTrip(t *testing.T) {
	s := parse(t, manyFlags...)
	b, err := Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range secretValues {
		if bytes.Contains(b, []byte(v)) {
			t.Errorf("the spec file holds the secret %q:\n%s", v, b)
		}
	}
	got, err := Decode(bytes.NewReader(b), "s.json", testRegistries())
	if err != nil {
		t.Fatal(err)
	}
	// The secrets come back from the run's own flags and environment.
	secrets := pflag.NewFlagSet("run", pflag.ContinueOnError)
	Define(secrets, testRegistries())
	Global(secrets)
	if err := secrets.Parse(manyFlags); err != nil {
		t.Fatal(err)
	}
	got.ReadSecrets(Flags{F: secrets}, testRegistries())
	if !reflect.DeepEqual(got, s) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, s)
	}
	// The same spec runs the same: the runner.Spec of both.
	want, err := s.Spec()
	if err != nil {
		t.Fatal(err)
	}
	have, err := got.Spec()
	if err != nil {
		t.Fatal(err)
	}
	want.Changed, have.Changed = nil, nil
	if !reflect.DeepEqual(have, want) {
		t.Errorf("runner.Spec:\n got %+v\nwant %+v", have, want)
	}
}

func TestDecodeRefuses(t *testing.T) {
	good, err := Marshal(parse(t, "--telemetry", "nvml"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) string {
		if !bytes.Contains(good, []byte(old)) {
			t.Fatalf("no %q in the spec", old)
		}
		return strings.Replace(string(good), old, new, 1)
	}
	for _, tc := range []struct{ name, src, want string }{
		{"unknown field", edit(`"version": 1,`, `"version": 1, "bogus": 2,`), `unknown field "bogus"`},
		{"secret field", edit(`"version": 1,`, `"version": 1, "api_key": "k",`), `unknown field "api_key"`},
		{"version", edit(`"version": 1,`, `"version": 2,`), "version 2"},
		{"trailing data", string(good) + "{}", "data after the JSON object"},
		{"wrong type", edit(`"tp": 1,`, `"tp": "one",`), "s.json"},
		{"unknown engine setting", edit(`"engine_settings": {`, `"engine_settings": {"bogus": "x",`), `"bogus" is no engine's setting`},
		{"unknown power source flag", edit(`"telemetry": {`, `"telemetry": {"bogus": "x",`), `"bogus" is no power source's flag`},
		{"secret power source flag", edit(`"telemetry": {`, `"telemetry": {"dcgm-url": ["http://u:p@h"],`), `"dcgm-url" may hold a secret`},
		{"power source flag type", edit(`"gpus": ""`, `"gpus": 3`), "gpus: want a string"},
		{"not a number", edit(`"request_rate": 0,`, `"request_rate": "fast",`), `"fast" is not a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.src), "s.json", testRegistries())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "s.json") {
				t.Fatalf("error %v, want it to name s.json and contain %q", err, tc.want)
			}
		})
	}
}

func TestSpecMapsLoadAndRuns(t *testing.T) {
	s := parse(t, "--max-concurrency", "4", "--runs", "3", "--set", "window=5")
	spec, err := s.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if !spec.Load.MaxConcurrencySet || spec.Load.MaxConcurrency != 4 || spec.Load.RateSet || spec.Load.NumPromptsSet {
		t.Errorf("load %+v: want max concurrency 4 alone given", spec.Load)
	}
	// --runs 3 is --set runs=3, after the --set values given.
	if want := []string{"window=5", "runs=3"}; !slices.Equal(spec.Sets, want) {
		t.Errorf("sets %q, want %q", spec.Sets, want)
	}
	if !spec.Changed("max-concurrency") || spec.Changed("tp") {
		t.Error("Changed: want max-concurrency given, tp not")
	}
	if _, err := parse(t, "--runs", "0").Spec(); err == nil || !strings.Contains(err.Error(), "--runs 0") {
		t.Errorf("--runs 0: %v", err)
	}
}

func TestNotWithSpec(t *testing.T) {
	f := pflag.NewFlagSet("run", pflag.ContinueOnError)
	Define(f, testRegistries())
	f.String("spec", "", "")
	if err := f.Parse([]string{"--spec", "s.json", "--out", "d", "--api-key", "k", "--dcgm-url", "http://h", "--tp", "2", "--set", "a=1"}); err != nil {
		t.Fatal(err)
	}
	if got, want := NotWithSpec(f, "out"), []string{"--set", "--tp"}; !slices.Equal(got, want) {
		t.Errorf("refused %q, want %q", got, want)
	}
}
