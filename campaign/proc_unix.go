//go:build unix

package campaign

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts a run in its own process group, so that a Ctrl-C
// at the terminal reaches the sweep only, which forwards one SIGINT (two
// would end the run before it writes its status).
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
