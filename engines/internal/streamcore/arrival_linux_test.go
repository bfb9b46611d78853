package streamcore

import (
	"context"
	"encoding/binary"
	"math"
	"net"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cmsg builds one control message as the kernel lays it out.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func timespec64(sec, nsec int64) []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint64(b, uint64(sec))
	binary.NativeEndian.PutUint64(b[8:], uint64(nsec))
	return b
}

func TestReceiveStampParsesControlMessages(t *testing.T) {
	ts := timespec64(1700000000, 250) // 1,700,000,000 s and 250 ns
	const want = 1700000000*1e9 + 250
	rights := unix.UnixRights(3)
	cases := []struct {
		name string
		oob  []byte
		want int64
	}{
		{"none", nil, 0},
		{"stamp", cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, ts), want},
		{"after another message", append(append([]byte{}, rights...), cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, ts)...), want},
		{"other messages only", rights, 0},
		{"wrong level", cmsg(unix.SOL_TCP, unix.SCM_TIMESTAMPNS, ts), 0},
		{"data too short", cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, ts[:4]), 0},
		{"truncated header", cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, ts)[:8], 0},
	}
	for _, c := range cases {
		if got := receiveStamp(c.oob); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// holdStampsOn keeps one stamped connection open until the test ends,
// once the kernel stamps what it receives: Linux turns software receive
// stamps on for the whole system shortly after the first socket asks for
// them and off after the last one closes, so a fresh socket's first
// packets may carry none.
func holdStampsOn(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 1)
		for {
			if _, err := c.Read(b); err != nil {
				return
			}
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	}()
	c, err := stampingDialer(&net.Dialer{})(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := StamperOf(c)
	if s == nil {
		t.Fatalf("%T keeps no receive stamps", c)
	}
	b := make([]byte, 1)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(b); err != nil {
			t.Fatal(err)
		}
		if s.LastReceived() != 0 {
			return
		}
	}
	t.Fatal("the kernel stamped nothing in 5s")
}

// TestStampIsArrivalNotRead: the server writes at a known time, the client
// reads 150 ms later; the stamp is the arrival, within a margin far below
// the delay (a stamp taken at the read would miss it by 150 ms).
func TestStampIsArrivalNotRead(t *testing.T) {
	holdStampsOn(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	wrote := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var b [1]byte
		if _, err := c.Read(b[:]); err != nil { // the client is ready
			return
		}
		wrote <- time.Now().UnixNano()
		_, _ = c.Write([]byte("token"))
		_, _ = c.Read(b[:]) // until the client closes
	}()
	c, err := stampingDialer(&net.Dialer{})(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := StamperOf(c)
	if s == nil {
		t.Fatalf("%T keeps no receive stamps", c)
	}
	if _, err := c.Write([]byte("?")); err != nil {
		t.Fatal(err)
	}
	sent := <-wrote
	time.Sleep(150 * time.Millisecond)
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "token" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if d := time.Duration(s.LastReceived() - sent); d < 0 || d > 50*time.Millisecond {
		t.Fatalf("stamp %v after the write, want within 50ms", d)
	}
	now := float64(time.Now().UnixNano()) / 1e9
	if lag := now - arrival(s, now); lag < 0.1 {
		t.Fatalf("arrival only %.3fs before now, want about 0.15s", lag)
	}
	// Deadlines and EOF behave as on the plain connection.
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := c.Read(buf); err == nil {
		t.Fatal("read past the deadline succeeded")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("deadline: %v", err)
	}
}

// TestArrivalIgnoresUnusableStamps: no stamp, or one from a stepped wall
// clock, leaves the clock's reading as it is.
func TestArrivalIgnoresUnusableStamps(t *testing.T) {
	now := 1000.0
	for _, ns := range []int64{0, time.Now().Add(time.Hour).UnixNano(), time.Now().Add(-2 * maxStampLag).UnixNano()} {
		if got := arrival(fixedStamp(ns), now); got != now {
			t.Errorf("stamp %d: %v, want %v", ns, got, now)
		}
	}
	if got := arrival(nil, now); got != now {
		t.Errorf("no stamper: %v", got)
	}
	// A stamp 2 s old moves the time 2 s back (within the test's own
	// scheduling).
	if got := arrival(fixedStamp(time.Now().Add(-2*time.Second).UnixNano()), now); math.Abs(got-(now-2)) > 0.5 {
		t.Errorf("2 s old stamp: %v, want about %v", got, now-2)
	}
}

type fixedStamp int64

func (f fixedStamp) LastReceived() int64 { return int64(f) }
func (f fixedStamp) LastRead() ReadStamp { return ReadStamp{Stamp: int64(f)} }
