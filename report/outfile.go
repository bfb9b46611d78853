package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFile runs write on a temporary file beside path that is renamed to
// path once written: a failed write leaves no partial report. The file is
// readable by all (a report is for sharing). Errors name the path as the
// --out flag that gave it.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	tmp := f.Name()
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("--out %s: %w", path, err)
	}
	// CreateTemp makes the file 0600.
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("--out %s: %w", path, err)
	}
	return nil
}
