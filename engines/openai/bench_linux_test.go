package openai

import "golang.org/x/sys/unix"

// raiseThreadPriority gives the calling (locked) thread nice -10 where the
// process may; it does nothing otherwise.
func raiseThreadPriority() { _ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), -10) }
