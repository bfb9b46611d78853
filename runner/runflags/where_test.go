package runflags

import (
	"reflect"
	"slices"
	"testing"

	"github.com/spf13/pflag"
)

// A job over several nodes gives its run the spec and, on the command
// line, where power is read: those replace the spec's source; a flag not
// given leaves the spec's value.
func TestMeasureHereReplacesThePowerSource(t *testing.T) {
	f := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.StringArray("telemetry", nil, "")
	f.StringArray("agent", nil, "")
	f.String("dcgm-url", "", "")
	if err := f.Parse([]string{"--telemetry", "agent", "--agent", "http://n1:4780", "--agent", "http://n2:4780"}); err != nil {
		t.Fatal(err)
	}
	s := Settings{Telemetry: map[string]any{"telemetry": []string{"nvml"}, "dcgm-url": "http://h:9400/metrics"}}
	s.MeasureHere(f)
	want := map[string]any{"telemetry": []string{"agent"}, "agent": []string{"http://n1:4780", "http://n2:4780"}, "dcgm-url": "http://h:9400/metrics"}
	if !reflect.DeepEqual(s.Telemetry, want) {
		t.Errorf("telemetry %v, want %v", s.Telemetry, want)
	}
	if !slices.Contains(s.Changed, "telemetry") || !slices.Contains(s.Changed, "agent") {
		t.Errorf("changed %v: the power source flags given here count as given", s.Changed)
	}
	// Nothing given: the spec's source stays.
	g := pflag.NewFlagSet("run", pflag.ContinueOnError)
	g.StringArray("telemetry", nil, "")
	s = Settings{Telemetry: map[string]any{"telemetry": []string{"nvml"}}}
	s.MeasureHere(g)
	if !reflect.DeepEqual(s.Telemetry, map[string]any{"telemetry": []string{"nvml"}}) || len(s.Changed) != 0 {
		t.Errorf("nothing given changed the spec: %v %v", s.Telemetry, s.Changed)
	}
}
