//go:build !unix

package process

import (
	"errors"
	"os/exec"
)

type signal int

var (
	sigTerm      signal = 15
	sigKill      signal = 9
	errNoProcess        = errors.New("no such process")
)

// setGroup does nothing where process groups do not exist: managed
// engines need a unix system.
func setGroup(*exec.Cmd) {}

func signalGroup(int, signal) error {
	return errors.New("process groups are not supported on this system")
}

func groupAlive(int) bool { return false }

func signalPID(int, signal) error {
	return errors.New("signals are not supported on this system")
}

func pidAlive(int) bool { return false }
