//go:build unix

package archive

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A data file that is not a regular file is refused before it is read:
// /dev/zero would otherwise be read until memory runs out, a FIFO would
// block the open.
func TestLoadRefusesNonRegularFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		make func(t *testing.T, path string)
		want string
	}{
		{"power.csv to /dev/zero", PowerFile, func(t *testing.T, p string) {
			// Refused as a link out of the archive, before its type is
			// even looked at.
			symlink(t, "/dev/zero", p)
		}, "leads outside the run directory"},
		{"requests.jsonl a directory", RequestsFile, func(t *testing.T, p string) {
			os.Remove(p)
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "is a directory"},
		{"engine_metrics.jsonl a FIFO", EngineMetricsFile, func(t *testing.T, p string) {
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, "is a named pipe"},
		{"run.json a FIFO via a link inside", RunFile, func(t *testing.T, p string) {
			fifo := filepath.Join(filepath.Dir(p), "fifo")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			symlink(t, "fifo", p)
		}, "is a named pipe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := sampleCopy(t)
			path := filepath.Join(dir, tc.file)
			tc.make(t, path)
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
				t.Fatalf("Load: %v; want an error naming %s with %q", err, tc.file, tc.want)
			}
		})
	}
}
