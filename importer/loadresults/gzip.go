package loadresults

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
)

// gzipMagic are the first two bytes of every gzip file (RFC 1952).
var gzipMagic = []byte{0x1f, 0x8b}

// isGzip says whether data is gzip-compressed, by its first two bytes
// (whatever the file's name).
func isGzip(data []byte) bool { return bytes.HasPrefix(data, gzipMagic) }

// gunzipCapped decompresses data, refusing content over limit bytes (a
// zip bomb) before more than limit+1 bytes are held, and a corrupt or
// truncated stream (its CRC-32 and length checked) with an error naming
// the file.
func gunzipCapped(name string, data []byte, limit int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: gzip: %w", name, err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: gzip: %w", name, err)
	}
	if int64(len(out)) > limit {
		return nil, fmt.Errorf("%s: decompresses to more than %d bytes (the bound on a result file)", name, limit)
	}
	if err := zr.Close(); err != nil {
		return nil, fmt.Errorf("%s: gzip: %w", name, err)
	}
	return out, nil
}
