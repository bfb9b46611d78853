//go:build linux

package campaign

import (
	"os/exec"
	"syscall"
)

// runAttr puts a run in its own process group, so that a Ctrl-C at the
// terminal reaches the sweep only, which forwards one SIGINT (two would end
// the run before it writes its status); and asks the kernel to send the run
// SIGTERM when the sweep dies (SIGKILL included): the run stops its engine
// and writes status interrupted.
//
// The death signal follows the thread that started the run, not the
// process (golang/go#27505): the caller starts and waits for the run on a
// goroutine locked to its thread (startLocked).
func runAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
