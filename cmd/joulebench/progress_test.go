package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Under a real terminal (a pty from script(1)), the formal stage and the
// release show their progress at least once a second: done, in flight,
// failed, tokens/s and the elapsed time (the bar used to stop after the
// warm-up: a finished progress bar draws nothing more).
func TestRunProgressUnderPTY(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for several seconds")
	}
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) not found: no pty to test under")
	}
	dir := t.TempDir()
	args := []string{os.Args[0], "run", "benchmark-1.5", "--out", filepath.Join(dir, "run"), "--set", "baseline=1s", "--set", "release_hold=1s",
		"--set", "release_max_wait=8s", "--set", "sample_interval=100ms", "--set", "request_count=24", "--set", "accept_unsteady=true", "--set", "warmup_requests=2"}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	cmd := exec.Command(script, "-qefc", strings.Join(quoted, " "), "/dev/null")
	cmd.Env = append(os.Environ(), "JOULEBENCH_TEST_AS_MAIN=1")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	elapsed := regexp.MustCompile(`\| (\d+\.\d) s\b`)
	draws := map[string][]float64{}
	for _, l := range regexp.MustCompile(`[\r\n]`).Split(string(out), -1) {
		l = strings.TrimPrefix(l, "\x1b[K")
		stage, _, ok := strings.Cut(l, " | ")
		if !ok || (stage != "formal" && stage != "release") {
			continue
		}
		m := elapsed.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if stage == "formal" && !strings.Contains(l, " done, ") {
			t.Errorf("formal line without its counts: %q", l)
		}
		s, _ := strconv.ParseFloat(m[1], 64)
		draws[stage] = append(draws[stage], s)
	}
	for _, stage := range []string{"formal", "release"} {
		d := draws[stage]
		if len(d) < 2 || d[len(d)-1] < 1 {
			t.Fatalf("%s: drawn at %v, want draws over at least a second\n%q", stage, d, out)
		}
		for i := 1; i < len(d); i++ {
			if gap := d[i] - d[i-1]; gap > 1.05 {
				t.Errorf("%s: %.1f s without a draw (at %v)", stage, gap, d)
			}
		}
	}
	if !strings.Contains(string(out), "tok/s") || !strings.Contains(string(out), "in flight") {
		t.Errorf("no tokens/s or in-flight count drawn:\n%q", out)
	}
}
