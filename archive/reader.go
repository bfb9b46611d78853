// Package archive writes and reads run archives, format v1
// (docs/archive-v1.md).
//
// The reader works in two phases. Decoding (decodeRun) turns every file
// of a run into its records: run.json into a Meta, with its bytes kept to
// place an error at a line and column; power.csv, requests.jsonl and
// engine_metrics.jsonl, read concurrently, into samples and requests, each
// with the line it came from; results.json into Results. Decoding checks
// only what decoding needs: the syntax, the type of each field, the
// format version, and two guards on run.json's bytes that must come first
// (at most MaxParameters parameters, counted before they are decoded; no
// key twice, which a decoder would resolve silently). Validation
// (decodedRun.validate, validate.go) then holds the decoded run to the
// rules of docs/archive-v1.md ("Bounds"), each a small function named
// after what it enforces, in lists: run.json's, each data file's record by
// record, then those across files (a complete run holds what it
// measured). A data file whose decoding stopped at a bad line is validated
// up to that line, so that the error reported is the first in the file,
// whichever phase found it.
package archive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	gojson "github.com/goccy/go-json"
	"github.com/joulebench/joulebench/archive/record"
)

// LineError is a problem with one line of a data file (power.csv,
// requests.jsonl, engine_metrics.jsonl). Its message reads
// "FILE:LINE: message" or, when the column is known, "FILE:LINE:COL: message".
type LineError struct {
	File   string // the name given to the reader, usually the file's path
	Line   int    // 1-based
	Column int    // 1-based byte column; 0 when unknown
	Msg    string
	Err    error // the underlying error, if any
}

func (e *LineError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

func (e *LineError) Unwrap() error { return e.Err }

// Load reads the run archive in dir. run.json is required and its
// format_version must be 1. power.csv, requests.jsonl and
// engine_metrics.jsonl are optional (absent: no rows); results.json is
// optional (absent: Results is nil). The data files are read concurrently.
//
// Every time in the data files must lie in the run's span (run.json's
// started_at to ended_at, give or take TimeSlackS). A complete run must
// hold what it measured: as many formal requests as run.json's
// request_set.count, and power samples of every device of
// hardware.devices; a shortfall is an error naming both files.
func Load(dir string) (*record.Run, error) {
	return load(dir, loadOptions{results: true})
}

// LoadData is Load without results.json (Results is nil): for a reader
// that evaluates the raw data itself (analyze), whatever results.json
// holds is neither read nor trusted.
func LoadData(dir string) (*record.Run, error) {
	return load(dir, loadOptions{})
}

// LoadDataPacked is LoadData with every request's token times packed as
// they are read, in about 3 bytes a time instead of 8, into a temporary
// file (newTimesStore, removed when the run's CloseTimes is called or
// at once where the system allows): they take no memory between the
// passes that read them back. For a reader that reads them through
// record.Request's TokenTimesLen, AppendTokenTimes or Times (analyze;
// issue 46), and checks the run's TimesErr after its figures. The rules
// are the same and hold the same times. Where no temporary file can be
// made, the times are held as read (LoadData).
func LoadDataPacked(dir string) (*record.Run, error) {
	return load(dir, loadOptions{packTimes: true})
}

// loadOptions say what load reads: results.json, and whether token times
// are packed.
type loadOptions struct {
	results, packTimes bool
}

func load(dir string, o loadOptions) (*record.Run, error) {
	d, err := decodeRun(dir, o)
	if err != nil {
		return nil, err
	}
	if err := d.validate(); err != nil {
		_ = d.times.Close()
		return nil, err
	}
	if err := d.times.Err(); err != nil { // a time the rules read back
		_ = d.times.Close()
		return nil, err
	}
	run := &record.Run{Dir: dir, Meta: *d.meta.m, Power: d.power.rows, Requests: d.requests.rows,
		EngineMetrics: d.metrics.rows, Results: d.results}
	run.SetTimesStore(d.times)
	return run, nil
}

// decodedRun is a run archive after the decoding phase of Load: every
// file decoded, nothing yet held to the rules (validate).
type decodedRun struct {
	dir      string
	meta     metaDoc
	power    *decoded[record.PowerSample]
	requests *decoded[record.Request]
	metrics  *decoded[record.EngineMetric]
	results  *record.Results
	// resultsErr is the error reading results.json; it is reported with
	// the data files' errors.
	resultsErr error
	// times holds the requests' packed token times (nil: not packed).
	times *record.TimesStore
}

// decodeRun decodes the files of the run archive in dir: run.json first
// (its error is returned), then the data files and results.json
// concurrently. A data file's error is kept in its decoded[T], to be
// reported by validate after run.json's rules.
func decodeRun(dir string, o loadOptions) (*decodedRun, error) {
	meta, err := decodeMeta(filepath.Join(dir, RunFile))
	if err != nil {
		return nil, err
	}
	d := &decodedRun{dir: dir, meta: meta}
	var wg sync.WaitGroup
	wg.Go(func() { d.power = decodeOptional(dir, PowerFile, decodePowerCSV) })
	decodeReq := decodeRequests
	if o.packTimes {
		// Without a temporary file the times are held as read.
		if s, err := newTimesStore(""); err == nil {
			d.times = s
			decodeReq = func(r io.Reader, name string) *decoded[record.Request] {
				return decodeRequestsPacked(r, name, s)
			}
		}
	}
	wg.Go(func() { d.requests = decodeOptional(dir, RequestsFile, decodeReq) })
	wg.Go(func() { d.metrics = decodeOptional(dir, EngineMetricsFile, decodeEngineMetrics) })
	if o.results {
		wg.Go(func() {
			path := filepath.Join(dir, ResultsFile)
			if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
				return
			}
			d.results, d.resultsErr = ReadResults(path)
		})
	}
	wg.Wait()
	return d, nil
}

// decodeOptional decodes dir/name with decode; a file that does not exist
// has no records (found false). The file must be a regular file in dir
// (see openFile): an error opening it is the decoded file's error.
func decodeOptional[T any](dir, name string, decode func(io.Reader, string) *decoded[T]) *decoded[T] {
	path := filepath.Join(dir, name)
	f, err := openFile(dir, name)
	if errors.Is(err, fs.ErrNotExist) {
		return &decoded[T]{name: path, rows: []T{}}
	}
	if err != nil {
		return &decoded[T]{name: path, err: err}
	}
	defer f.Close()
	d := decode(f, path)
	d.found = true
	return d
}

// ReadMeta reads run.json. Its format_version must be FormatVersion; the
// version is checked before anything else is decoded, so a newer file is
// reported as such rather than as a field of the wrong type. Unknown fields
// are ignored. The file must be a regular file (a symbolic link is followed
// only inside its directory), and two stages must not share a name. Its
// numbers keep to the bounds of docs/archive-v1.md (metaRules), and
// parameters has at most MaxParameters entries.
func ReadMeta(path string) (record.Meta, error) {
	d, err := decodeMeta(path)
	if err != nil {
		if d.m == nil {
			return record.Meta{}, err
		}
		return *d.m, err
	}
	return *d.m, d.validate()
}

// decodeMeta decodes run.json: its format version, then, guarding the
// decoding, the count of its parameters and keys each once in an object,
// then the record, with the stages that have no end marked Open.
func decodeMeta(path string) (metaDoc, error) {
	d := metaDoc{path: path}
	data, err := readDocument(path)
	if err != nil {
		return d, err
	}
	if err := checkVersion(path, data); err != nil {
		return d, err
	}
	if err := checkParameterCount(path, data); err != nil {
		return d, err
	}
	if err := checkDuplicateKeys(path, data); err != nil {
		return d, err
	}
	var m record.Meta
	d.data, d.m = data, &m
	if err := decodeDocument(path, data, &m); err != nil {
		return d, err
	}
	return d, markOpenStages(path, data, &m)
}

// ReadResults reads results.json; its format_version must be FormatVersion.
func ReadResults(path string) (*record.Results, error) {
	data, err := readDocument(path)
	if err != nil {
		return nil, err
	}
	if err := checkVersion(path, data); err != nil {
		return nil, err
	}
	var res record.Results
	if err := decodeDocument(path, data, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// checkVersion checks the format_version of a JSON document.
func checkVersion(path string, data []byte) error {
	var v struct {
		FormatVersion *gojson.RawMessage `json:"format_version"`
	}
	if err := decodeDocument(path, data, &v); err != nil {
		return err
	}
	if v.FormatVersion == nil {
		return fmt.Errorf("%s: no format_version; this joulebench reads archive format_version %d", path, record.FormatVersion)
	}
	raw := string(*v.FormatVersion)
	if raw != fmt.Sprint(record.FormatVersion) {
		return fmt.Errorf("%s: format_version %s is not supported; this joulebench reads archive format_version %d only (a newer joulebench may read it)", path, raw, record.FormatVersion)
	}
	return nil
}

// decodeDocument decodes a whole JSON document (run.json, results.json) into
// v, with errors that give the line and column. It uses the library the
// JSON-lines files are read with (jsonline.go).
func decodeDocument(path string, data []byte, v any) error {
	dec := gojson.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return documentError(path, data, err)
	}
	end := int(dec.InputOffset())
	if rest := bytes.TrimLeft(data[end:], " \t\r\n"); len(rest) > 0 {
		line, col := lineCol(data, len(data)-len(rest))
		return fmt.Errorf("%s:%d:%d: unexpected data after the JSON object", path, line, col)
	}
	return nil
}

// documentError turns a JSON decoding error into "path:line:col: message".
func documentError(path string, data []byte, err error) error {
	var se *gojson.SyntaxError
	var te *gojson.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: incomplete JSON (the file is empty or cut off)", path)
	case errors.As(err, &se):
		line, col := lineCol(data, syntaxErrorIndex(se.Offset, len(data)))
		return fmt.Errorf("%s:%d:%d: invalid JSON: %w", path, line, col, se)
	case errors.As(err, &te):
		line, col := lineCol(data, int(te.Offset))
		return fmt.Errorf("%s:%d:%d: %s", path, line, col, typeErrorMsg(te))
	}
	return fmt.Errorf("%s: %w", path, err)
}

// lineCol converts a byte offset into a 1-based line and column.
func lineCol(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = off - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// jsonKind names the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean (true or false)"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return t.String()
}

// ReadRequests reads requests.jsonl: one JSON object per line. name is used
// in error messages ("requests.jsonl" when empty).
//
// Unknown fields are ignored (a newer writer may add some); a known field of
// the wrong JSON type is an error. Blank lines are skipped. A request with
// ok=true must have sent_at, first_token_at and done_at, and token_counts,
// when present, must be as long as token_times. A last line cut off mid-write
// (a crash) is an error naming the line: data is never dropped silently.
// Lines are decoded in parallel; the error reported is the first in the file.
// Two requests with the same non-empty id (a line written twice, or two
// files joined) are an error naming both lines. A line longer than
// MaxLineBytes is an error.
//
// Every number must keep to the bounds of docs/archive-v1.md (see
// requestRules); times must be Unix seconds (≥ 0). Load also holds
// the times to the run's span (run.json's started_at and ended_at).
func ReadRequests(r io.Reader, name string) ([]record.Request, error) {
	if name == "" {
		name = RequestsFile
	}
	d := decodeRequests(r, name)
	if err := d.validate(requestRules(loneFacts()), requestIDsUnique()); err != nil {
		return nil, err
	}
	return d.rows, nil
}

// decodeRequests decodes requests.jsonl, a line a request.
func decodeRequests(r io.Reader, name string) *decoded[record.Request] {
	return readJSONL(r, name, (*jsonLine).decodeRequest)
}

// decodeRequestsPacked is decodeRequests with token times packed into
// store; its error writing them is the file's.
func decodeRequestsPacked(r io.Reader, name string, store *record.TimesStore) *decoded[record.Request] {
	d := readJSONL(r, name, func(j *jsonLine, line []byte, q *record.Request) *LineError {
		return j.decodeRequestPacked(store, line, q)
	})
	if err := store.Err(); err != nil && d.err == nil {
		d.err = fmt.Errorf("%s: %w", name, err)
	}
	return d
}

// ReadEngineMetrics reads engine_metrics.jsonl: one {t, name, labels, value}
// object per line, with the same rules as ReadRequests. Every sample needs a
// name; two samples of the same series (name and labels) at the same t are
// a duplicated line, an error naming both lines.
func ReadEngineMetrics(r io.Reader, name string) ([]record.EngineMetric, error) {
	if name == "" {
		name = EngineMetricsFile
	}
	d := decodeEngineMetrics(r, name)
	if err := d.validate(engineMetricRules(anyTime), engineMetricSamplesUnique()); err != nil {
		return nil, err
	}
	return d.rows, nil
}

// decodeEngineMetrics decodes engine_metrics.jsonl, a line a sample.
func decodeEngineMetrics(r io.Reader, name string) *decoded[record.EngineMetric] {
	return readJSONL(r, name, (*jsonLine).decodeEngineMetric)
}

// engineMetricKey identifies a sample by time, name and labels (sorted).
func engineMetricKey(m *record.EngineMetric) (string, bool) {
	var b strings.Builder
	b.WriteString(strconv.FormatFloat(m.T, 'g', -1, 64))
	b.WriteByte(0)
	b.WriteString(m.Name)
	keys := make([]string, 0, len(m.Labels))
	for k := range m.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(m.Labels[k])
	}
	return b.String(), true
}
