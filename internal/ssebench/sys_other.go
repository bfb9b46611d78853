//go:build !unix

package ssebench

import "errors"

func cpuSeconds() float64 { return 0 }

// RaiseFileLimit is not available here.
func RaiseFileLimit() (uint64, error) {
	return 0, errors.New("no file limit to raise on this system")
}
