package profiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file in the current directory named like a built-in never shadows it;
// a bare name that is no profile falls back to a file of that name; a
// missing path says the file does not exist.
func TestFindBuiltinsBeforeFiles(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("benchmark-1.5", []byte("name: impostor\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("mine", []byte("name: mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &Finder{}
	src, where, err := f.Find("benchmark-1.5", "")
	if err != nil || strings.Contains(string(src), "impostor") || where != "benchmark-1.5.yaml (built-in)" {
		t.Errorf("benchmark-1.5: from %q (err %v), want the built-in", where, err)
	}
	src, where, err = f.Find("./benchmark-1.5", "")
	if err != nil || !strings.Contains(string(src), "impostor") {
		t.Errorf("./benchmark-1.5: from %q (err %v), want the file", where, err)
	}
	if src, _, err := f.Find("mine", ""); err != nil || string(src) != "name: mine\n" {
		t.Errorf("mine: %q, %v; want the file", src, err)
	}
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	if _, _, err := f.Find(missing, ""); err == nil || !strings.Contains(err.Error(), missing+" does not exist") {
		t.Errorf("missing file: %v, want it to say the file does not exist", err)
	}
}

// NewFinder searches the user's directory, then each --profile-path entry
// in order, skipping empty entries of a list.
func TestNewFinder(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("HOME", cfg) // os.UserConfigDir on macOS
	user, err := UserDir()
	if err != nil {
		t.Fatal(err)
	}
	sep := string(filepath.ListSeparator)
	for _, tc := range []struct {
		name  string
		lists []string
		want  []Dir
	}{
		{"none", nil, []Dir{{user, OriginUser}}},
		{"one", []string{"/a"}, []Dir{{user, OriginUser}, {"/a", OriginPath}}},
		{"lists in order", []string{"/a" + sep + sep + "/b", "", "/c"},
			[]Dir{{user, OriginUser}, {"/a", OriginPath}, {"/b", OriginPath}, {"/c", OriginPath}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NewFinder(tc.lists).Dirs
			if len(got) != len(tc.want) {
				t.Fatalf("dirs %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("dir %d: %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}
