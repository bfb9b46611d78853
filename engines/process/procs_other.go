//go:build !unix

package process

import "errors"

func listProcs() ([]ProcInfo, error) {
	return nil, errors.New("listing processes is not supported on this system")
}

func hasEnv(int, string) bool { return false }

const canTag = false
