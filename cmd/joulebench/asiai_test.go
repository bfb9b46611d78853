package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

// The asiai workflow against two engines in one command: the simulator and
// llama-server (the real engine; where it is absent and not required, a
// second simulator). Each engine gets its own archive with its own power
// monitor, and a table compares them side by side. max_tokens is 128: the
// tiny model decodes ~4,000 tok/s on an idle core, so 32 tokens took ~8 ms,
// and asiai counts a generation under 10 ms as 0 tok/s (128 take ~32 ms).
func TestAsiaiTwoEngines(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two engines")
	}
	tmp := t.TempDir()
	parent := filepath.Join(tmp, "asiai")
	args := []string{"run", "asiai", "--out", parent, "--no-progress", "--engine", "sim",
		"--set", "request_count=2", "--set", "runs=3", "--set", "max_tokens=128"}
	second := "sim"
	if os.Getenv("JOULEBENCH_LLAMA_SERVER") != "" || os.Getenv("JOULEBENCH_REQUIRE_ENGINES") == "1" {
		bin := llamaServer(t)
		second = "llamacpp"
		args = append(args, "--engine", "llamacpp", "--engine-bin", bin, "--model-file", tinyModel(t, tmp),
			"--max-model-len", "1024", "--slots", "2")
	} else {
		args = append(args, "--engine", "sim")
	}
	out, errOut, code := runCLI(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for i, kind := range []string{"sim", second} {
		dir := filepath.Join(parent, []string{"1-", "2-"}[i]+kind)
		run, err := archive.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if run.Meta.Status != record.StatusComplete || run.Results == nil {
			t.Fatalf("%s: status %q, results %v", dir, run.Meta.Status, run.Results != nil)
		}
		if run.Meta.Profile.Name != "asiai" || run.Meta.Engine.Kind != kind {
			t.Errorf("%s: profile %q engine %q", dir, run.Meta.Profile.Name, run.Meta.Engine.Kind)
		}
		// Its own monitor: the power samples of this run lie within its own
		// run, after its engine started.
		if started, ok := run.Meta.EventByName("engine_started"); ok && len(run.Power) > 0 && run.Power[0].T < started {
			t.Errorf("%s: power sampled before its engine started", dir)
		}
		v := run.Results.Values["tok_per_sec"]
		if f, ok := v.Value.(float64); !ok || f <= 0 {
			t.Errorf("%s: tok_per_sec = %+v", dir, v)
		}
		if n := run.Results.Values["run_count"].Value; n != 6.0 && n != int64(6) {
			t.Errorf("%s: run_count = %v, want 2 prompts × 3 runs", dir, n)
		}
	}
	for _, want := range []string{"engines side by side", "sim", second, "stability", "Winner by median tok/s", "vs winner", "gates failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
