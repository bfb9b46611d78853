//go:build unix

package boundedfile

import "syscall"

// openFlags makes opening a FIFO (swapped in after the first check)
// return at once instead of waiting for a writer; regular files ignore it.
const openFlags = syscall.O_NONBLOCK

// noFollowFlag makes opening a symbolic link fail (ReadNoFollow).
const noFollowFlag = syscall.O_NOFOLLOW
