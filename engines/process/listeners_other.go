//go:build !linux

package process

// Listeners cannot say on this system which processes listen on port.
func Listeners(port int) (pids []int, ok bool) { return nil, false }
