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
func Load(dir string) (*Run, error) {
	return load(dir, true)
}

// LoadData is Load without results.json (Results is nil): for a reader
// that evaluates the raw data itself (analyze), whatever results.json
// holds is neither read nor trusted.
func LoadData(dir string) (*Run, error) {
	return load(dir, false)
}

func load(dir string, withResults bool) (*Run, error) {
	meta, err := ReadMeta(filepath.Join(dir, RunFile))
	if err != nil {
		return nil, err
	}
	run := &Run{Dir: dir, Meta: meta}
	f := runFacts(&meta)
	var errs [4]error
	var wg sync.WaitGroup
	var havePower bool
	wg.Go(func() {
		run.Power, havePower, errs[0] = readOptional(dir, PowerFile, func(r io.Reader, name string) ([]PowerSample, error) {
			return readPowerCSV(r, name, f)
		})
	})
	wg.Go(func() {
		run.Requests, _, errs[1] = readOptional(dir, RequestsFile, func(r io.Reader, name string) ([]Request, error) {
			return readRequests(r, name, f)
		})
	})
	wg.Go(func() {
		run.EngineMetrics, _, errs[2] = readOptional(dir, EngineMetricsFile, func(r io.Reader, name string) ([]EngineMetric, error) {
			return readEngineMetrics(r, name, f.w)
		})
	})
	if withResults {
		wg.Go(func() {
			path := filepath.Join(dir, ResultsFile)
			if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
				return
			}
			run.Results, errs[3] = ReadResults(path)
		})
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	if err := checkComplete(run, havePower); err != nil {
		return nil, err
	}
	return run, nil
}

// checkComplete checks that a complete run holds what it measured: every
// formal request run.json counts, and power samples of every device it
// lists. Missing data is an error, not an absence: a file cut at a line
// boundary, or deleted, would otherwise read as a smaller run.
func checkComplete(run *Run, havePower bool) error {
	m := &run.Meta
	if m.Status != StatusComplete {
		return nil
	}
	runFile := filepath.Join(run.Dir, RunFile)
	formal := 0
	for i := range run.Requests {
		if run.Requests[i].Phase == "formal" {
			formal++
		}
	}
	if formal < m.RequestSet.Count {
		return fmt.Errorf("%s: request_set.count is %d but %s has %d formal requests; a complete run records every formal request it sent (failed ones too), so %d missing: the file was cut or lines were deleted",
			runFile, m.RequestSet.Count, filepath.Join(run.Dir, RequestsFile), formal, m.RequestSet.Count-formal)
	}
	if len(m.Hardware.Devices) == 0 {
		return nil
	}
	powerFile := filepath.Join(run.Dir, PowerFile)
	if !havePower {
		return fmt.Errorf("%s: missing, but %s lists %d measured devices (%s) in a complete run; missing power data is an error, not an absence",
			powerFile, runFile, len(m.Hardware.Devices), devicesList(m.Hardware.Devices))
	}
	has := make(map[string]bool, len(m.Hardware.Devices))
	for i := range run.Power {
		has[run.Power[i].Device] = true
	}
	for _, d := range m.Hardware.Devices {
		if !has[d.ID] {
			return fmt.Errorf("%s: no sample of device %q, which %s's hardware.devices lists (a complete run has power samples of every measured device); missing power data is an error, not an absence",
				powerFile, d.ID, runFile)
		}
	}
	return nil
}

// readOptional reads dir/name with read, giving an empty slice when the file
// does not exist. The file must be a regular file in dir (see openFile).
// found says whether the file exists.
func readOptional[T any](dir, name string, read func(io.Reader, string) ([]T, error)) (rows []T, found bool, err error) {
	path := filepath.Join(dir, name)
	f, err := openFile(dir, name)
	if errors.Is(err, fs.ErrNotExist) {
		return []T{}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	rows, err = read(f, path)
	return rows, true, err
}

// ReadMeta reads run.json. Its format_version must be FormatVersion; the
// version is checked before anything else is decoded, so a newer file is
// reported as such rather than as a field of the wrong type. Unknown fields
// are ignored. The file must be a regular file (a symbolic link is followed
// only inside its directory), and two stages must not share a name. Its
// numbers keep to the bounds of docs/archive-v1.md (checkMetaBounds), and
// parameters has at most MaxParameters entries.
func ReadMeta(path string) (Meta, error) {
	var m Meta
	data, err := readDocument(path)
	if err != nil {
		return m, err
	}
	if err := checkVersion(path, data); err != nil {
		return m, err
	}
	if err := checkParameterCount(path, data); err != nil {
		return m, err
	}
	if err := checkDuplicateKeys(path, data); err != nil {
		return m, err
	}
	if err := decodeDocument(path, data, &m); err != nil {
		return m, err
	}
	if err := checkStages(path, data, &m); err != nil {
		return m, err
	}
	if err := markOpenStages(path, data, &m); err != nil {
		return m, err
	}
	return m, checkMetaBounds(path, data, &m)
}

// ReadResults reads results.json; its format_version must be FormatVersion.
func ReadResults(path string) (*Results, error) {
	data, err := readDocument(path)
	if err != nil {
		return nil, err
	}
	if err := checkVersion(path, data); err != nil {
		return nil, err
	}
	var res Results
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
		return fmt.Errorf("%s: no format_version; this joulebench reads archive format_version %d", path, FormatVersion)
	}
	raw := string(*v.FormatVersion)
	if raw != fmt.Sprint(FormatVersion) {
		return fmt.Errorf("%s: format_version %s is not supported; this joulebench reads archive format_version %d only (a newer joulebench may read it)", path, raw, FormatVersion)
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
// checkRequestBounds); times must be Unix seconds (≥ 0). Load also holds
// the times to the run's span (run.json's started_at and ended_at).
func ReadRequests(r io.Reader, name string) ([]Request, error) {
	return readRequests(r, name, loneFacts())
}

// readRequests is ReadRequests with the requests held to the facts f of
// their run.json: times in the run, each request inside the stage of its
// phase.
func readRequests(r io.Reader, name string, f *facts) ([]Request, error) {
	if name == "" {
		name = RequestsFile
	}
	check := func(q *Request) string {
		if msg := checkRequest(q, f.w); msg != "" {
			return msg
		}
		return f.checkStage(q)
	}
	return readJSONL(r, name, (*jsonLine).decodeRequest, check, &uniqueKey[Request]{
		key: func(q *Request) (string, bool) { return q.ID, q.ID != "" }, // requests without an id are not checked
		msg: func(q *Request) string { return fmt.Sprintf("duplicate request id %q", q.ID) },
	})
}

func checkRequest(q *Request, w window) string {
	if q.OK {
		switch {
		case q.SentAt == 0:
			return fmt.Sprintf("request %q has ok=true but no sent_at", q.ID)
		case q.FirstTokenAt == 0:
			return fmt.Sprintf("request %q has ok=true but no first_token_at (a response with no output is recorded with ok=false)", q.ID)
		case q.DoneAt == 0:
			return fmt.Sprintf("request %q has ok=true but no done_at", q.ID)
		}
	}
	if q.TokenCounts != nil && len(q.TokenCounts) != len(q.TokenTimes) {
		return fmt.Sprintf("request %q: token_counts has %d entries but token_times has %d; they must match one to one", q.ID, len(q.TokenCounts), len(q.TokenTimes))
	}
	return checkRequestBounds(q, w)
}

// ReadEngineMetrics reads engine_metrics.jsonl: one {t, name, labels, value}
// object per line, with the same rules as ReadRequests. Every sample needs a
// name; two samples of the same series (name and labels) at the same t are
// a duplicated line, an error naming both lines.
func ReadEngineMetrics(r io.Reader, name string) ([]EngineMetric, error) {
	return readEngineMetrics(r, name, anyTime)
}

// readEngineMetrics is ReadEngineMetrics with the times held to w.
func readEngineMetrics(r io.Reader, name string, w window) ([]EngineMetric, error) {
	if name == "" {
		name = EngineMetricsFile
	}
	return readJSONL(r, name, (*jsonLine).decodeEngineMetric, func(m *EngineMetric) string {
		if m.Name == "" {
			return "engine metric has no name"
		}
		return w.check("t", m.T)
	}, &uniqueKey[EngineMetric]{key: engineMetricKey, msg: func(m *EngineMetric) string {
		return fmt.Sprintf("duplicate sample of %s at t=%v (same name and labels)", m.Name, m.T)
	}})
}

// engineMetricKey identifies a sample by time, name and labels (sorted).
func engineMetricKey(m *EngineMetric) (string, bool) {
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
