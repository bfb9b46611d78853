//go:build unix && !linux

package campaign

import (
	"os/exec"
	"syscall"
)

// runAttr puts a run in its own process group, so that a Ctrl-C at the
// terminal reaches the sweep only, which forwards one SIGINT. There is no
// parent-death signal here: a run outlives a killed sweep, and the next
// sweep waits for it (waitOrphans).
func runAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
