package workflow

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// A profile's name becomes part of the run id, a directory under runs/:
// every name that is not one plain file name is refused at load, with its
// place (x.yaml:1:7: name: ...).
func TestProfileNameMustBeSafe(t *testing.T) {
	const tail = "\nsteps: [{kind: preflight}]\nmetrics: [{name: m, expr: \"1\"}]\n"
	cases := []struct {
		name string
		ok   bool
	}{
		{"benchmark-1.5", true},
		{"my_profile+v2", true},
		{"../../../../tmp/x", false},
		{"..", false},
		{".", false},
		{"/tmp/x", false},
		{"a/b", false},
		{`..\..\x`, false},
		{"a\x00b", false},
		{"a\tb", false},
		{"naïve", false},
		{"x\u2215y", false},
		{".hidden", false},
		{"-rf", false},
		{strings.Repeat("n", 129), false},
	}
	for _, c := range cases {
		src := "name: " + strconv.Quote(c.name) + tail
		_, err := Load([]byte(src), "x.yaml", Options{})
		if c.ok {
			if err != nil {
				t.Errorf("name %q: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "x.yaml:1:7") || !strings.Contains(err.Error(), "profile name") {
			t.Errorf("name %q: got %v, want x.yaml:1:7 naming the profile name", c.name, err)
		}
	}
}

// A hostile archive's run.json names a path as its profile: it is refused,
// not read.
func TestProfileForRunRefusesPaths(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "outside.yaml")
	if err := os.WriteFile(secret, []byte("name: outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	for _, name := range []string{secret, "../outside", "../outside.yaml", "a/../../outside.yaml"} {
		_, _, err := ProfileForRun(run, record.Meta{Profile: record.ProfileRef{Name: name}})
		if err == nil || !strings.Contains(err.Error(), "profile name") {
			t.Errorf("profile name %q in run.json: got %v, want it refused", name, err)
		}
	}
	if _, _, err := ProfileForRun(run, record.Meta{Profile: record.ProfileRef{Name: "benchmark-1.5"}}); err != nil {
		t.Errorf("a built-in profile name: %v", err)
	}
}
