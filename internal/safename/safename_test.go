package safename

import (
	"path/filepath"
	"strings"
	"testing"
)

// The categories of a hostile name: traversal, absolute, separators, NUL,
// control and non-ASCII characters, empty and very long.
func TestCheck(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"benchmark-1.5", true},
		{"engines-small", true},
		{"20261201T142208Z-benchmark-1.5-vllm-2", true},
		{"a+b_c.d", true},
		{strings.Repeat("x", MaxLen), true},
		{"", false},
		{".", false},
		{"..", false},
		{"../../../../tmp/x", false},
		{"a/../b", false},
		{"a/b", false},
		{"/tmp/x", false},
		{`..\..\x`, false},
		{`a\b`, false},
		{`C:\x`, false},
		{"a\x00b", false},
		{"a\nb", false},
		{"a b", false},
		{".hidden", false},
		{"-flag", false},
		{"naïve", false},
		{"x\u2215y", false}, // DIVISION SLASH
		{"x\uff0ey", false}, // FULLWIDTH FULL STOP
		{strings.Repeat("x", MaxLen+1), false},
		{"~user", false},
		{"$HOME", false},
	}
	for _, c := range cases {
		err := Check("profile name", c.name)
		if (err == nil) != c.ok {
			t.Errorf("Check(%q) = %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "profile name") {
			t.Errorf("Check(%q): error does not say what: %v", c.name, err)
		}
	}
}

func TestJoinStaysUnder(t *testing.T) {
	parent := t.TempDir()
	if p, err := Join("run id", parent, "run-1"); err != nil || p != filepath.Join(parent, "run-1") {
		t.Errorf("Join(run-1) = %q, %v", p, err)
	}
	for _, bad := range []string{"..", "../x", "/etc", "a/b", ""} {
		if p, err := Join("run id", parent, bad); err == nil {
			t.Errorf("Join(%q) = %q, want an error", bad, p)
		}
	}
	if err := Within(parent, filepath.Join(parent, "a", "..", "..", "x")); err == nil {
		t.Errorf("Within: a path climbing out was accepted")
	}
	if err := Within(parent, parent); err == nil {
		t.Errorf("Within: the parent itself was accepted as a child")
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"benchmark-1.5", "..", "a/b", "a\x00", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if Check("name", s) != nil {
			return
		}
		// Accepted: one path element, the same after cleaning, under any parent.
		if filepath.Base(s) != s || filepath.Clean(s) != s || s == "." || s == ".." || filepath.IsAbs(s) {
			t.Errorf("Check accepted %q, which is not one plain path element", s)
		}
		if _, err := Join("name", "parent", s); err != nil {
			t.Errorf("Check accepted %q but Join refused it: %v", s, err)
		}
	})
}
