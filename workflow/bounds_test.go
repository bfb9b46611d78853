package workflow_test

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/workflow"
)

// A parameter's declared min and max bound its default and every --set
// value at load, before anything runs; a float parameter is finite (NaN
// used to reach run.json and fail there with a JSON encoder's message).
func TestParameterBounds(t *testing.T) {
	src := "name: t\nparameters:\n" +
		"  frac: {type: float, default: 0.1, min: 0, max: 1}\n" +
		"  n: {type: int, default: 3, min: 1}\n" +
		"  d: {type: duration, default: 1s, min: 0.5}\n" +
		"  free: {type: float, default: 2}\n" +
		"steps: [{kind: mark}]\nmetrics: [{name: m, expr: \"1\"}]\n"
	reg := testRegistry(t)
	cases := []struct {
		name string
		set  map[string]string
		want string // "" for none
	}{
		{"defaults", nil, ""},
		{"bounds inclusive", map[string]string{"frac": "1", "n": "1", "d": "500ms"}, ""},
		{"below min", map[string]string{"frac": "-1"}, "--set: frac: parameter of type float: -1 is below the minimum 0"},
		{"above max", map[string]string{"frac": "1.5"}, "--set: frac: parameter of type float: 1.5 is above the maximum 1"},
		{"int below min", map[string]string{"n": "0"}, "--set: n: parameter of type int: 0 is below the minimum 1"},
		{"duration below min", map[string]string{"d": "100ms"}, "--set: d: parameter of type duration: 100ms is below the minimum 0.5"},
		{"NaN", map[string]string{"free": "NaN"}, `--set: free: parameter of type float: "NaN" is not a finite number`},
		{"Inf", map[string]string{"free": "+Inf"}, `--set: free: parameter of type float: "+Inf" is not a finite number`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := workflow.Load([]byte(src), "t.yaml", workflow.Options{Registry: reg, Overrides: c.set})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
	// A default outside its own bounds is a load error at the default.
	bad := strings.Replace(src, "default: 3, min: 1", "default: 0, min: 1", 1)
	_, err := workflow.Load([]byte(bad), "t.yaml", workflow.Options{Registry: reg})
	if err == nil || !strings.Contains(err.Error(), "t.yaml:4:") || !strings.Contains(err.Error(), "default 0 is below the minimum 1") {
		t.Errorf("default out of bounds: %v", err)
	}
}

// summary: takes true, false or applicable, and nothing else.
func TestSummaryMode(t *testing.T) {
	for _, c := range []struct {
		in   string
		want workflow.SummaryMode
		err  bool
	}{{"true", workflow.SummaryAlways, false}, {"false", workflow.SummaryNever, false}, {"applicable", workflow.SummaryApplicable, false}, {"sometimes", "", true}} {
		var m struct {
			S workflow.SummaryMode `yaml:"summary"`
		}
		err := yaml.Unmarshal([]byte("summary: "+c.in), &m)
		if (err != nil) != c.err || m.S != c.want {
			t.Errorf("summary: %s -> %q, %v", c.in, m.S, err)
		}
	}
}
