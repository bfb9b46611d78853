package process

import (
	"net"
	"os"
	"runtime"
	"slices"
	"testing"
)

// This test process listens on a port: Listeners names it; a port nobody
// listens on has no listener.
func TestListeners(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, ok := Listeners(1); ok {
			t.Fatal("ok on a system without /proc")
		}
		t.Skip("Listeners reads /proc (Linux)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	pids, ok := Listeners(port)
	if !ok || !slices.Contains(pids, os.Getpid()) {
		t.Errorf("Listeners(%d) = %v, %v; want this process, %d", port, pids, ok, os.Getpid())
	}
	ln.Close()
	if pids, ok := Listeners(port); !ok || len(pids) != 0 {
		t.Errorf("after close: Listeners(%d) = %v, %v; want none", port, pids, ok)
	}
}
