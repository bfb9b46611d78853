package plot

import (
	"fmt"
	"path/filepath"

	"github.com/joulebench/joulebench/internal/exitcode"
)

// DefaultOut is the figure file of the run directory dir when none is
// given: <run directory name>.png in the current directory ("run.png"
// when dir has no usable name).
func DefaultOut(dir string) string {
	name := filepath.Base(filepath.Clean(dir))
	if abs, err := filepath.Abs(dir); err == nil {
		name = filepath.Base(abs)
	}
	if name == "" || name == "." || name == ".." || name == string(filepath.Separator) {
		name = "run"
	}
	return name + ".png"
}

// CheckOut checks, before anything is evaluated, where a figure goes and
// its size: the format (from path's extension), with dir the directory it
// is written to, and opt. Its errors are invalid input.
func CheckOut(path string, dir bool, opt Options) error {
	if _, err := FormatOf(path); err != nil {
		return exitcode.With(exitcode.Invalid, fmt.Errorf("--out: %w", err))
	}
	if dir {
		if err := CheckOutDir(path); err != nil {
			return exitcode.With(exitcode.Invalid, fmt.Errorf("--out: %w", err))
		}
	}
	return exitcode.With(exitcode.Invalid, opt.Validate())
}
