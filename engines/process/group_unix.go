//go:build unix

package process

import (
	"errors"
	"os/exec"
	"syscall"
)

// signal is a signal to send.
type signal = syscall.Signal

var (
	sigTerm      = syscall.SIGTERM
	sigKill      = syscall.SIGKILL
	errNoProcess = syscall.ESRCH
)

// setGroup starts the command as the leader of a new process group and,
// where the system has one, with a parent-death signal (see deathSignal).
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	deathSignal(cmd.SysProcAttr)
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

// signalPID sends sig to the one process pid.
func signalPID(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return errors.New("no process")
	}
	return syscall.Kill(pid, sig)
}

// pidAlive reports whether pid exists (a zombie included).
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
