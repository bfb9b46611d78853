package plot

import "path/filepath"

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
