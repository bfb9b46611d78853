package plot

import (
	"os"
	"path/filepath"
	"testing"
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
