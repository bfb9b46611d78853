//go:build !linux

package openai

import "net"

// stampReceives keeps c as it is: receive stamps are read on Linux only.
func stampReceives(c net.Conn) net.Conn { return c }
