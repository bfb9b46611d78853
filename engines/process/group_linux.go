//go:build linux

package process

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// deathSignal asks the kernel to send the engine SIGTERM when joulebench
// dies, even by SIGKILL: an engine must not outlive its run, serving and
// holding the GPU. SIGTERM, not SIGKILL, so that the engine stops its own
// children as on a normal stop. The signal follows the thread that
// started the process, not the process (golang/go#27505): Start starts
// and waits for it on one goroutine locked to its thread.
func deathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGTERM }

// groupAlive reports whether a live process of the group pgid remains.
// Zombies do not count: they hold no memory, and in a container whose init
// reaps late they would hold the stop for seconds. It reads /proc, and
// falls back to a signal probe when /proc cannot be read.
func groupAlive(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	d, err := os.Open("/proc")
	if err != nil {
		return signalProbe(pgid)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return signalProbe(pgid)
	}
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 {
			continue
		}
		if g, err := strconv.Atoi(string(f[2])); err == nil && g == pgid && f[0][0] != 'Z' && f[0][0] != 'X' {
			return true
		}
	}
	return false
}
