package streamcore

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

// Arrival times. A token's time is when its bytes reached this machine, not
// when the client got round to reading them: with a thousand streams in
// flight, the first tokens of a burst wait their turn for a CPU, and a time
// taken in user space would add that wait to TTFT and to the inter-token
// gaps. Where the kernel can stamp received data (Linux: SO_TIMESTAMPNS on
// the client's TCP connections), the transport keeps the stamp of the
// newest data read from each connection, and a token's time is the run
// clock's reading less how long ago the kernel received it. One read may
// hold several events: they share its stamp, exact for the newest and an
// upper bound for the others (ReadStamp says which read an event came
// in, so that the client can count those). Elsewhere (other
// systems, a caller's own transport, a stamp that is missing or implausible)
// the time is the clock's reading when the token is read. Linux turns
// receive stamping on for the whole system shortly after the first socket
// asks for it, so the first packets on a machine where no socket had it on
// may come unstamped and take the clock's reading; warm-up requests cover
// that.

// maxStampLag bounds how old a kernel stamp may be for it to be used; an
// older one (or one in the future) means the wall clock was stepped.
const maxStampLag = time.Minute

// Stamper is a connection that knows when the kernel received the
// data last read from it: Unix nanoseconds, 0 when unknown.
type Stamper interface {
	LastReceived() int64
	LastRead() ReadStamp
}

// ReadStamp is what a connection knows about its last read that returned
// data. The kernel gives one stamp per read, that of the newest segment the
// read consumed, and it merges segments that wait unread in the receive
// queue (tcp_try_coalesce), the merged one keeping the newest stamp. So
// the stamp is exact for the data at the end of the read and an upper
// bound for the rest: an event read together with later data arrived in
// [after, stamp], where after is when the queue was last seen empty.
type ReadStamp struct {
	Seq   uint64 // counts the reads that returned data; 0: none
	Stamp int64  // Unix ns when the newest data read was received; 0 unknown
	After int64  // Unix ns, taken before the last read that emptied the queue; 0 unknown
	Full  bool   // the read filled the buffer: data newer than its end may share its stamp
}

// StamperOf returns the stamper under c, looking through TLS; nil when c
// keeps no stamps.
func StamperOf(c net.Conn) Stamper {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	s, _ := c.(Stamper)
	return s
}

// arrival returns when the data last read from s reached the machine, on
// the time base of now (the clock's reading, Unix seconds): now less the
// age of the kernel's stamp. It returns now when there is no usable stamp.
func arrival(s Stamper, now float64) float64 {
	if s == nil {
		return now
	}
	return ArrivalAt(s.LastReceived(), now)
}

// Arrivals hands out the arrival times of one response's data: one clock
// reading and one conversion per read (the events of one read share its
// time), never before the floor (sent_at) or an earlier time handed out.
// Each reading of the clock and of the stamp's age is separate, so two
// conversions of one stamp may differ by a rounding step (2^-22 s at
// today's Unix times) either way; taking one per read, and the maximum
// with the last, makes the times monotonic by construction.
type Arrivals struct {
	Read ReadStamp // the read the latest time is for (Seq 0: none)
	Last float64   // the latest time handed out; 0: none
}

// Now is the arrival time of the data last read from s (nil: no stamps,
// the clock's reading) on clock's time base.
// The read the current event came in is a.Read (Seq 0: no stamps).
func (a *Arrivals) Now(clock func() float64, s Stamper, floor float64) float64 {
	if s == nil {
		return a.Hold(clock(), floor)
	}
	r := s.LastRead()
	if a.Same(r) {
		return a.Last // the same read: its time, worked out once
	}
	return a.Convert(r, clock(), floor)
}

// Same reports whether r is the read the last time was for.
func (a *Arrivals) Same(r ReadStamp) bool {
	return r.Seq == a.Read.Seq && r.Seq != 0 && a.Last != 0
}

// Convert hands out the arrival time of a new read r, on the time base
// of now (the clock's reading).
func (a *Arrivals) Convert(r ReadStamp, now, floor float64) float64 {
	a.Read = r
	return a.Hold(ArrivalAt(r.Stamp, now), floor)
}

// Hold hands out t, or the floor or the last time handed out when later.
func (a *Arrivals) Hold(t, floor float64) float64 {
	t = max(t, a.Last, floor)
	a.Last = t
	return t
}

// ArrivalAt is arrival for a stamp of ns (Unix nanoseconds, 0 unknown).
func ArrivalAt(ns int64, now float64) float64 {
	if ns == 0 {
		return now
	}
	lag := time.Now().UnixNano() - ns
	if lag < 0 || lag > int64(maxStampLag) {
		return now
	}
	return now - float64(lag)/1e9
}

// stampingDialer dials with d and asks the kernel to stamp what each TCP
// connection receives, where it can. A connection opened ahead of time by
// Prepare, in the request's context, is taken instead when there is one.
func stampingDialer(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if c := connPoolFrom(ctx).take(network, addr); c != nil {
			return c, nil
		}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return stampReceives(c), nil
	}
}
