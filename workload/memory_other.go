//go:build !linux

package workload

// availableMemory is not known on this system: the request set size is
// not checked against it.
func availableMemory() (int64, bool) { return 0, false }
