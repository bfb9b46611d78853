//go:build unix && !linux

package process

// groupAlive reports whether any process of the group pgid remains.
func groupAlive(pgid int) bool { return signalProbe(pgid) }
