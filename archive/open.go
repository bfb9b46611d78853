package archive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// MaxDocumentBytes bounds run.json and results.json: far above any real
// run (a few kB to a few MB), far below what would exhaust memory.
const MaxDocumentBytes = 256 << 20

// openFile opens the file name of the run directory dir for reading. It
// refuses what is not a regular file (a device such as /dev/zero, a FIFO,
// a directory), and a symbolic link that leads outside dir or is absolute:
// an archive is read from its own directory only, and the content of a
// file elsewhere never reaches an error message. A link that stays inside
// dir is followed. The error for a file that does not exist wraps
// fs.ErrNotExist.
func openFile(dir, name string) (*os.File, error) {
	path := filepath.Join(dir, name)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("archive: cannot read %s: %w", path, err)
	}
	defer root.Close()
	lst, err := root.Lstat(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("archive: %s: %w", path, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("archive: %w", err)
	}
	if lst.Mode()&fs.ModeSymlink != 0 {
		// Root.Stat follows the link only while it stays below dir.
		if _, err := root.Stat(name); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("archive: %s is a symbolic link to a file that does not exist", path)
			}
			return nil, fmt.Errorf("archive: %s is a symbolic link that leads outside the run directory (or is absolute); refused: an archive's files are read from its own directory only", path)
		}
	}
	// Check the type before opening: opening a FIFO would block.
	st, err := root.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	// The file may have been swapped since the Stat: check what was opened.
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("archive: %w", err)
		}
		return nil, notRegular(path, st.Mode())
	}
	return f, nil
}

func notRegular(path string, m fs.FileMode) error {
	kind := "not a regular file"
	switch {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		kind = "a device"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	}
	return fmt.Errorf("archive: %s is %s; an archive file must be a regular file", path, kind)
}

// readDocument reads a whole JSON document of the run directory (run.json,
// results.json) through openFile, at most MaxDocumentBytes.
func readDocument(path string) ([]byte, error) {
	f, err := openFile(filepath.Dir(path), filepath.Base(path))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Sized from the file (a regular file: openFile), so that a large
	// document is read into one buffer rather than grown by doubling.
	var buf bytes.Buffer
	if st, err := f.Stat(); err == nil && st.Size() <= MaxDocumentBytes {
		buf.Grow(int(st.Size()) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxDocumentBytes+1)); err != nil {
		return nil, fmt.Errorf("archive: read %s: %w", path, err)
	}
	data := buf.Bytes()
	if len(data) > MaxDocumentBytes {
		return nil, fmt.Errorf("archive: %s is larger than %d MiB; that is not a run archive's JSON document", path, MaxDocumentBytes>>20)
	}
	return data, nil
}
