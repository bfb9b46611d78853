package workflow_test

import (
	"strings"
	"testing"

	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/workflow"
)

// The built-in benchmark-1.5 table: five rows; the baseline and the
// warm-up (inside startup) are not in the total.
func TestStageEnergyBuiltin(t *testing.T) {
	src, err := profiles.Read("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	l, err := workflow.Load(src, "benchmark-1.5.yaml", workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range l.Profile.StageEnergy {
		got = append(got, s.Stage+map[bool]string{true: "+", false: ""}[s.Counted()])
	}
	if strings.Join(got, " ") != "baseline startup+ warmup formal+ release+" {
		t.Errorf("rows = %v", got)
	}
}

// Errors in the section are positioned like any formula's.
func TestStageEnergyErrors(t *testing.T) {
	src, err := profiles.Read("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	base := string(src)
	for _, c := range []struct{ old, new, want string }{
		{"energy: e_release}", "energy: e_relase}", "stage_release_energy_j.expr: unknown name e_relase"},
		{"{stage: formal, start: formal_start", "{stage: formal, stat: formal_start", `unknown key "stat"`},
		{"within: startup", "within: nowhere", `within: "nowhere" is not another stage`},
		{"{stage: formal,", "{stage: startup,", `stage "startup" is listed twice`},
	} {
		if !strings.Contains(base, c.old) {
			t.Fatalf("no %q in the profile", c.old)
		}
		_, err := workflow.Load([]byte(strings.Replace(base, c.old, c.new, 1)), "x.yaml", workflow.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "x.yaml:") {
			t.Errorf("%s → %s: error %v, want %q with a position", c.old, c.new, err, c.want)
		}
	}
}
