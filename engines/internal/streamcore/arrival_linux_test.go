package streamcore

import (
	"encoding/binary"
	"math"
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
