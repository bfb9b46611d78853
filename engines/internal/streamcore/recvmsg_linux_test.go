package streamcore

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeRaw is the runtime poller played by the test: Read calls f on fd
// until it reports done, waiting with poll(2) each time it asks to wait,
// so that stampedConn's recvmsg runs on a socket the test made. readErr,
// when set, is what the poller returns instead (a deadline, a close).
type fakeRaw struct {
	fd      int
	readErr error
	waits   int // how many times f asked to wait for data
}

var _ syscall.RawConn = (*fakeRaw)(nil)

func (r *fakeRaw) Control(f func(fd uintptr)) error { f(uintptr(r.fd)); return nil }

func (r *fakeRaw) Read(f func(fd uintptr) bool) error {
	if r.readErr != nil {
		return r.readErr
	}
	for !f(uintptr(r.fd)) {
		r.waits++
		pfd := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, 5000); err != nil && err != unix.EINTR {
			return err
		}
	}
	return nil
}

func (r *fakeRaw) Write(func(fd uintptr) bool) error { return errors.New("fakeRaw: not for writing") }

// stampedPair returns a stampedConn reading one end of a Unix datagram
// socket pair through fakeRaw, with receive stamps on, and the other end's
// descriptor to write to. Unix datagram sockets stamp what they receive
// (SCM_TIMESTAMPNS) as TCP does, and a datagram is one read: the test
// decides what each recvmsg sees.
func stampedPair(t *testing.T) (*stampedConn, *fakeRaw, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Skipf("socketpair: %v", err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		t.Skipf("SO_TIMESTAMPNS: %v", err)
	}
	addrs, peer := net.Pipe() // addresses for the errors only
	t.Cleanup(func() { addrs.Close(); peer.Close() })
	raw := &fakeRaw{fd: fds[0]}
	return newStampedConn(addrs, raw), raw, fds[1]
}

// TestRecvmsgKeepsStampsOfEachRead drives the recvmsg(2) path (unsafe
// pointers into the connection's own msghdr and iovec) on a real socket:
// the read waits for data (EAGAIN, noting when the queue was empty), gets
// the data with the kernel's stamp, counts the reads that returned data,
// says when a read filled the buffer, and an empty read is EOF.
func TestRecvmsgKeepsStampsOfEachRead(t *testing.T) {
	c, raw, peer := stampedPair(t)
	if n, err := c.Read(nil); n != 0 || err != nil {
		t.Fatalf("empty buffer: %d, %v", n, err)
	}
	if r := c.LastRead(); r != (ReadStamp{}) {
		t.Fatalf("before any read: %+v", r)
	}

	// 1. The data comes 20 ms after the read starts: the read waits once
	// at least, and the queue was empty before the write.
	start := time.Now().UnixNano()
	wrote := make(chan int64, 1)
	go func() {
		time.Sleep(20 * time.Millisecond)
		wrote <- time.Now().UnixNano()
		if _, err := unix.Write(peer, []byte("token")); err != nil {
			t.Errorf("write: %v", err)
		}
	}()
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	done := time.Now().UnixNano()
	sent := <-wrote
	if err != nil || string(buf[:n]) != "token" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if raw.waits < 1 {
		t.Errorf("the read never waited for data (%d waits)", raw.waits)
	}
	r1 := c.LastRead()
	switch {
	case r1.Seq != 1:
		t.Errorf("seq %d, want 1", r1.Seq)
	case r1.Stamp < sent || r1.Stamp > done:
		t.Errorf("stamp %d not between the write %d and the end of the read %d", r1.Stamp, sent, done)
	case r1.After < start || r1.After > sent:
		t.Errorf("queue seen empty at %d, want between the read's start %d and the write %d", r1.After, start, sent)
	case r1.Full:
		t.Error("5 bytes into 64 filled the buffer")
	case c.LastReceived() != r1.Stamp:
		t.Errorf("LastReceived %d, LastRead's stamp %d", c.LastReceived(), r1.Stamp)
	}

	// 2. Ten bytes into a buffer of four: the read fills it; the queue
	// was last seen empty at the start of read 1 (it left data behind
	// only if full, and it was not), so After is later than r1.After.
	if _, err := unix.Write(peer, []byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	small := make([]byte, 4)
	if n, err := c.Read(small); n != 4 || err != nil || string(small) != "0123" {
		t.Fatalf("read %q (%d), %v", small[:n], n, err)
	}
	r2 := c.LastRead()
	if r2.Seq != 2 || !r2.Full || r2.Stamp < r1.Stamp || r2.After < r1.After || r2.After > r2.Stamp {
		t.Errorf("second read %+v after %+v", r2, r1)
	}

	// 3. An empty datagram reads as 0 bytes: EOF, and no read counted.
	if _, err := unix.Write(peer, nil); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("empty datagram: %d, %v; want EOF", n, err)
	}
	if r := c.LastRead(); r != r2 {
		t.Errorf("EOF changed the last read: %+v, was %+v", r, r2)
	}
}

// TestRecvmsgErrors: a recvmsg that fails (here on a descriptor that is
// no socket) is a read error naming recvmsg; the poller's own error (a
// deadline, a closed connection) is returned as a read's.
func TestRecvmsgErrors(t *testing.T) {
	c, raw, _ := stampedPair(t)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	raw.fd = p[0]
	_, err := c.Read(make([]byte, 8))
	var oe *net.OpError
	var se *os.SyscallError
	if !errors.As(err, &oe) || oe.Op != "read" || !errors.As(err, &se) || se.Syscall != "recvmsg" || !errors.Is(err, unix.ENOTSOCK) {
		t.Errorf("recvmsg on a pipe: %v, want a read error from recvmsg: ENOTSOCK", err)
	}
	if r := c.LastRead(); r.Seq != 0 {
		t.Errorf("a failed read counted: %+v", r)
	}

	raw.readErr = &net.OpError{Op: "raw-read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	_, err = c.Read(make([]byte, 8))
	if !errors.As(err, &oe) || oe.Op != "read" || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("poller error: %v, want a read error past the deadline", err)
	}
}

// TestConnPoolSkipsClosedConns: a pooled connection the server closed
// meanwhile (or wrote to unasked) is closed and skipped, never handed to a
// request; a plain TCP connection is looked at the same way, and a
// closed one is not open.
func TestConnPoolSkipsClosedConns(t *testing.T) {
	a := listen(t)
	p := NewConnPool("tcp", a.addr())
	p.Fill(context.Background(), 3)
	defer p.Close()
	if n := a.waitAccepted(3); n != 3 {
		t.Fatalf("%d accepted", n)
	}
	a.mu.Lock()
	a.conns[0].Close()                   // the server closed it: EOF waits
	_, _ = a.conns[1].Write([]byte("?")) // unasked data waits
	a.mu.Unlock()
	time.Sleep(20 * time.Millisecond) // the FIN and the byte reach the client
	var idle int
	for c := p.take("tcp", a.addr()); c != nil; c = p.take("tcp", a.addr()) {
		idle++
		c.Close()
	}
	if idle != 1 {
		t.Errorf("%d connections handed out, want the 1 still idle", idle)
	}

	plain, err := net.Dial("tcp", a.addr())
	if err != nil {
		t.Fatal(err)
	}
	if !connIdle(plain) {
		t.Error("an open, quiet TCP connection is not idle")
	}
	plain.Close()
	if connIdle(plain) {
		t.Error("a closed TCP connection is idle")
	}
	if stampReceives(plain) != plain {
		t.Error("a closed connection was wrapped for stamps")
	}
}
