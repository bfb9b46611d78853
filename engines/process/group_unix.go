//go:build unix

package process

import (
	"errors"
	"os/exec"
	"syscall"
)

var (
	sigTerm      = syscall.SIGTERM
	sigKill      = syscall.SIGKILL
	errNoProcess = syscall.ESRCH
)

// setGroup starts the command as the leader of a new process group.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to every process of the group pgid.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 0 {
		return errors.New("no process group")
	}
	return syscall.Kill(-pgid, sig)
}

// signalProbe reports whether the group pgid has any process, zombies
// included.
func signalProbe(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
