//go:build !unix

package runner

import "errors"

// systemFileLimit is unknown on this system: not checked.
type systemFileLimit struct{}

func (systemFileLimit) Get() (soft, hard uint64, ok bool) { return 0, 0, false }

func (systemFileLimit) RaiseToHard() error { return errors.New("not supported") }
