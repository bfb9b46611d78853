//go:build unix

package gpusettings

import "syscall"

// noFollow makes creating a journal fail on a symbolic link.
const noFollow = syscall.O_NOFOLLOW
