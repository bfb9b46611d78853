package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// An --engine-url with nothing listening says so first (not "no --model
// given"); a port that cannot be one is an invalid URL.
func TestEngineURLNotThere(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, tc := range []struct{ url, want string }{
		{"http://" + addr, "--engine-url http://" + addr + ": connection refused: nothing listens there"},
		{"http://127.0.0.1:99999", "--engine-url: port 99999: a TCP port is 1 to 65535"},
	} {
		_, stderr, code := runCLI(t, "run", "benchmark-1.5", "--engine-url", tc.url, "--telemetry", "none", "--no-progress",
			"--out", filepath.Join(t.TempDir(), "run"))
		if code == exitOK || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "no --model given") {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant %q", tc.url, code, stderr, tc.want)
		}
	}
}
