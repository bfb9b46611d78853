package archive

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// MaxLineBytes is the longest line a data file (power.csv, requests.jsonl,
// engine_metrics.jsonl) may have. A request's line holds its token times
// (a 100,000-token answer is about 2 MB); a longer line is not a record
// this format writes, and reading it whole could exhaust memory.
const MaxLineBytes = 64 << 20

// lineReader reads a file line by line, lines of at most max bytes.
type lineReader struct {
	br   *bufio.Reader
	long []byte // a line longer than the bufio buffer
	no   int    // number of the line last returned, 1-based
	read int64  // bytes consumed so far
	size int64  // size of the whole input when known, else -1
	max  int    // longest line allowed, line ending excluded
}

func newLineReader(r io.Reader) *lineReader {
	lr := &lineReader{br: bufio.NewReaderSize(r, 256<<10), size: -1, max: MaxLineBytes}
	switch v := r.(type) {
	case interface{ Len() int }: // *bytes.Reader, *strings.Reader, ...
		lr.size = int64(v.Len())
	case interface{ Stat() (fs.FileInfo, error) }: // *os.File
		if st, err := v.Stat(); err == nil && st.Mode().IsRegular() {
			lr.size = st.Size()
		}
	}
	return lr
}

// grow makes room for more items in a slice being filled from lr, once it
// is full: to the whole input's estimated count when the size of the input
// is known (from the bytes per item so far), else to twice its length.
// Growing by estimate avoids copying a large slice again and again.
func grow[T any](items []T, lr *lineReader) []T {
	if len(items) < cap(items) {
		return items
	}
	n := 2 * len(items)
	if lr.size > 0 && len(items) > 0 && lr.read > 0 {
		est := float64(lr.size) / float64(lr.read) * float64(len(items)) * 1.02
		n = max(len(items)+len(items)/8, int(est)+16)
	}
	return slices.Grow(items, max(n, 64)-len(items))
}

// next returns the next line without its line ending ("\n" or "\r\n"), valid
// until the next call, and whether it ended with a newline (a last line
// without one may have been cut off mid-write). It returns io.EOF after the
// last line. A line longer than lr.max is a *LineError (File left empty).
func (lr *lineReader) next() (line []byte, complete bool, err error) {
	lr.long = lr.long[:0]
	for {
		s, err := lr.br.ReadSlice('\n')
		switch err {
		case nil:
			lr.no++
			lr.read += int64(len(s))
			if len(lr.long) > 0 {
				lr.long = append(lr.long, s...)
				s = lr.long
			}
			s = s[:len(s)-1]
			if n := len(s); n > 0 && s[n-1] == '\r' {
				s = s[:n-1]
			}
			if len(s) > lr.max {
				lr.no--
				return nil, false, lr.tooLong()
			}
			return s, true, nil
		case bufio.ErrBufferFull:
			lr.read += int64(len(s))
			if len(lr.long)+len(s) > lr.max {
				return nil, false, lr.tooLong()
			}
			lr.long = append(lr.long, s...)
		case io.EOF:
			if len(lr.long) > 0 {
				lr.long = append(lr.long, s...)
				s = lr.long
			}
			if len(s) == 0 {
				return nil, false, io.EOF
			}
			if len(s) > lr.max {
				return nil, false, lr.tooLong()
			}
			lr.no++
			lr.read += int64(len(s))
			return s, false, nil
		default:
			return nil, false, err
		}
	}
}

// tooLong is the error for line lr.no+1 being longer than lr.max.
func (lr *lineReader) tooLong() *LineError {
	return &LineError{Line: lr.no + 1, Msg: fmt.Sprintf("line longer than %s, the most a line of this file may have; not a file of the run archive format (a device, or binary data?)", sizeText(lr.max))}
}

// sizeText writes a byte count in MiB or KiB or bytes, whichever is whole.
func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// jsonlBatch is a run of consecutive lines of a JSON-lines file, decoded as
// one unit by a worker.
type jsonlBatch struct {
	seq   int
	data  []byte // the lines, concatenated
	lines []batchLine
}

type batchLine struct {
	no         int // line number in the file
	start, end int // in data
	complete   bool
}

const (
	batchBytes = 256 << 10
	batchLines = 2048
)

// readJSONL decodes a JSON-lines file into a []T, one element per non-blank
// line, checking each element with check (which returns "" when fine).
// Batches of lines are decoded in parallel while the file is read; the error
// returned is the first in the file. With unique, two elements with one key
// are an error at the second's line.
func readJSONL[T any](r io.Reader, name string, decode func(*jsonLine, []byte, *T) *LineError, check func(*T) string, unique *uniqueKey[T]) ([]T, error) {
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *jsonlBatch, workers)
	free := make(chan *jsonlBatch, 2*workers) // batches to reuse
	var (
		mu      sync.Mutex
		results [][]T
		nos     [][]int      // line numbers of results, by batch
		errs    []*LineError // by batch
		failed  atomic.Bool
		wg      sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			var d jsonLine
			for b := range jobs {
				items := make([]T, len(b.lines))
				var lineNos []int
				if unique != nil {
					lineNos = make([]int, len(b.lines))
					for i, ln := range b.lines {
						lineNos[i] = ln.no
					}
				}
				var lerr *LineError
				for i, ln := range b.lines {
					if err := decode(&d, b.data[ln.start:ln.end], &items[i]); err != nil {
						if !ln.complete {
							err.Msg = "last line is incomplete (no newline at the end; the file was probably cut off mid-write by a crash): " + err.Msg
						}
						err.File, err.Line = name, ln.no
						lerr = err
						break
					}
					if msg := check(&items[i]); msg != "" {
						lerr = &LineError{File: name, Line: ln.no, Msg: msg}
						break
					}
				}
				if lerr != nil {
					failed.Store(true)
				}
				mu.Lock()
				results[b.seq], nos[b.seq], errs[b.seq] = items, lineNos, lerr
				mu.Unlock()
				select {
				case free <- b:
				default:
				}
			}
		})
	}

	lr := newLineReader(r)
	var readErr error
	var cur *jsonlBatch
	send := func() {
		mu.Lock()
		cur.seq = len(results)
		results = append(results, nil)
		nos = append(nos, nil)
		errs = append(errs, nil)
		mu.Unlock()
		jobs <- cur
		cur = nil
	}
	for !failed.Load() {
		line, complete, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		if isBlank(line) {
			continue
		}
		if cur == nil {
			select {
			case cur = <-free:
				cur.data, cur.lines = cur.data[:0], cur.lines[:0]
			default:
				cur = &jsonlBatch{data: make([]byte, 0, batchBytes+4<<10), lines: make([]batchLine, 0, batchLines)}
			}
		}
		start := len(cur.data)
		cur.data = append(cur.data, line...)
		cur.lines = append(cur.lines, batchLine{no: lr.no, start: start, end: len(cur.data), complete: complete})
		if len(cur.data) >= batchBytes || len(cur.lines) >= batchLines {
			send()
		}
	}
	if cur != nil && len(cur.lines) > 0 {
		send()
	}
	close(jobs)
	wg.Wait()

	for _, err := range errs { // in file order
		if err != nil {
			return nil, err
		}
	}
	if readErr != nil {
		var lerr *LineError
		if errors.As(readErr, &lerr) {
			lerr.File = name
			return nil, lerr
		}
		return nil, &LineError{File: name, Line: lr.no + 1, Msg: "read error: " + readErr.Error(), Err: readErr}
	}
	if unique != nil {
		if err := checkDuplicates(results, nos, name, unique); err != nil {
			return nil, err
		}
	}
	n := 0
	for _, items := range results {
		n += len(items)
	}
	if len(results) == 1 {
		return results[0], nil
	}
	out := make([]T, 0, n)
	for i, items := range results {
		out = append(out, items...)
		results[i] = nil
	}
	return out, nil
}

// uniqueKey says what must be unique among the elements of a data file:
// key identifies an element (ok false: not checked), msg describes a
// duplicate.
type uniqueKey[T any] struct {
	key func(*T) (k string, ok bool)
	msg func(*T) string
}

// checkDuplicates reports the first element, in file order, whose key an
// earlier one has.
func checkDuplicates[T any](results [][]T, nos [][]int, name string, u *uniqueKey[T]) error {
	n := 0
	for _, items := range results {
		n += len(items)
	}
	seen := newDupIndex[string](n)
	for b, items := range results {
		for i := range items {
			k, ok := u.key(&items[i])
			if !ok {
				continue
			}
			if first, dup := seen.add(k, nos[b][i]); dup {
				return &LineError{File: name, Line: nos[b][i], Msg: fmt.Sprintf("%s (first on line %d); a line written twice, or two files joined?", u.msg(&items[i]), first)}
			}
		}
	}
	return nil
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}
