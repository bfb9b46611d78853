//go:build !linux

package ssebench

import (
	"errors"
	"os/exec"
)

// CPUs is nil where affinity is not available: nothing is pinned.
func CPUs() []int { return nil }

// StartPinned starts cmd unpinned at the default priority: affinity and
// per-thread priority are Linux only here.
func StartPinned(cmd *exec.Cmd, cpu, nice int) error { return cmd.Start() }

// Affinity is not available here.
func Affinity(pid int) ([]int, error) {
	return nil, errors.New("cpu affinity is not available on this system")
}

// ProcCPU is not available here.
func ProcCPU(pid int) (float64, error) {
	return 0, errors.New("per-process cpu time is not available on this system")
}
