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
func TestApplyWhereFlagsReplacesThePowerSource(t *testing.T) {
	f := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.StringArray("telemetry", nil, "")
	f.StringArray("agent", nil, "")
	f.String("dcgm-url", "", "")
	if err := f.Parse([]string{"--telemetry", "agent", "--agent", "http://n1:4780", "--agent", "http://n2:4780"}); err != nil {
		t.Fatal(err)
	}
	s := Settings{Telemetry: map[string]any{"telemetry": []string{"nvml"}, "dcgm-url": "http://h:9400/metrics"}}
	s.ApplyWhereFlags(f)
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
	s.ApplyWhereFlags(g)
	if !reflect.DeepEqual(s.Telemetry, map[string]any{"telemetry": []string{"nvml"}}) || len(s.Changed) != 0 {
		t.Errorf("nothing given changed the spec: %v %v", s.Telemetry, s.Changed)
	}
}

// A job that starts engine parts on its nodes gives its run the
// deployment file it wrote there (--deployment): it replaces the spec's
// and counts as given; not given, the spec's stays.
func TestApplyWhereFlagsTakesTheDeployment(t *testing.T) {
	f := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.String("deployment", "", "")
	f.StringArray("telemetry", nil, "")
	if err := f.Parse([]string{"--deployment", "/shared/out/slurm/x.deployment.yaml", "--telemetry", "agent"}); err != nil {
		t.Fatal(err)
	}
	s := Settings{Deployment: "spec.yaml"}
	s.ApplyWhereFlags(f)
	if s.Deployment != "/shared/out/slurm/x.deployment.yaml" || !slices.Contains(s.Changed, "deployment") {
		t.Errorf("deployment %q, changed %v: want the job's file, given", s.Deployment, s.Changed)
	}
	if _, ok := s.Telemetry["deployment"]; ok {
		t.Errorf("--deployment went to the power source's flags: %v", s.Telemetry)
	}
	g := pflag.NewFlagSet("run", pflag.ContinueOnError)
	g.String("deployment", "", "")
	s = Settings{Deployment: "spec.yaml"}
	s.ApplyWhereFlags(g)
	if s.Deployment != "spec.yaml" || len(s.Changed) != 0 {
		t.Errorf("nothing given changed the spec: %q %v", s.Deployment, s.Changed)
	}
}
