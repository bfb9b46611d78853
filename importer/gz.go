package importer

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/joulebench/joulebench/internal/boundedfile"
)

// gzipMagic are the first two bytes of every gzip file (RFC 1952).
var gzipMagic = [2]byte{0x1f, 0x8b}

// errDecompressedTooLarge is wrapped by the error for a gzip file whose
// content is over MaxImportBytes.
var errDecompressedTooLarge = errors.New("decompressed file too large")

// inputFile is an import's file as its reader sees it: the bytes of the
// file, or, when the file is gzip-compressed (found by its first two
// bytes, whatever its name), the bytes it decompresses to.
type inputFile struct {
	f    *boundedfile.File
	r    io.Reader
	path string
	gzip bool
}

func (in *inputFile) Read(p []byte) (int, error) { return in.r.Read(p) }
func (in *inputFile) Close() error               { return in.f.Close() }

// openContent makes f (rewound) read as its content: decompressed when
// it is gzip. A gzip file is first decompressed once through the cap,
// nothing kept, so that a file decompressing to more than limit bytes (a
// zip bomb) is refused before a reader holds any of it; then f is
// rewound and read for real.
func openContent(ctx context.Context, f *boundedfile.File, path string, limit int64) (*inputFile, error) {
	in := &inputFile{f: f, path: path}
	zipped, err := isGzip(f)
	if err != nil {
		return nil, err
	}
	if !zipped {
		in.r = f
		return in, nil
	}
	in.gzip = true
	r, err := gunzip(f, path, limit)
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(io.Discard, ctxReader{ctx, r}); err != nil {
		return nil, err
	}
	if err := f.Rewind(); err != nil {
		return nil, err
	}
	if in.r, err = gunzip(f, path, limit); err != nil {
		return nil, err
	}
	return in, nil
}

// isGzip reads f's first two bytes and rewinds it.
func isGzip(f *boundedfile.File) (bool, error) {
	var head [2]byte
	n, err := io.ReadFull(f, head[:])
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return false, err
	}
	if err := f.Rewind(); err != nil {
		return false, err
	}
	return n == 2 && head == gzipMagic, nil
}

// gunzip decompresses r, giving at most limit bytes and then an error.
func gunzip(r io.Reader, path string, limit int64) (io.Reader, error) {
	zr, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return nil, fmt.Errorf("%s: gzip: %w", path, err)
	}
	return &cappedGzip{zr: zr, path: path, limit: limit}, nil
}

// cappedGzip reads a gzip stream up to limit bytes of content: one byte
// more is an error naming the file and the cap.
type cappedGzip struct {
	zr          *gzip.Reader
	path        string
	limit, read int64
}

func (c *cappedGzip) Read(p []byte) (int, error) {
	if room := c.limit + 1 - c.read; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.zr.Read(p)
	c.read += int64(n)
	if c.read > c.limit {
		return n, fmt.Errorf("%s: decompresses to more than %d bytes (the bound on an imported file): %w", c.path, c.limit, errDecompressedTooLarge)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("%s: gzip: %w", c.path, err)
	}
	return n, err
}
