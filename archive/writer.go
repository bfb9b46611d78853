package archive

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/joulebench/joulebench/archive/record"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
)

// ErrClosed is returned by the Append methods of a closed Writer.
var ErrClosed = errors.New("archive: writer is closed")

// existsError reports a file or directory that must not be overwritten. It
// matches fs.ErrExist with errors.Is.
type existsError struct{ msg string }

func (e *existsError) Error() string { return e.msg }
func (e *existsError) Unwrap() error { return fs.ErrExist }

// Writer writes one run directory as the run goes. It is safe for concurrent
// use: the sampler appends power samples while request goroutines append
// request records. Each data file has its own lock, so a slow fsync of one
// file does not hold up appends to another.
//
// Data files are buffered; call Flush periodically so that a crash loses at
// most the last interval. run.json and results.json are written atomically
// (temp file, fsync, rename), so they are always either the old or the new
// version, never a torn one.
type Writer struct {
	dir string

	metaMu sync.Mutex
	meta   record.Meta

	power    *dataFile
	requests *dataFile
	metrics  *dataFile

	// lineBufs holds *[]byte buffers for request lines, encoded outside
	// the file's lock.
	lineBufs sync.Pool
	// formal counts the formal requests written (FormalRequests).
	formal atomic.Int64

	closeOnce sync.Once
	closeErr  error

	// redact hides secrets in run.json, results.json and request errors
	// (nil: written as given).
	redact func(string) string
	// reserve is the path of the status reserve ("" when there is none
	// or it was given up); guarded by metaMu.
	reserve string
}

// Option configures a Writer.
type Option func(*Writer)

// WithRedact has the writer pass run.json and results.json, as encoded,
// and every request's error text through fn before they are written, so
// that nothing a step or a server put there shows a secret.
func WithRedact(fn func(string) string) Option { return func(w *Writer) { w.redact = fn } }

// StatusReserveFile holds back, in a run directory, room for the run's
// last run.json: on a full disk the run's status (failed, with the
// reason) must still reach the disk. It is given up (removed) when a
// run.json with a final status cannot be written for want of space, and
// removed when the writer is closed.
const StatusReserveFile = ".status-reserve"

// statusReserveBytes is the size of the reserve: several times a large
// run.json (the temp file of an atomic write sits beside the old one).
const statusReserveBytes = 1 << 20

// dataFile is one append-only data file of a run.
type dataFile struct {
	name   string // base name, used in errors
	mu     sync.Mutex
	f      *os.File
	bw     *bufio.Writer
	buf    []byte // scratch for formatting rows; guarded by mu
	closed bool
}

// Create makes a new run directory dir (its parents are created as needed)
// and starts a run archive in it: run.json is written from meta (format
// version set to FormatVersion, status "running" when empty), power.csv gets
// its header, and requests.jsonl and engine_metrics.jsonl are created empty.
//
// dir must not exist: a run directory is never overwritten, and a re-test is
// a new directory. The error for an existing directory matches fs.ErrExist.
func Create(dir string, meta record.Meta, opts ...Option) (*Writer, error) {
	if dir == "" {
		return nil, errors.New("archive: empty run directory name")
	}
	if parent := filepath.Dir(dir); parent != "" {
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return nil, fmt.Errorf("archive: create parent of run directory: %w", err)
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, &existsError{fmt.Sprintf("archive: run directory %s already exists; a re-test is a new directory", dir)}
		}
		return nil, fmt.Errorf("archive: create run directory: %w", err)
	}
	_ = syncDir(filepath.Dir(dir)) // best effort: make the new directory entry durable

	w := &Writer{dir: dir, meta: cloneMeta(meta)}
	for _, o := range opts {
		o(w)
	}
	w.meta.FormatVersion = record.FormatVersion
	if w.meta.Status == "" {
		w.meta.Status = record.StatusRunning
	}
	if err := w.create(); err != nil {
		w.abandon()
		return nil, err
	}
	return w, nil
}

// create writes run.json and opens the data files of a new run directory.
func (w *Writer) create() error {
	if err := w.writeMetaLocked(); err != nil {
		return err
	}
	w.reserve = makeReserve(w.dir)
	var err error
	if w.power, err = openDataFile(w.dir, PowerFile); err != nil {
		return err
	}
	if w.requests, err = openDataFile(w.dir, RequestsFile); err != nil {
		return err
	}
	if w.metrics, err = openDataFile(w.dir, EngineMetricsFile); err != nil {
		return err
	}
	// The header goes to disk at once, so that even a run that dies before
	// its first flush leaves a well-formed power.csv.
	w.power.buf = append(w.power.buf[:0], powerHeader...)
	w.power.buf = append(w.power.buf, '\n')
	if err := w.power.write(w.power.buf); err != nil {
		return err
	}
	return w.power.flush(true)
}

// abandon undoes a failed Create: it closes and removes what Create made,
// and then the directory if it is empty. Nothing else is removed.
func (w *Writer) abandon() {
	for _, df := range []*dataFile{w.power, w.requests, w.metrics} {
		if df != nil {
			df.f.Close()
			os.Remove(df.f.Name())
		}
	}
	os.Remove(filepath.Join(w.dir, RunFile))
	if w.reserve != "" {
		os.Remove(w.reserve)
	}
	os.Remove(w.dir)
}

// makeReserve writes the status reserve into dir and returns its path, or
// "" when it cannot (a disk already nearly full: the preflight's disk
// check says so). Its bytes are not zeros, which a compressing filesystem
// would store in no space.
func makeReserve(dir string) string {
	path := filepath.Join(dir, StatusReserveFile)
	b := make([]byte, statusReserveBytes)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return ""
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return ""
	}
	return path
}

// releaseReserve gives the status reserve's room back to the disk; it
// reports whether there was one. The caller holds metaMu.
func (w *Writer) releaseReserve() bool {
	if w.reserve == "" {
		return false
	}
	err := os.Remove(w.reserve)
	w.reserve = ""
	return err == nil
}

func openDataFile(dir, name string) (*dataFile, error) {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("archive: %s: %w", name, err)
	}
	return &dataFile{name: name, f: f, bw: bufio.NewWriterSize(f, 64<<10)}, nil
}

// write appends b to the file's buffer. The caller holds df.mu.
func (df *dataFile) write(b []byte) error {
	if df.closed {
		return fmt.Errorf("%w (%s)", ErrClosed, df.name)
	}
	if _, err := df.bw.Write(b); err != nil {
		return fmt.Errorf("archive: write %s: %w", df.name, err)
	}
	return nil
}

// flush writes the buffer to the file and, when sync is set, fsyncs it. The
// caller holds df.mu.
func (df *dataFile) flush(sync bool) error {
	if df.closed {
		return nil
	}
	if err := df.bw.Flush(); err != nil {
		return fmt.Errorf("archive: write %s: %w", df.name, err)
	}
	if sync {
		if err := df.f.Sync(); err != nil {
			return fmt.Errorf("archive: sync %s: %w", df.name, err)
		}
	}
	return nil
}

// close flushes, fsyncs and closes the file. The caller holds df.mu.
func (df *dataFile) close() error {
	if df.closed {
		return nil
	}
	err := df.flush(true)
	if cerr := df.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("archive: close %s: %w", df.name, cerr)
	}
	df.closed = true
	return err
}

// Dir returns the run directory.
func (w *Writer) Dir() string { return w.dir }

// Path returns the path of a file in the run directory, e.g. Path(EngineLogFile).
func (w *Writer) Path(name string) string { return filepath.Join(w.dir, name) }

// AppendPower appends rows to power.csv. Every number is written so that it
// reads back exactly. The energy_j cell is empty when HasEnergy is false and
// the mem_used_bytes cell is empty when MemUsedBytes < 0.
//
// The samples are checked first and nothing is written when one is bad: an
// empty device, a device with a line break, or a non-finite number.
func (w *Writer) AppendPower(samples ...record.PowerSample) error {
	for i := range samples {
		if err := checkPowerSample(&samples[i]); err != nil {
			return fmt.Errorf("archive: %s: %w", PowerFile, err)
		}
	}
	df := w.power
	df.mu.Lock()
	defer df.mu.Unlock()
	if df.closed {
		return fmt.Errorf("%w (%s)", ErrClosed, df.name)
	}
	buf := df.buf[:0]
	for i := range samples {
		buf = appendPowerRow(buf, &samples[i])
	}
	df.buf = buf
	return df.write(buf)
}

// AppendRequest appends one request record to requests.jsonl. The line is
// encoded before the file's lock is taken, so requests that end together
// encode in parallel.
func (w *Writer) AppendRequest(r record.Request) error {
	bp, _ := w.lineBufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer w.lineBufs.Put(bp)
	if r.Error != "" && w.redact != nil {
		r.Error = w.redact(r.Error)
	}
	b, err := appendRequestLine((*bp)[:0], &r)
	if err != nil {
		return fmt.Errorf("archive: %s: request %q: %w", RequestsFile, r.ID, err)
	}
	*bp = b
	df := w.requests
	df.mu.Lock()
	defer df.mu.Unlock()
	if err := df.write(b); err != nil {
		return err
	}
	if r.Phase == "formal" {
		w.formal.Add(1)
	}
	return nil
}

// FormalRequests is the number of formal requests written to
// requests.jsonl so far: what run.json's request_set.count must be at the
// end of a complete run whose load stopped early by design (a duration
// limit), since the reader holds a complete run to that count.
func (w *Writer) FormalRequests() int {
	return int(w.formal.Load())
}

// AppendEngineMetrics appends samples to engine_metrics.jsonl, one line each.
// JSON has no NaN or infinity, so a sample with such a value is an error and
// nothing of the call is written; a scraper drops those samples first.
func (w *Writer) AppendEngineMetrics(ms ...record.EngineMetric) error {
	var out []byte
	for i := range ms {
		m := &ms[i]
		if m.Name == "" {
			return fmt.Errorf("archive: %s: engine metric with no name", EngineMetricsFile)
		}
		if !finite(m.T) || !finite(m.Value) {
			return fmt.Errorf("archive: %s: engine metric %s at t=%v: value %v is not a finite number", EngineMetricsFile, m.Name, m.T, m.Value)
		}
		b, err := marshalLine(m)
		if err != nil {
			return fmt.Errorf("archive: %s: engine metric %s: %w", EngineMetricsFile, m.Name, err)
		}
		out = append(out, b...)
	}
	df := w.metrics
	df.mu.Lock()
	defer df.mu.Unlock()
	return df.write(out)
}

// marshalLine encodes v as one line of JSON ending in a newline, without
// HTML escaping (so "<" stays "<" in error messages).
func marshalLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// UpdateMeta calls fn on the run's metadata under the writer's lock and then
// rewrites run.json atomically. The format version cannot be changed. When
// the write fails the change stays in memory and goes to disk with the next
// successful UpdateMeta; the run.json on disk stays the previous version.
//
// UpdateMeta also works after Close, so the final status can be set last.
func (w *Writer) UpdateMeta(fn func(*record.Meta)) error {
	w.metaMu.Lock()
	defer w.metaMu.Unlock()
	fn(&w.meta)
	w.meta.FormatVersion = record.FormatVersion
	return w.writeMetaLocked()
}

// Meta returns a copy of the run's metadata. Its slices and maps are copies
// too (values nested inside Parameters and Engine.Extra are shared).
func (w *Writer) Meta() record.Meta {
	w.metaMu.Lock()
	defer w.metaMu.Unlock()
	return cloneMeta(w.meta)
}

// writeMetaLocked writes run.json atomically. The caller holds metaMu (or is
// Create, before the writer is shared).
func (w *Writer) writeMetaLocked() error {
	b, err := marshalMeta(&w.meta)
	if err != nil {
		return fmt.Errorf("archive: %s: %w", RunFile, err)
	}
	b = w.redactBytes(b)
	err = writeFileAtomic(w.dir, RunFile, b, false)
	if err != nil && errors.Is(err, syscall.ENOSPC) && w.meta.Status != record.StatusRunning && w.releaseReserve() {
		// The disk is full and this is the run's final status: the
		// reserve makes room for it.
		err = writeFileAtomic(w.dir, RunFile, b, false)
	}
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

// marshalMeta encodes run.json, indented for people, with empty lists
// rather than null for stages and events.
func marshalMeta(m *record.Meta) ([]byte, error) {
	c := *m
	if c.Stages == nil {
		c.Stages = []record.Stage{}
	}
	if c.Events == nil {
		c.Events = []record.Event{}
	}
	if c.Hardware.Devices == nil {
		c.Hardware.Devices = []record.Device{}
	}
	return marshalIndent(&c)
}

func marshalIndent(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteResults writes results.json atomically. It is an error, matching
// fs.ErrExist, if the run already has a results.json: results are never
// overwritten.
func (w *Writer) WriteResults(res record.Results) error {
	w.metaMu.Lock()
	defer w.metaMu.Unlock()
	return writeResultsFile(w.dir, res, w.redactBytes)
}

// redactBytes passes an encoded document through the writer's redaction.
func (w *Writer) redactBytes(b []byte) []byte {
	if w.redact == nil {
		return b
	}
	out := []byte(w.redact(string(b)))
	if json.Valid(out) {
		return out
	}
	// A secret that is also JSON syntax (a password "true") was replaced
	// outside a string: redact the strings of the decoded document instead.
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return b
	}
	if enc, err := marshalIndent(redactStrings(v, w.redact)); err == nil {
		return enc
	}
	return b
}

// redactStrings applies fn to every string (member names included) of a
// decoded JSON document.
func redactStrings(v any, fn func(string) string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[fn(k)] = redactStrings(val, fn)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = redactStrings(val, fn)
		}
		return out
	case string:
		return fn(x)
	}
	return v
}

// WriteResultsFile writes results.json into the run directory dir, as
// Writer.WriteResults does, for a run that is not being written (e.g. an
// archived run evaluated for the first time). The format version is set to
// FormatVersion. An existing results.json is never overwritten.
func WriteResultsFile(dir string, res record.Results) error {
	return writeResultsFile(dir, res, func(b []byte) []byte { return b })
}

func writeResultsFile(dir string, res record.Results, redact func([]byte) []byte) error {
	res = res.Stored()
	res.FormatVersion = record.FormatVersion
	if res.Order == nil {
		res.Order = []string{}
	}
	if res.Values == nil {
		res.Values = map[string]record.Result{}
	}
	b, err := marshalIndent(&res)
	if err != nil {
		return fmt.Errorf("archive: %s: %w", ResultsFile, err)
	}
	b = redact(b)
	if err := writeFileAtomic(dir, ResultsFile, b, true); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

// Flush writes buffered data to the data files and fsyncs them. The executor
// calls it periodically, so that a crash loses at most the last interval.
// After Close it does nothing.
func (w *Writer) Flush() error {
	var errs []error
	for _, df := range []*dataFile{w.power, w.requests, w.metrics} {
		df.mu.Lock()
		errs = append(errs, df.flush(true))
		df.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Close flushes, fsyncs and closes the data files. It is idempotent: later
// calls return the first call's result. After Close the Append methods
// return ErrClosed; UpdateMeta and WriteResults still work.
func (w *Writer) Close() error {
	w.closeOnce.Do(func() {
		var errs []error
		for _, df := range []*dataFile{w.power, w.requests, w.metrics} {
			df.mu.Lock()
			errs = append(errs, df.close())
			df.mu.Unlock()
		}
		w.closeErr = errors.Join(errs...)
		w.metaMu.Lock()
		if w.reserve != "" {
			os.Remove(w.reserve)
			w.reserve = ""
		}
		w.metaMu.Unlock()
	})
	return w.closeErr
}

// writeFileAtomic writes dir/name through a temp file in dir: write, fsync,
// then rename over the final name (or, with noReplace, link it there, failing
// if the name exists), then fsync the directory. Errors name the file.
func writeFileAtomic(dir, name string, data []byte, noReplace bool) (err error) {
	final := filepath.Join(dir, name)
	if noReplace {
		if _, err := os.Lstat(final); err == nil {
			return &existsError{fmt.Sprintf("%s already exists in %s; it is never overwritten", name, dir)}
		}
	}
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Chmod(0o644); err != nil && runtime.GOOS != "windows" {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if noReplace {
		// A hard link fails if the name exists, closing the gap between the
		// check above and here. Where links are unsupported, fall back to
		// the check above and a rename.
		lerr := os.Link(tmp, final)
		switch {
		case lerr == nil:
			os.Remove(tmp)
			return syncDirErr(dir, name)
		case errors.Is(lerr, fs.ErrExist):
			os.Remove(tmp)
			return &existsError{fmt.Sprintf("%s already exists in %s; it is never overwritten", name, dir)}
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return syncDirErr(dir, name)
}

func syncDirErr(dir, name string) error {
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("sync directory after writing %s: %w", name, err)
	}
	return nil
}

// syncDir fsyncs a directory so that a rename or a new entry in it survives
// a crash. Windows cannot sync directories; there it does nothing.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// cloneMeta copies m with its own slices and maps.
func cloneMeta(m record.Meta) record.Meta {
	c := m
	c.Parameters = maps.Clone(m.Parameters)
	c.Engine.Command = slices.Clone(m.Engine.Command)
	c.Engine.Env = maps.Clone(m.Engine.Env)
	c.Engine.Extra = maps.Clone(m.Engine.Extra)
	c.Hardware.Devices = slices.Clone(m.Hardware.Devices)
	c.Software = maps.Clone(m.Software)
	c.Stages = slices.Clone(m.Stages)
	c.Events = slices.Clone(m.Events)
	c.Labels = maps.Clone(m.Labels)
	if m.Import != nil {
		imp := *m.Import
		imp.Files, imp.Notes = slices.Clone(imp.Files), slices.Clone(imp.Notes)
		c.Import = &imp
	}
	if m.Measure != nil {
		ms := *m.Measure
		ms.Command, ms.Notes = slices.Clone(ms.Command), slices.Clone(ms.Notes)
		if ms.ExitStatus != nil {
			st := *ms.ExitStatus
			ms.ExitStatus = &st
		}
		if ms.Results != nil {
			r := *ms.Results
			ms.Results = &r
		}
		c.Measure = &ms
	}
	return c
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
