//go:build unix

package runner

import "syscall"

// systemFileLimit is RLIMIT_NOFILE of this process.
type systemFileLimit struct{}

func (systemFileLimit) Get() (soft, hard uint64, ok bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, false
	}
	return uint64(rl.Cur), uint64(rl.Max), true
}

func (systemFileLimit) RaiseToHard() error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return err
	}
	rl.Cur = rl.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
}
