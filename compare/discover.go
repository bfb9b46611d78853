package compare

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/joulebench/joulebench/archive"
)

// Discover turns command-line paths into run directories: a path holding
// run.json is a run; any other directory is a directory of runs (its
// immediate subdirectories holding run.json, in name order). A path that is
// neither, or a directory without any run, is an error naming it. Each run
// is listed once.
func Discover(paths []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(dir string) {
		key := filepath.Clean(dir)
		if abs, err := filepath.Abs(dir); err == nil {
			key = abs
		}
		if !seen[key] {
			seen[key] = true
			out = append(out, dir)
		}
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%s: no such run directory", p)
			}
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("%s: not a directory (give a run directory or a directory of runs)", p)
		}
		if isRun(p) {
			add(p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		var found []string
		for _, e := range entries {
			sub := filepath.Join(p, e.Name())
			if e.IsDir() && e.Name()[0] != '.' && isRun(sub) {
				found = append(found, sub)
			}
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: neither a run directory (no %s) nor a directory of runs", p, archive.RunFile)
		}
		sort.Strings(found)
		for _, f := range found {
			add(f)
		}
	}
	return out, nil
}

func isRun(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, archive.RunFile))
	return err == nil && st.Mode().IsRegular()
}
