package record

import (
	"errors"
	"sync"
	"testing"
)

// memFile is a TimesFile over bytes in memory, read without allocating.
type memFile struct{ b []byte }

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(f.b)) {
		return 0, errors.New("offset out of the file")
	}
	n := copy(p, f.b[off:])
	if n < len(p) {
		return n, errors.New("read past the end of the file")
	}
	return n, nil
}
func (f *memFile) WriteAt(p []byte, off int64) (int, error) { return 0, errors.New("read-only") }
func (f *memFile) Size() (int64, error)                     { return int64(len(f.b)), nil }
func (f *memFile) Close() error                             { return nil }

// fileByte is the byte at offset i of the test file: it differs from its
// neighbours and repeats only every 251 bytes, so a block read from the
// wrong offset shows.
func fileByte(i int) byte { return byte(i % 251) }

func testFile(n int) *memFile {
	b := make([]byte, n)
	for i := range b {
		b[i] = fileByte(i)
	}
	return &memFile{b}
}

func checkBytes(b []byte, off int) error {
	for i, c := range b {
		if c != fileByte(off+i) {
			return errors.New("wrong byte")
		}
	}
	return nil
}

// A long sequential read of many blocks reuses the evicted blocks'
// buffers: the cache full, reading 40 blocks again allocates none (it
// allocated a block of 256 KiB for each, issue 46).
func TestTimesStoreReusesBlocks(t *testing.T) {
	const blocks = 40
	s := NewTimesStore(testFile(blocks*timesBlock + 1000))
	b := make([]byte, 1000)
	readAll := func() {
		for off := 0; off+len(b) <= blocks*timesBlock+1000; off += len(b) {
			if err := s.readAt(b, int64(off)); err != nil {
				t.Fatal(err)
			}
			if err := checkBytes(b, off); err != nil {
				t.Fatalf("offset %d: %v", off, err)
			}
		}
	}
	// AllocsPerRun reads it once to warm up (filling the cache), then
	// counts the second read's allocations.
	if n := testing.AllocsPerRun(1, readAll); n > 2 {
		t.Fatalf("reading %d blocks allocated %v times, want the cache's blocks reused", blocks, n)
	}
}

// Readers in parallel (go test -race), each reading the file in its own
// order, in pieces of every size (longer than a block, and to the end),
// get the file's bytes.
func TestTimesStoreConcurrentReads(t *testing.T) {
	const size = 12*timesBlock + 777
	s := NewTimesStore(testFile(size))
	var wg sync.WaitGroup
	for g := range 10 { // more than the cache's blocks: some find every slot busy
		wg.Go(func() {
			b := make([]byte, timesBlock+10)
			x := uint64(g + 1)
			for range 2000 {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				n := int(x % 5000)
				if x%97 == 0 {
					n = timesBlock + int(x%10) // longer than a block
				}
				off := int(x>>20) % (size - n + 1)
				if g%2 == 0 && x%3 == 0 {
					off = size - n // up to the end
				}
				if err := s.readAt(b[:n], int64(off)); err != nil {
					t.Errorf("%d bytes at %d: %v", n, off, err)
					return
				}
				if err := checkBytes(b[:n], off); err != nil {
					t.Errorf("%d bytes at %d: %v", n, off, err)
					return
				}
			}
		})
	}
	wg.Wait()
	// Past the end: an error, not bytes.
	if err := s.readAt(make([]byte, 10), size-5); err == nil {
		t.Error("a read past the file's end gave no error")
	}
}
