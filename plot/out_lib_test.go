package plot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/internal/exitcode"
)

func TestDefaultOut(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{"runs/r1", "r1.png"},
		{"runs/r1/", "r1.png"},
		{".", filepath.Base(wd) + ".png"},
		{"/", "run.png"},
	} {
		if got := DefaultOut(tc.dir); got != tc.want {
			t.Errorf("DefaultOut(%q) = %q, want %q", tc.dir, got, tc.want)
		}
	}
}

func TestCheckOut(t *testing.T) {
	ok := DefaultOptions
	for _, tc := range []struct {
		path string
		dir  bool
		opt  Options
		want string
	}{
		{"f.png", true, ok, ""},
		{"f.svg", false, ok, ""},
		{"f.gif", false, ok, "--out: "},
		{filepath.Join(t.TempDir(), "none", "f.png"), true, ok, "--out: "},
		{filepath.Join(t.TempDir(), "none", "f.png"), false, ok, ""}, // the directory is not checked
		{"f.png", false, Options{Width: -1, Height: 10}, "each side must be between"},
	} {
		err := CheckOut(tc.path, tc.dir, tc.opt)
		if (tc.want == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), tc.want) || exitcode.Of(err) != int(exitcode.Invalid))) {
			t.Errorf("CheckOut(%q, %v, %+v) = %v, want %q", tc.path, tc.dir, tc.opt, err, tc.want)
		}
	}
}
