package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A profile named ../../../../tmp/x, run without --out, writes nothing
// outside runs/ (before, the run id carried the ../ and the archive went
// to tmp/x... four levels up): the name is refused before anything is
// created.
func TestHostileProfileNameWritesNothing(t *testing.T) {
	src, err := os.ReadFile(enginesProfile)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	work := filepath.Join(root, "a", "b", "c", "d")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	for _, name := range []string{"../../../../tmp/x", "/tmp/x", "..", "x\\..\\y"} {
		prof := filepath.Join(root, "p.yaml")
		body := strings.Replace(string(src), "name: engines-small", "name: "+strconv.Quote(name), 1)
		if err := os.WriteFile(prof, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := runCLI(t, "run", prof, "--engine", "sim", "--no-progress", "--telemetry", "none", "--set", "request_count=1")
		if code != exitInvalid || !strings.Contains(stderr, "profile name") {
			t.Errorf("name %q: exit %d, want %d naming the profile name:\n%s", name, code, exitInvalid, stderr)
		}
	}
	var made []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != root && !strings.HasPrefix(work, p) && p != filepath.Join(root, "p.yaml") {
			made = append(made, p)
		}
		return nil
	})
	if len(made) > 0 {
		t.Errorf("written although refused: %v", made)
	}
}

// `profiles new NAME` writes NAME.yaml in the profile directory: a name
// that is not one plain file name is refused and nothing is written.
func TestProfilesNewRefusesUnsafeNames(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	for _, name := range []string{"..", ".", "../x", "/tmp/x", `..\x`, "a\x00b", "a b", ".hidden", "naïve", strings.Repeat("n", 129)} {
		_, errOut, code := runCLI(t, "profiles", "new", name)
		if code != exitInvalid || !strings.Contains(errOut, "profile name") {
			t.Errorf("profiles new %q: exit %d, want %d naming the profile name: %s", name, code, exitInvalid, errOut)
		}
	}
	var made []string
	_ = filepath.WalkDir(cfg, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			made = append(made, p)
		}
		return nil
	})
	if len(made) > 0 {
		t.Errorf("written: %v", made)
	}
}
