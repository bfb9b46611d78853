// Package boundedfile reads input files (profiles, campaign files whole;
// imported recordings as a stream) with a size cap, and only when they are regular files: a device
// (/dev/zero), a FIFO, a socket or a directory is refused before a byte is
// read, and a file larger than the cap is refused instead of read into
// memory.
package boundedfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxProfileBytes caps a profile or campaign file. The built-in profiles
// are about 20 KiB; 4 MiB leaves room for any profile written by hand or
// generated, and is nothing to hold in memory.
const MaxProfileBytes = 4 << 20

// ErrTooLarge is wrapped by the error for a file over the cap.
var ErrTooLarge = errors.New("file too large")

// ErrNotRegular is wrapped by the error for a file that is not a regular
// file (after following symbolic links).
var ErrNotRegular = errors.New("not a regular file")

// Read reads the regular file at path (symbolic links followed) when it
// holds at most limit bytes. what names the file's role in errors
// ("profile", "campaign file"). The file is checked before it is opened
// (opening a FIFO would block until a writer comes), opened without
// blocking where the system allows it, checked again on the open file,
// and read through a limit, so that a file replaced or grown between the
// checks is still refused rather than read without bound.
func Read(path, what string, limit int64) ([]byte, error) {
	f, err := Open(path, what, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// File is a regular file opened by Open: a reader that gives at most the
// cap's bytes and then an error wrapping ErrTooLarge (a file grown after
// the checks is refused, never read without bound).
type File struct {
	f           *os.File
	path, what  string
	limit, read int64
}

// Open opens the regular file at path (symbolic links followed) for
// reading when it holds at most limit bytes, with the checks of Read:
// a device, a FIFO, a socket or a directory is refused before a byte is
// read. Close the file when done.
func Open(path, what string, limit int64) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if err := check(path, what, st, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if st, err = f.Stat(); err == nil {
		err = check(path, what, st, limit)
	} else {
		err = fmt.Errorf("read %s: %w", what, err)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &File{f: f, path: path, what: what, limit: limit}, nil
}

// ReadNoFollow reads the regular file at path when it holds at most limit
// bytes, without following a symbolic link: a link (wherever it points),
// a device, a FIFO, a socket or a directory is refused before a byte is
// read. The name is checked with lstat, opened without following a link
// and without blocking where the system allows it, checked again on the
// open file, and read through the cap. It is for files another user could
// have replaced (a machine-wide state directory).
func ReadNoFollow(path, what string, limit int64) ([]byte, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if err := check(path, what, st, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags|noFollowFlag, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if err := check(path, what, st, limit); err != nil {
		return nil, err
	}
	return io.ReadAll(&File{f: f, path: path, what: what, limit: limit})
}

// Read reads from the file; past the cap it returns an error wrapping
// ErrTooLarge.
func (b *File) Read(p []byte) (int, error) {
	if room := b.limit + 1 - b.read; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.f.Read(p)
	b.read += int64(n)
	if b.read > b.limit {
		return n, fmt.Errorf("%s %s: grew past %d bytes while read: %w", b.what, b.path, b.limit, ErrTooLarge)
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("read %s %s: %w", b.what, b.path, err)
	}
	return n, err
}

// Rewind goes back to the file's first byte (to read it again).
func (b *File) Rewind() error {
	if _, err := b.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read %s %s: %w", b.what, b.path, err)
	}
	b.read = 0
	return nil
}

// Close closes the file.
func (b *File) Close() error { return b.f.Close() }

func check(path, what string, st fs.FileInfo, limit int64) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s %s: %w (%s)", what, path, ErrNotRegular, kind(st.Mode()))
	}
	if st.Size() > limit {
		return fmt.Errorf("%s %s: %d bytes, more than the %d a %s may have: %w", what, path, st.Size(), limit, what, ErrTooLarge)
	}
	return nil
}

// kind names a file mode's type in words.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	default:
		return "type " + m.Type().String()
	}
}
