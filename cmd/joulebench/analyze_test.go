package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/profiles"
)

// archiveWith copies testdata/run-small to a new directory with run.json
// edited by edit and, when profile is not nil, a profile.yaml.
func archiveWith(t *testing.T, edit func(m map[string]any), profile []byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	copyRun(t, dir, "sim", "sim-tiny", nil)
	path := filepath.Join(dir, "run.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.MarshalIndent(m, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if profile != nil {
		if err := os.WriteFile(filepath.Join(dir, "profile.yaml"), profile, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func builtin(t *testing.T, name string) []byte {
	t.Helper()
	b, err := profiles.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An archived profile.yaml edited after the run (its sha256 is not
// run.json's) is refused, and used when given with --profile.
func TestAnalyzeEditedArchivedProfile(t *testing.T) {
	src := builtin(t, "benchmark-1.5")
	edited := append([]byte(nil), src...)
	edited = append(edited, "\n# edited\n"...)
	dir := archiveWith(t, func(m map[string]any) {
		m["profile"] = map[string]any{"name": "benchmark-1.5", "sha256": sha(src)}
	}, edited)
	_, errOut, code := runCLI(t, "analyze", dir)
	if code != exitInvalid || !strings.Contains(errOut, "differs from run.json's profile.sha256 "+sha(src)) || !strings.Contains(errOut, "--profile") {
		t.Fatalf("edited profile.yaml: exit %d\n%s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "analyze", dir, "--profile", filepath.Join(dir, "profile.yaml")); code != exitOK && code != exitChecks {
		t.Fatalf("with --profile: exit %d\n%s", code, errOut)
	}
	// The unedited copy is used.
	dir = archiveWith(t, func(m map[string]any) {
		m["profile"] = map[string]any{"name": "benchmark-1.5", "sha256": sha(src)}
	}, src)
	if _, errOut, code := runCLI(t, "analyze", dir); code != exitOK && code != exitChecks {
		t.Fatalf("unedited profile.yaml: exit %d\n%s", code, errOut)
	}
}

// run.json's profile.name is looked up among the built-ins only: a path
// there (to a valid profile file, which the old code opened) is refused.
func TestAnalyzeProfileNameIsNotAPath(t *testing.T) {
	other := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(other, builtin(t, "benchmark-1.5"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := archiveWith(t, func(m map[string]any) {
		m["profile"] = map[string]any{"name": other, "sha256": ""}
	}, nil)
	if err := os.Remove(filepath.Join(dir, "profile.yaml")); err != nil { // the run's name is all there is
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "analyze", dir)
	if code != exitInvalid || !strings.Contains(errOut, "is not a built-in") {
		t.Fatalf("profile.name as a path: exit %d\n%s", code, errOut)
	}
}

// A file named like a built-in in the current directory does not shadow
// it; as a path (./NAME) it is the file.
func TestAnalyzeBuiltinNotShadowedByFile(t *testing.T) {
	dir := archiveWith(t, func(map[string]any) {}, nil)
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	if err := os.WriteFile("benchmark-1.5", []byte("not: [a profile\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, "analyze", abs, "--profile", "benchmark-1.5"); code != exitOK && code != exitChecks {
		t.Fatalf("--profile benchmark-1.5 with a file of that name here: exit %d\n%s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "analyze", abs, "--profile", "./benchmark-1.5"); code != exitInvalid || !strings.Contains(errOut, "./benchmark-1.5") {
		t.Fatalf("--profile ./benchmark-1.5: exit %d\n%s", code, errOut)
	}
}

// Integer parameters of 1e6 and more re-analyze: run.json holds 1000000,
// which decodes as a float64 and used to be passed on as "1e+06", which an
// int parameter refuses. An archived value the profile refuses is
// reported as run.json's, not as --set.
func TestAnalyzeArchivedParameters(t *testing.T) {
	dir := archiveWith(t, func(m map[string]any) {
		m["parameters"] = map[string]any{"request_count": 1000000, "window": 2e6}
	}, nil)
	if _, errOut, code := runCLI(t, "analyze", dir); code != exitOK && code != exitChecks {
		t.Fatalf("request_count 1000000: exit %d\n%s", code, errOut)
	}
	dir = archiveWith(t, func(m map[string]any) {
		m["parameters"] = map[string]any{"window": 2.5}
	}, nil)
	_, errOut, code := runCLI(t, "analyze", dir)
	if code != exitInvalid || !strings.Contains(errOut, "run.json parameters: window: parameter of type int") || strings.Contains(errOut, "--set") {
		t.Fatalf("bad archived window: exit %d\n%s", code, errOut)
	}
	// The user's own --set is still called --set.
	_, errOut, code = runCLI(t, "analyze", dir, "--set", "window=x")
	if code != exitInvalid || !strings.Contains(errOut, "--set: window:") {
		t.Fatalf("bad --set window: exit %d\n%s", code, errOut)
	}
}
