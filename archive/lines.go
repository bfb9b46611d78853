package archive

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"sort"
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

// blockReader reads a JSON-lines file in blocks of whole lines, read
// straight into the batch that decodes them: no line is copied on its own.
type blockReader struct {
	r     io.Reader
	carry []byte // the start of the line the last block ended in
	eof   bool
	max   int // longest line allowed, line ending excluded
}

func newBlockReader(r io.Reader) *blockReader {
	return &blockReader{r: r, max: MaxLineBytes}
}

// next reads the next block into dst's array (dst is empty) and returns
// it: whole lines, each ending in a newline, and at the end of the input
// the last line without one. A line longer than the array grows it (up to
// what the longest line allowed needs). err is io.EOF with the last block
// (which may be empty), a *LineError (Line for the caller to set) for a
// line longer than max, or the reader's error, returned with the whole
// lines read before it.
func (b *blockReader) next(dst []byte) ([]byte, error) {
	dst = append(dst, b.carry...)
	b.carry = b.carry[:0]
	if b.eof {
		return dst, io.EOF
	}
	lastNL := bytes.LastIndexByte(dst, '\n') // in the carry: -1
	for {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, cap(dst))
		}
		// Never more than a line allowed and its line ending: a line
		// without end is found out after that much, whatever the array's
		// size.
		full := min(cap(dst), b.max+2)
		n, err := b.r.Read(dst[len(dst):full])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			b.eof = true
			return dst, io.EOF
		}
		if i := bytes.LastIndexByte(dst[len(dst)-n:], '\n'); i >= 0 {
			lastNL = len(dst) - n + i
		}
		switch {
		case lastNL >= 0 && (err != nil || len(dst) == full):
			b.carry = append(b.carry, dst[lastNL+1:]...)
			return dst[:lastNL+1], err
		case err != nil:
			return dst[:0], err
		case lastNL < 0 && len(dst) >= b.max+2:
			// No line ending in max+2 bytes: more than max before one.
			return dst[:0], b.tooLong(-1)
		}
	}
}

// tooLong is the error for the line after line no being longer than
// b.max (no < 0: the caller sets the line).
func (b *blockReader) tooLong(no int) *LineError {
	return &LineError{Line: no + 1, Msg: fmt.Sprintf("line longer than %s, the most a line of this file may have; not a file of the run archive format (a device, or binary data?)", sizeText(b.max))}
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

const batchBytes = 256 << 10

// batchLines is the capacity a batch's list of lines starts with.
const batchLines = 2048

// decoded is a data file after the decoding phase: its records in file
// order, the line each is on, and the error that ended its decoding (nil
// when it was read to the end). rows holds the records of the lines before
// that error, so that the rules can still be applied to them and the error
// reported is the first in the file.
type decoded[T any] struct {
	name string
	rows []T
	// The line numbers of rows, in parts as they were decoded (a
	// JSON-lines file's batches; power.csv is one part): lines[p] are
	// those of the records from starts[p] on. Read them with line.
	starts []int
	lines  [][]int
	err    error
	found  bool // the file exists (Load: an optional file may not)
}

// line is the number of the line record i is on.
func (d *decoded[T]) line(i int) int {
	p := sort.Search(len(d.starts), func(p int) bool { return d.starts[p] > i }) - 1
	return d.lines[p][i-d.starts[p]]
}

// readJSONL decodes a JSON-lines file into records, one per non-blank
// line. Batches of lines are decoded in parallel while the file is read;
// decoding stops at the first bad line in the file (d.err), keeping the
// records before it. Nothing is checked here but the syntax and the types
// of the fields: the rules are the validation phase's (validate.go).
//
// Each batch is decoded straight into its place in the one list of
// records (its lines are counted before it is handed out), so the
// records are held once (issue 46: 300 MB at a million requests; joined
// from lists per batch they were held twice at the end of the read). The
// list is sized from the file's size and the lines of the batches read so
// far, and grown, when it falls short, while no batch is in flight.
func readJSONL[T any](r io.Reader, name string, decode func(*jsonLine, []byte, *T) *LineError) *decoded[T] {
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *jsonlBatch, workers)
	free := make(chan *jsonlBatch, 2*workers) // batches to reuse
	var (
		mu       sync.Mutex
		rows     []T          // all batches' records; grown only while none is in flight
		first    []int        // by batch: its first record's index in rows
		ndone    []int        // by batch: the records decoded (all but after an error)
		nos      [][]int      // line numbers of the records, by batch
		errs     []*LineError // by batch
		failed   atomic.Bool
		wg       sync.WaitGroup
		inflight sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			var d jsonLine
			for b := range jobs {
				mu.Lock()
				dst := rows[first[b.seq] : first[b.seq]+len(b.lines)]
				mu.Unlock()
				k, lineNos, lerr := decodeBatch(&d, b, name, decode, dst)
				if lerr != nil {
					failed.Store(true)
				}
				mu.Lock()
				ndone[b.seq], nos[b.seq], errs[b.seq] = k, lineNos, lerr
				mu.Unlock()
				select {
				case free <- b:
				default:
				}
				inflight.Done()
			}
			d.flush()
		})
	}

	size := sizeOf(r)
	br := newBlockReader(r)
	no := 0        // lines so far
	var read int64 // bytes so far
	var readErr error
	for !failed.Load() {
		var cur *jsonlBatch
		select {
		case cur = <-free:
		default:
			cur = &jsonlBatch{data: make([]byte, 0, batchBytes), lines: make([]batchLine, 0, batchLines)}
		}
		data, err := br.next(cur.data[:0])
		cur.data, cur.lines = data, cur.lines[:0]
		read += int64(len(data))
		if lerr := cur.splitLines(&no, br); lerr != nil {
			readErr = lerr
		}
		if len(cur.lines) > 0 {
			need := len(rows) + len(cur.lines)
			if need > cap(rows) {
				inflight.Wait() // no batch writes into rows while it moves
				mu.Lock()
				rows = slices.Grow(rows, rowsCap(need, read, size)-len(rows))
				mu.Unlock()
			}
			mu.Lock()
			cur.seq = len(first)
			first = append(first, len(rows))
			rows = rows[:need]
			ndone = append(ndone, 0)
			nos = append(nos, nil)
			errs = append(errs, nil)
			mu.Unlock()
			inflight.Add(1)
			jobs <- cur
		}
		if readErr != nil {
			break
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			if lerr, ok := err.(*LineError); ok {
				lerr.Line = no + 1
			}
			break
		}
	}
	close(jobs)
	wg.Wait()

	return assembleDecoded(name, rows, first, ndone, nos, errs, readErr, no)
}

// assembleDecoded is readJSONL's last phase: the records of the batches
// up to the first bad line in the file (errs, in file order; else the
// read error readErr, at line no+1), their line numbers and each batch's
// first record's index.
func assembleDecoded[T any](name string, rows []T, first, ndone []int, nos [][]int, errs []*LineError, readErr error, no int) *decoded[T] {
	d := &decoded[T]{name: name}
	for b, err := range errs { // in file order
		if err != nil {
			nos = nos[:b+1] // the records before it
			rows = rows[:first[b]+ndone[b]]
			d.err = err
			break
		}
	}
	if d.err == nil && readErr != nil {
		var lerr *LineError
		if errors.As(readErr, &lerr) {
			lerr.File = name
			d.err = lerr
		} else {
			d.err = &LineError{File: name, Line: no + 1, Msg: "read error: " + readErr.Error(), Err: readErr}
		}
	}
	if rows == nil {
		rows = []T{}
	}
	d.rows, d.lines = rows, nos
	d.starts = make([]int, len(nos))
	for b := 1; b < len(nos); b++ {
		d.starts[b] = d.starts[b-1] + len(nos[b-1])
	}
	return d
}

// sizeOf is the size of what r reads when it knows it (a regular file, a
// reader of bytes), else -1.
func sizeOf(r io.Reader) int64 {
	switch v := r.(type) {
	case interface{ Len() int }:
		return int64(v.Len())
	case interface{ Stat() (fs.FileInfo, error) }:
		if st, err := v.Stat(); err == nil && st.Mode().IsRegular() {
			return st.Size()
		}
	}
	return -1
}

// rowsCap is the room for the records when need do not fit: the lines of
// the whole file at the rate of those so far (need in read bytes), 2 %
// more, when its size is known; at least an eighth more than need (twice
// as many when the size is not known).
func rowsCap(need int, read, size int64) int {
	if size <= 0 || read <= 0 {
		return max(2*need, 64)
	}
	est := int(float64(size)/float64(read)*float64(need)*1.02) + 16
	return max(est, need+need/8)
}

// splitLines lists the non-blank lines of b.data in b.lines (no: the lines
// before them, counted on), or returns the error for one longer than the
// most br allows.
func (b *jsonlBatch) splitLines(no *int, br *blockReader) *LineError {
	data := b.data
	for off := 0; off < len(data); {
		end, complete := len(data), false
		if nl := bytes.IndexByte(data[off:], '\n'); nl >= 0 {
			end, complete = off+nl, true
		}
		line := data[off:end]
		if n := len(line); complete && n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		*no++
		if len(line) > br.max {
			return br.tooLong(*no - 1)
		}
		if !isBlank(line) {
			b.lines = append(b.lines, batchLine{no: *no, start: off, end: off + len(line), complete: complete})
		}
		off = end + 1
	}
	return nil
}

// decodeBatch decodes the lines of b into items (one a line), stopping
// at the first bad one (its error): n and lineNos (the lines' numbers)
// are those of the lines before it.
func decodeBatch[T any](d *jsonLine, b *jsonlBatch, name string, decode func(*jsonLine, []byte, *T) *LineError, items []T) (n int, lineNos []int, lerr *LineError) {
	lineNos = make([]int, len(b.lines))
	for i, ln := range b.lines {
		lineNos[i] = ln.no
	}
	for i, ln := range b.lines {
		if err := decode(d, b.data[ln.start:ln.end], &items[i]); err != nil {
			if !ln.complete {
				err.Msg = "last line is incomplete (no newline at the end; the file was probably cut off mid-write by a crash): " + err.Msg
			}
			err.File, err.Line = name, ln.no
			return i, lineNos[:i], err
		}
	}
	return len(b.lines), lineNos, nil
}

// uniqueKey says what must be unique among the elements of a data file:
// key identifies an element (ok false: not checked), msg describes a
// duplicate.
type uniqueKey[T any] struct {
	key func(*T) (k string, ok bool)
	msg func(*T) string
}

// unique reports the first record, in file order, whose key an earlier
// one has.
func (d *decoded[T]) unique(u *uniqueKey[T]) error {
	seen := newDupIndex[string](len(d.rows))
	for i := range d.rows {
		k, ok := u.key(&d.rows[i])
		if !ok {
			continue
		}
		if first, dup := seen.add(k, i); dup {
			return &LineError{File: d.name, Line: d.line(i), Msg: fmt.Sprintf("%s (first on line %d); a line written twice, or two files joined?", u.msg(&d.rows[i]), d.line(first))}
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
