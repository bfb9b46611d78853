package record

import (
	"encoding/binary"
	"fmt"
	"iter"
	"math"
	"sync"
	"sync/atomic"
)

// A long run's token times are most of its memory (issue 46: 200 a
// request, 1.6 GB as float64 at a million requests). A reader that
// evaluates a run (analyze) packs each request's TokenTimes: each time's
// IEEE 754 bits as the difference from the previous time's bits (the
// first from 0), zig-zag encoded as a varint. The difference of two times
// of one binade is their distance in units of the last place (2^-22 s for
// a Unix time of this era), so a gap of 20 ms takes 3 bytes; any float64
// (NaN, infinities, times out of order) round-trips bit for bit, since
// the differences are of int64 bits, wrapping.
//
// The packed bytes live in a TimesStore: in memory (PackTokenTimes), or
// in a file (NewTimesStore over the temporary file archive.LoadDataPacked
// opens, TimesWriter),
// read back, a request at a time, whenever the times are asked for; a
// run's token times then take no memory at all between the passes that
// read them (about 3 bytes a time in the file and the page cache). Code
// that reads token times from a run that may be packed calls
// TokenTimesLen and AppendTokenTimes (or Times, TokenTimesAll) instead of
// reading the field.

// packedRef locates a request's packed token times: size bytes at off in
// src, n times. src is nil when the times are not packed.
type packedRef struct {
	src     *TimesStore
	off     int64
	size, n uint32
}

// TimesStore holds packed token times: in memory, or in a file written by
// TimesWriters and read with ReadAt. A read or write error of
// the file is kept (Err): the times asked for then read as NaN, which the
// rules and metrics refuse, and the reader reports the error. It is safe
// for concurrent use.
type TimesStore struct {
	mem  []byte
	f    TimesFile
	next atomic.Int64
	bufs sync.Pool

	mu    sync.Mutex
	err   error
	size  int64                   // of the file once written (NewTimesStore: -1 until the first read)
	cache [timesCacheBlocks]block // the blocks of the file read last
	clock uint64                  // reads so far, for the cache's ages
}

// block is a stretch of a store's file read at once: requests are read
// back in about the order they were packed (one pass after another over
// the run), so a read of a block serves the next few hundred requests
// without a system call each.
type block struct {
	off  int64
	data []byte
	used uint64 // the clock at its last use
	busy bool   // being read (data nil): see TimesStore.readAt
}

const (
	// timesCacheBlocks is how many blocks a store keeps: one for each of
	// the parts a pass reads in parallel, and some.
	timesCacheBlocks = 8
	// timesBlock is the size of a block (256 KiB).
	timesBlock = 256 << 10
)

// TimesFile is the file a TimesStore keeps its packed times in: the
// archive's reader opens it (a temporary file, archive.LoadDataPacked);
// this package, which does no I/O of its own, only reads and writes it.
// Size is the file's size once written; Close also removes it.
type TimesFile interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Size() (int64, error)
	Close() error
}

// NewTimesStore returns a store keeping its packed times in f, which it
// closes at Close.
func NewTimesStore(f TimesFile) *TimesStore { return &TimesStore{f: f, size: -1} }

// Close closes the store's file (nothing for one in memory).
func (s *TimesStore) Close() error {
	if s == nil || s.f == nil {
		return nil
	}
	return s.f.Close()
}

// Err is the first error reading or writing the store's file.
func (s *TimesStore) Err() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *TimesStore) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = fmt.Errorf("token times: temporary file: %w", err)
	}
	s.mu.Unlock()
}

// read calls f with the size bytes at off (f must not keep them).
func (s *TimesStore) read(off int64, size uint32, f func([]byte)) {
	if s.f == nil {
		f(s.mem[off : off+int64(size)])
		return
	}
	bp, _ := s.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	if cap(*bp) < int(size) {
		*bp = make([]byte, max(int(size), 4096))
	}
	b := (*bp)[:size]
	if err := s.readAt(b, off); err != nil {
		s.fail(err)
		b = nil
	}
	f(b)
	s.bufs.Put(bp)
}

// readAt fills b with the file's bytes at off, from a block of the cache
// when one holds them, else from a block read for them into the buffer of
// the block it replaces (the oldest), so that a long pass reads through
// the same few buffers instead of allocating 256 KiB for every block
// (issue 46: they were garbage, thousands of them, each kept alive by the
// GC cycle it was allocated in).
//
// A block's bytes are copied out only under the lock. While a block is
// read, its slot is busy: empty, so that no reader copies from its buffer
// (which the reading goroutine alone holds, outside the lock), and not
// picked by another miss. When every slot is busy, b is read on its own.
func (s *TimesStore) readAt(b []byte, off int64) error {
	end := off + int64(len(b))
	s.mu.Lock()
	s.clock++
	oldest := -1
	for i := range s.cache {
		c := &s.cache[i]
		if c.data != nil && off >= c.off && end <= c.off+int64(len(c.data)) {
			copy(b, c.data[off-c.off:])
			c.used = s.clock
			s.mu.Unlock()
			return nil
		}
		if !c.busy && (oldest < 0 || c.used < s.cache[oldest].used) {
			oldest = i
		}
	}
	if s.size < 0 {
		n, err := s.f.Size()
		if err != nil {
			s.mu.Unlock()
			return err
		}
		s.size = n
	}
	size := s.size
	if len(b) >= timesBlock || end > size || oldest < 0 {
		s.mu.Unlock()
		_, err := s.f.ReadAt(b, off) // a long list, or one past the file's end: an error
		return err
	}
	data := s.cache[oldest].data
	s.cache[oldest] = block{busy: true}
	s.mu.Unlock()

	if cap(data) < timesBlock {
		data = make([]byte, timesBlock)
	}
	data = data[:min(timesBlock, size-off)]
	_, err := s.f.ReadAt(data, off)
	if err == nil {
		copy(b, data)
	}
	s.mu.Lock()
	if err != nil {
		s.cache[oldest] = block{}
	} else {
		s.cache[oldest] = block{off: off, data: data, used: s.clock}
	}
	s.mu.Unlock()
	return err
}

// timesWriterSlab is the room a TimesWriter reserves in the file at a
// time (1 MiB, or one request's most).
const timesWriterSlab = 1 << 20

// TimesWriter packs requests' token times into a store's file, through a
// buffer of its own written out when full (Flush at the end). One writer
// is used by one goroutine; a store takes many.
type TimesWriter struct {
	s    *TimesStore
	base int64 // where buf goes in the file
	buf  []byte
	open bool // base is reserved for buf (false after Flush)
}

// NewWriter returns a writer into s's file.
func (s *TimesStore) NewWriter() *TimesWriter { return &TimesWriter{s: s} }

// Pack packs r's TokenTimes into the writer's store and sets TokenTimes
// to nil. A request without token times is left as it is, and so is one
// with more times than a packed reference counts (2^32 - 1: no line of
// an archive holds as many).
func (w *TimesWriter) Pack(r *Request) error {
	n := len(r.TokenTimes)
	most := binary.MaxVarintLen64 * n
	if n == 0 || uint64(most) > math.MaxUint32 {
		return nil
	}
	if !w.open || len(w.buf)+most > cap(w.buf) {
		if err := w.Flush(); err != nil {
			return err
		}
		size := max(timesWriterSlab, most)
		if cap(w.buf) < size {
			w.buf = make([]byte, 0, size)
		}
		w.buf = w.buf[:0]
		w.base = w.s.next.Add(int64(size)) - int64(size)
		w.open = true
	}
	start := len(w.buf)
	w.buf = appendPacked(w.buf, r.TokenTimes)
	r.packed = packedRef{src: w.s, off: w.base + int64(start), size: uint32(len(w.buf) - start), n: uint32(n)}
	r.TokenTimes = nil
	return nil
}

// Flush writes the writer's buffer to the file; the next Pack reserves
// new room.
func (w *TimesWriter) Flush() error {
	w.open = false
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.s.f.WriteAt(w.buf, w.base)
	w.buf = w.buf[:0]
	if err != nil {
		w.s.fail(err)
		return w.s.Err()
	}
	return nil
}

func appendPacked(buf []byte, ts []float64) []byte {
	prev := uint64(0)
	for _, t := range ts {
		b := math.Float64bits(t)
		buf = binary.AppendVarint(buf, int64(b-prev))
		prev = b
	}
	return buf
}

// PackTokenTimes packs r's TokenTimes into the end of buf (which it
// returns, grown as needed), a store in memory, and sets TokenTimes to
// nil; r's packed times share buf's array. A request without token
// times is left as it is.
func (r *Request) PackTokenTimes(buf []byte) []byte {
	n := len(r.TokenTimes)
	if n == 0 || uint64(binary.MaxVarintLen64*n) > math.MaxUint32 {
		return buf
	}
	start := len(buf)
	buf = appendPacked(buf, r.TokenTimes)
	s := &TimesStore{mem: buf[start:len(buf):len(buf)]}
	r.packed = packedRef{src: s, size: uint32(len(buf) - start), n: uint32(n)}
	r.TokenTimes = nil
	return buf
}

// TokenTimesPacked reports whether r's token times are packed.
func (r *Request) TokenTimesPacked() bool { return r.packed.src != nil }

// TokenTimesLen is the number of r's token times, packed or not.
func (r *Request) TokenTimesLen() int {
	if r.packed.src == nil {
		return len(r.TokenTimes)
	}
	return int(r.packed.n)
}

// AppendTokenTimes appends r's token times, packed or not, to dst.
func (r *Request) AppendTokenTimes(dst []float64) []float64 {
	for _, t := range r.TokenTimesAll() {
		dst = append(dst, t)
	}
	return dst
}

// TokenTimesAll yields r's token times with their indices, packed or
// not, without making a list of them. Times that could not be read back
// (TimesStore.Err) are NaN.
func (r *Request) TokenTimesAll() iter.Seq2[int, float64] {
	return func(yield func(int, float64) bool) {
		p := r.packed
		if p.src == nil {
			for i, t := range r.TokenTimes {
				if !yield(i, t) {
					return
				}
			}
			return
		}
		p.src.read(p.off, p.size, func(b []byte) {
			prev := uint64(0)
			for i := range int(p.n) {
				if b == nil {
					if !yield(i, math.NaN()) {
						return
					}
					continue
				}
				d, k := binary.Varint(b)
				b = b[k:]
				prev += uint64(d)
				if !yield(i, math.Float64frombits(prev)) {
					return
				}
			}
		})
	}
}

// Times returns r's token times: the field itself when they are not
// packed, else unpacked into buf (reused from its start when it has
// room, for a caller that reads one request after another).
func (r *Request) Times(buf []float64) []float64 {
	if r.packed.src == nil {
		return r.TokenTimes
	}
	return r.AppendTokenTimes(buf[:0])
}

// LastTokenTime is r's last token time (false when it has none).
func (r *Request) LastTokenTime() (float64, bool) {
	if r.packed.src == nil {
		if n := len(r.TokenTimes); n > 0 {
			return r.TokenTimes[n-1], true
		}
		return 0, false
	}
	last, ok := 0.0, false
	for _, t := range r.TokenTimesAll() {
		last, ok = t, true
	}
	return last, ok
}

// UnpackTokenTimes sets TokenTimes from the packed times, if packed, for
// code that reads the field (a formula that reads token_times).
func (r *Request) UnpackTokenTimes() {
	if r.packed.src != nil {
		r.TokenTimes = r.AppendTokenTimes(make([]float64, 0, r.TokenTimesLen()))
		r.packed = packedRef{}
	}
}

// UnpackTokenTimes unpacks the token times of every request of the run.
func (r *Run) UnpackTokenTimes() {
	for i := range r.Requests {
		r.Requests[i].UnpackTokenTimes()
	}
}

// SetTimesStore gives the run the store its requests' token times were
// packed into (CloseTimes closes it).
func (r *Run) SetTimesStore(s *TimesStore) { r.times = s }

// TimesErr is the first error reading or writing the run's store of
// packed token times (nil when none, or none was read): a reader checks
// it after the figures, which are not to be trusted when it is not nil.
func (r *Run) TimesErr() error { return r.times.Err() }

// CloseTimes closes (and removes) the run's store of packed token times,
// if any: its requests' token times are then no longer readable.
func (r *Run) CloseTimes() error {
	err := r.times.Close()
	r.times = nil
	return err
}
