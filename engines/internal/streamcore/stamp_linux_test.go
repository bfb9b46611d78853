package streamcore_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines/internal/enginetest"
	"github.com/joulebench/joulebench/engines/internal/streamcore"
)

// TestStampIsArrivalNotRead: the server writes at a known time, the client
// reads 150 ms later; the stamp is the arrival, within a margin far below
// the delay (a stamp taken at the read would miss it by 150 ms).
func TestStampIsArrivalNotRead(t *testing.T) {
	enginetest.HoldStampsOn(t)
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
	c, err := streamcore.NewTransport().DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := streamcore.StamperOf(c)
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
	if lag := now - streamcore.ArrivalAt(s.LastReceived(), now); lag < 0.1 {
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
