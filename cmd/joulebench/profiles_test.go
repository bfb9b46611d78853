package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const sampleRun = "../../archive/testdata/sample-run"

// sampleOK lets the sample run pass its fail checks: 1 of its 7 formal
// requests failed (14 %), above the default max_failed_fraction of 10 %.
const sampleOK = "max_failed_fraction=0.2"

// scaledRun copies an archive, scaling power and energy by k (k = 0.9: the
// same run on a GPU that draws 10 % less, so every J/token is 10 % lower).
func scaledRun(t *testing.T, src string, k float64) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "baseline")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "power.csv" {
			lines := strings.Split(string(b), "\n")
			for i := 1; i < len(lines); i++ {
				f := strings.Split(lines[i], ",")
				for _, j := range []int{2, 3} {
					if len(f) > j && f[j] != "" {
						v, err := strconv.ParseFloat(f[j], 64)
						if err != nil {
							t.Fatal(err)
						}
						f[j] = strconv.FormatFloat(v*k, 'g', -1, 64)
					}
				}
				lines[i] = strings.Join(f, ",")
			}
			b = []byte(strings.Join(lines, "\n"))
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// Issue 16, done when: against itself the gate passes; against a baseline
// 10 % better (J/token × 0.9, so this run is 1/0.9 - 1 = +11.1 % worse,
// beyond the 5 % tolerance) it fails with exit 3 and the table shows why.
func TestBaselineGate(t *testing.T) {
	out, errOut, code := runCLI(t, "analyze", sampleRun, "--set", sampleOK, "--baseline", sampleRun)
	if code != exitOK || !strings.Contains(out, "full_lifecycle_j_per_token_vs_baseline │ pass") {
		t.Fatalf("against itself: code %d, want 0:\n%s%s", code, out, errOut)
	}
	better := scaledRun(t, sampleRun, 0.9)
	out, errOut, code = runCLI(t, "analyze", sampleRun, "--set", sampleOK, "--baseline", better)
	if code != exitChecks {
		t.Fatalf("against a 10 %% better baseline: code %d, want %d:\n%s%s", code, exitChecks, out, errOut)
	}
	for _, want := range []string{"+11.1 %", "full_lifecycle_j_per_token_vs_baseline │ FAIL", "change 11.1 %, tolerance 5 %"} {
		if !strings.Contains(out+errOut, want) {
			t.Errorf("output lacks %q:\n%s%s", want, out, errOut)
		}
	}
	// A looser tolerance (a parameter) lets it pass: 11.1 % <= 15 %.
	if _, _, code := runCLI(t, "analyze", sampleRun, "--set", sampleOK, "--baseline", better, "--set", "energy_tolerance=0.15"); code != exitOK {
		t.Errorf("energy_tolerance=0.15: code %d, want 0", code)
	}
}

func TestBaselineNotComparable(t *testing.T) {
	other := scaledRun(t, sampleRun, 1)
	meta := filepath.Join(other, "run.json")
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	var model string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"model":`) {
			model = l
			break
		}
	}
	if model == "" {
		t.Fatal("sample run.json has no model")
	}
	if err := os.WriteFile(meta, []byte(strings.Replace(string(b), model, `    "model": "another-model",`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "analyze", sampleRun, "--set", sampleOK, "--baseline", other)
	if code != exitInvalid || !strings.Contains(errOut, `model differs`) {
		t.Errorf("code %d, want %d and the field that differs: %s", code, exitInvalid, errOut)
	}
	if _, _, code := runCLI(t, "analyze", sampleRun, "--set", sampleOK, "--baseline", other, "--baseline-force"); code != exitOK {
		t.Errorf("--baseline-force: code %d, want 0", code)
	}
}

// Issue 16, done when: a five-line profile that extends benchmark-1.5 and
// adds a metric and a check validates, re-analyzes an archived run, is
// found by name in the user directory, and its errors point into it.
func TestUserProfileByName(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	dir := filepath.Join(cfg, "joulebench", "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := "name: mine\nextends: benchmark-1.5\nmetrics: [{name: tokens_per_kj, unit: token/kJ, expr: 1000 / full_lifecycle_j_per_token}]\nchecks: [{name: efficient, expr: tokens_per_kj > 1, severity: warn}]\n"
	if err := os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runCLI(t, "validate", "mine"); code != exitOK || !strings.Contains(out, "profile mine is valid") {
		t.Errorf("validate mine: code %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := runCLI(t, "analyze", sampleRun, "--set", sampleOK, "--profile", "mine", "--set", "release_hold=5s", "--all"); code != exitOK || !strings.Contains(out, "tokens_per_kj") {
		t.Errorf("analyze --profile mine: code %d\n%s%s", code, out, errOut)
	}
	out, _, _ := runCLI(t, "profiles", "list")
	if !strings.Contains(out, "mine") || !strings.Contains(out, filepath.Join(dir, "mine.yaml")) || !strings.Contains(out, "extends benchmark-1.5.yaml (built-in)") {
		t.Errorf("profiles list:\n%s", out)
	}
	out, _, _ = runCLI(t, "profiles", "show", "mine", "--resolved")
	if !strings.Contains(out, "# from "+filepath.Join(dir, "mine.yaml")+":3") || !strings.Contains(out, "# from benchmark-1.5.yaml (built-in):") {
		t.Errorf("show --resolved lacks provenance:\n%s", out)
	}
	// A typo in an expression: mine.yaml line 3, column 62 ("full_lifecyle" after 61 characters).
	bad := strings.Replace(mine, "full_lifecycle_j", "full_lifecyle_j", 1)
	if err := os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "validate", "mine")
	if want := filepath.Join(dir, "mine.yaml") + ":3:62: tokens_per_kj.expr: unknown name full_lifecyle_j_per_token"; code != exitInvalid || !strings.Contains(errOut, want) {
		t.Errorf("code %d, want %d and %s in:\n%s", code, exitInvalid, want, errOut)
	}
	// No silent shadowing of a built-in.
	if err := os.WriteFile(filepath.Join(dir, "benchmark-1.5.yaml"), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, "validate", "benchmark-1.5"); code != exitInvalid || !strings.Contains(errOut, "shadows the built-in profile") {
		t.Errorf("shadowing: code %d: %s", code, errOut)
	}
}

func TestProfilesNew(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	out, errOut, code := runCLI(t, "profiles", "new", "team", "--extends", "benchmark-1.5")
	path := filepath.Join(cfg, "joulebench", "profiles", "team.yaml")
	if code != exitOK || !strings.Contains(out, path) {
		t.Fatalf("code %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := runCLI(t, "validate", "team"); code != exitOK {
		t.Errorf("the starting file does not validate: %s%s", out, errOut)
	}
	if _, errOut, code := runCLI(t, "profiles", "new", "team"); code != exitInvalid || !strings.Contains(errOut, "never overwritten") {
		t.Errorf("second new: code %d: %s", code, errOut)
	}
	if _, _, code := runCLI(t, "profiles", "new", "asiai"); code != exitInvalid {
		t.Errorf("new with a built-in's name: code %d, want %d", code, exitInvalid)
	}
}
