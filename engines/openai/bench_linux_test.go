package openai

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// raiseThreadPriority gives the calling (locked) thread nice -10 where the
// process may; it does nothing otherwise.
func raiseThreadPriority() { _ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), -10) }

// pinProcess keeps every thread of this process on cpu (threads made
// later inherit it from the one that makes them).
func pinProcess(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return unix.SchedSetaffinity(0, &set)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return err
		}
	}
	return nil
}
