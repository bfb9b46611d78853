//go:build !linux

package openai

// raiseThreadPriority does nothing off Linux, where nice is per process.
func raiseThreadPriority() {}
