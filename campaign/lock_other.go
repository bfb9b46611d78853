//go:build !unix

package campaign

import "os"

// tryLock is not implemented here: the lock is advisory only on unix.
func tryLock(*os.File) (bool, error) { return true, nil }

// alive cannot tell here: a recorded run process is taken as gone.
func alive(int) bool { return false }
