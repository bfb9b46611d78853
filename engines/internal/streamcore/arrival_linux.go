package streamcore

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// stampedConn is a TCP connection read with recvmsg(2) so that the kernel's
// SO_TIMESTAMPNS stamp of the received data comes with it. Reads go through
// the runtime's poller (syscall.RawConn), so deadlines and Close work as on
// the plain connection; a read allocates nothing.
type stampedConn struct {
	net.Conn
	raw  syscall.RawConn
	recv func(fd uintptr) bool // c.recvmsg, bound once
	p    []byte
	n    int
	err  error
	oob  [64]byte
	// The recvmsg(2) arguments, kept with the connection so that a read
	// allocates nothing (unix.Recvmsg allocates a socket address per call).
	msg unix.Msghdr
	iov unix.Iovec

	// What the last read that returned data knows (see ReadStamp).
	seq   atomic.Uint64
	stamp atomic.Int64 // Unix ns of the newest data read; 0 unknown
	after atomic.Int64
	full  atomic.Bool
	// drained is when (Unix ns, taken just before the call) a recvmsg
	// last left the queue empty: anything read later arrived after it.
	drained int64
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
	return newStampedConn(c, raw)
}

// newStampedConn reads c through raw, its socket, whose receive stamps
// are on.
func newStampedConn(c net.Conn, raw syscall.RawConn) *stampedConn {
	s := &stampedConn{Conn: c, raw: raw}
	s.recv = s.recvmsg
	return s
}

func (c *stampedConn) LastReceived() int64 { return c.stamp.Load() }

func (c *stampedConn) LastRead() ReadStamp {
	return ReadStamp{Seq: c.seq.Load(), Stamp: c.stamp.Load(), After: c.after.Load(), Full: c.full.Load()}
}

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

// recvmsg reads once; false asks the poller to wait for data. The clock
// is read before each call so that a call that empties the queue bounds
// from below when the data of the next read arrived.
func (c *stampedConn) recvmsg(fd uintptr) bool {
	for {
		t0 := time.Now().UnixNano()
		n, oobn, err := c.recvmsgOnce(fd)
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			c.drained = t0
			return false
		}
		c.n, c.err = n, nil
		if err != 0 {
			c.err = err
		}
		if err == 0 && n > 0 {
			c.after.Store(c.drained)
			c.stamp.Store(receiveStamp(c.oob[:oobn]))
			c.full.Store(n == len(c.p))
			c.seq.Add(1)
			if n < len(c.p) {
				c.drained = t0
			}
		}
		return true
	}
}

// recvmsgOnce is one recvmsg(2) call into c.p, the control messages into
// c.oob, without waiting.
func (c *stampedConn) recvmsgOnce(fd uintptr) (n, oobn int, errno unix.Errno) {
	c.iov.Base = &c.p[0]
	c.iov.SetLen(len(c.p))
	c.msg = unix.Msghdr{Iov: &c.iov, Control: &c.oob[0]}
	c.msg.SetIovlen(1)
	c.msg.SetControllen(len(c.oob))
	r, _, e := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&c.msg)), unix.MSG_DONTWAIT)
	c.iov.Base = nil // keep no reference to the caller's buffer
	if e != 0 {
		return 0, 0, e
	}
	return int(r), int(c.msg.Controllen), 0
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

// connIdle reports whether an unused connection is still open with
// nothing to read: a peek finds the queue empty. A connection the server
// closed (or wrote to unasked) is not fit for a request.
func connIdle(c net.Conn) bool {
	var sc syscall.Conn
	switch t := c.(type) {
	case *stampedConn:
		return rawIdle(t.raw)
	case syscall.Conn:
		sc = t
	default:
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	return rawIdle(raw)
}

func rawIdle(raw syscall.RawConn) bool {
	idle := true
	var b [1]byte
	if err := raw.Control(func(fd uintptr) {
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		idle = err == unix.EAGAIN
	}); err != nil {
		return false
	}
	return idle
}
