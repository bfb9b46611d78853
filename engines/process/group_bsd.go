//go:build unix && !linux

package process

import "syscall"

// deathSignal does nothing: this system has no parent-death signal. An
// engine left running by a joulebench killed with SIGKILL is found by the
// next run from its pid file (Orphans).
func deathSignal(*syscall.SysProcAttr) {}

// groupAlive reports whether any process of the group pgid remains.
func groupAlive(pgid int) bool { return signalProbe(pgid) }
