package openai

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// stampedConn is a TCP connection read with recvmsg(2) so that the kernel's
// SO_TIMESTAMPNS stamp of the received data comes with it. Reads go through
// the runtime's poller (syscall.RawConn), so deadlines and Close work as on
// the plain connection; a read allocates nothing.
type stampedConn struct {
	net.Conn
	raw   syscall.RawConn
	recv  func(fd uintptr) bool // c.recvmsg, bound once
	p     []byte
	n     int
	err   error
	oob   [64]byte
	stamp atomic.Int64 // Unix ns of the newest data read; 0 unknown
}

// stampReceives turns on receive stamps for a TCP connection; any other
// connection, or one that refuses the option, is returned as it is.
func stampReceives(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c
	}
	s := &stampedConn{Conn: c, raw: raw}
	s.recv = s.recvmsg
	return s
}

func (c *stampedConn) lastReceived() int64 { return c.stamp.Load() }

func (c *stampedConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.p = p
	err := c.raw.Read(c.recv)
	n, rerr := c.n, c.err
	c.p, c.n, c.err = nil, 0, nil
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) {
			oe.Op = "read"
		}
		return 0, err
	}
	if rerr != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("recvmsg", rerr)}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// recvmsg reads once; false asks the poller to wait for data.
func (c *stampedConn) recvmsg(fd uintptr) bool {
	for {
		n, oobn, _, _, err := unix.Recvmsg(int(fd), c.p, c.oob[:], unix.MSG_DONTWAIT)
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		c.n, c.err = n, err
		if err == nil && n > 0 {
			c.stamp.Store(receiveStamp(c.oob[:oobn]))
		}
		return true
	}
}

// receiveStamp finds the SCM_TIMESTAMPNS message among control messages:
// a struct timespec of two 64-bit words on 64-bit systems, two 32-bit words
// on 32-bit ones. 0 when there is none.
func receiveStamp(b []byte) int64 {
	for len(b) > 0 {
		h, data, rest, err := unix.ParseOneSocketControlMessage(b)
		if err != nil {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS {
			switch {
			case len(data) >= 16:
				return int64(binary.NativeEndian.Uint64(data))*1e9 + int64(binary.NativeEndian.Uint64(data[8:]))
			case len(data) >= 8:
				return int64(int32(binary.NativeEndian.Uint32(data)))*1e9 + int64(int32(binary.NativeEndian.Uint32(data[4:])))
			}
			return 0
		}
		b = rest
	}
	return 0
}
