//go:build !linux

package openai

// raiseThreadPriority does nothing off Linux, where nice is per process.
func raiseThreadPriority() {}

// pinProcess does nothing off Linux.
func pinProcess(cpu int) error { return nil }
