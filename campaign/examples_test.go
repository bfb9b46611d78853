package campaign

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// examples/gpu-settings.yaml (docs/methodology.md's GPU-settings example
// on the simulator's hardware model) plans seven runs: three power caps at
// the default clock and four locked clocks at the default cap, each on
// the H100 preset with Llama 3.1 8B.
func TestGPUSettingsExamplePlan(t *testing.T) {
	src, err := os.ReadFile("../examples/gpu-settings.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(src, "../examples/gpu-settings.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan := c.Expand()
	if len(plan.Runs) != 7 || plan.Excluded != 8 {
		t.Fatalf("%d runs, %d excluded; want 7 and 8", len(plan.Runs), plan.Excluded)
	}
	var settings []string
	for _, r := range plan.Runs {
		settings = append(settings, r.Axes["gpu_power_limit_w"]+"W@"+r.Axes["gpu_clocks"])
		if a := strings.Join(r.Args("out"), " "); !strings.Contains(a, "--sim-gpu h100-sxm") || !strings.Contains(a, "--sim-model llama-3.1-8b") {
			t.Errorf("run %s: args %q lack the hardware preset", r.ID, a)
		}
	}
	slices.Sort(settings)
	want := []string{"300W@1980,1980", "450W@1980,1980", "700W@1000,1000", "700W@1500,1500", "700W@1980,1980", "700W@400,400", "700W@700,700"}
	if !slices.Equal(settings, want) {
		t.Errorf("settings %v, want %v", settings, want)
	}
}
