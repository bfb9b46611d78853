package analysis

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/workflow"
)

// ArchivedProfile takes the archive's copy, else only a built-in whose
// sha256 is the run's; every other case asks for --profile and says why.
func TestArchivedProfile(t *testing.T) {
	b, err := profiles.Read("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	today := hex.EncodeToString(sum[:])
	outside := filepath.Join(t.TempDir(), "elsewhere.yaml")
	if err := os.WriteFile(outside, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ref := func(name, sha string) record.Meta {
		return record.Meta{Profile: record.ProfileRef{Name: name, SHA256: sha}}
	}
	for _, tc := range []struct {
		name  string
		setup func(dir string) error
		meta  record.Meta
		want  string // the name it is loaded as, or the error
		err   bool
	}{
		{"copy", func(dir string) error { return os.WriteFile(filepath.Join(dir, workflow.ProfileFile), b, 0o644) }, ref("x", today), workflow.ProfileFile, false},
		{"copy without sha", func(dir string) error { return os.WriteFile(filepath.Join(dir, workflow.ProfileFile), b, 0o644) }, ref("x", ""), workflow.ProfileFile, false},
		{"today's built-in", nil, ref("benchmark-1.5", today), "benchmark-1.5.yaml (built-in)", false},
		{"no name", nil, ref("", ""), "names no profile", true},
		{"not a built-in", nil, ref("mine", ""), `profile "mine" is not a built-in`, true},
		{"built-in without sha", nil, ref("benchmark-1.5", ""), "records no profile.sha256", true},
		{"built-in changed", nil, ref("benchmark-1.5", strings.Repeat("0", 64)), "has changed since the run", true},
		{"link to nothing", func(dir string) error { return os.Symlink("gone.yaml", filepath.Join(dir, workflow.ProfileFile)) }, ref("x", ""), "a symbolic link to nothing", true},
		{"link out of the run", func(dir string) error { return os.Symlink(outside, filepath.Join(dir, workflow.ProfileFile)) }, ref("x", ""), "a symbolic link out of it is refused", true},
		{"a directory", func(dir string) error { return os.Mkdir(filepath.Join(dir, workflow.ProfileFile), 0o755) }, ref("x", ""), "not a regular file", true},
	} {
		dir := t.TempDir()
		if tc.setup != nil {
			if err := tc.setup(dir); err != nil {
				t.Fatal(err)
			}
		}
		_, name, err := ArchivedProfile(dir, tc.meta)
		switch {
		case tc.err && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		case !tc.err && (err != nil || !strings.HasSuffix(name, tc.want)):
			t.Errorf("%s: %q, %v, want %q", tc.name, name, err, tc.want)
		}
	}
}

// A run's own profile refusing its archived parameters names run.json,
// and lists at most MaxListedErrors of them.
func TestArchivedParametersRefused(t *testing.T) {
	b, err := profiles.Read("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]any{}
	for i := range MaxListedErrors + 5 {
		params[fmt.Sprintf("unknown_%02d", i)] = 1.0
	}
	_, err = noUserDirs().loadArchived(b, "p.yaml", record.Meta{Parameters: params}, nil)
	if err == nil {
		t.Fatal("unknown archived parameters loaded")
	}
	s := err.Error()
	if !strings.Contains(s, "run.json parameters") || !strings.Contains(s, "(archived with the run)") || !strings.Contains(s, "… and 5 more errors (not listed)") {
		t.Errorf("error:\n%s", s)
	}
}
