package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/joulebench/joulebench/internal/boundedfile"
)

// Trace formats read by LoadTrace.
const (
	// TraceAzure is Azure's LLM inference traces (2023 and 2024 releases):
	// CSV with the header TIMESTAMP,ContextTokens,GeneratedTokens and
	// wall-clock timestamps ("2023-11-16 18:15:46.6805900",
	// "2024-05-10 00:00:00.009930+00:00").
	TraceAzure = "azure"
	// TraceBurstGPT is BurstGPT: CSV with the columns Timestamp (seconds
	// from the trace's start), Request tokens and Response tokens (others,
	// such as Model and Log Type, are ignored).
	TraceBurstGPT = "burstgpt"
	// TraceMooncake is Mooncake: JSONL records with timestamp (ms),
	// input_length, output_length and hash_ids (one id per block of
	// MooncakeBlockTokens prompt tokens; equal ids are a shared prefix).
	TraceMooncake = "mooncake"
)

// MooncakeBlockTokens is the prompt tokens per hash id of a Mooncake trace.
const MooncakeBlockTokens = 512

// TracePrefix introduces a trace in a dataset name: trace:FILE, optionally
// followed by ,scale=X ,start=D ,duration=D (see ParseTraceSpec).
const TracePrefix = "trace:"

// TraceSpec says which trace to replay and how.
type TraceSpec struct {
	Path string
	// Scale multiplies the trace's time: 0.5 replays twice as fast, 2 at
	// half the speed; 0 means 1.
	Scale float64
	// Start and Duration select the window of the trace to replay, from
	// its first timestamp; Duration 0 runs to the end.
	Start, Duration time.Duration
}

// IsTrace reports whether a dataset name is a trace (trace:FILE...).
func IsTrace(name string) bool { return strings.HasPrefix(name, TracePrefix) }

// ParseTraceSpec reads "trace:FILE[,scale=X][,start=D][,duration=D]"; D is
// a Go duration ("90s", "5m") or seconds.
func ParseTraceSpec(name string) (TraceSpec, error) {
	if !IsTrace(name) {
		return TraceSpec{}, fmt.Errorf("trace %q: want %sFILE", name, TracePrefix)
	}
	parts := strings.Split(strings.TrimPrefix(name, TracePrefix), ",")
	// Options are the trailing key=value parts; a file name may hold commas.
	n := len(parts)
	for n > 1 && isTraceOption(parts[n-1]) {
		n--
	}
	spec := TraceSpec{Path: strings.Join(parts[:n], ","), Scale: 1}
	if spec.Path == "" {
		return TraceSpec{}, fmt.Errorf("trace %q: no file", name)
	}
	for _, p := range parts[n:] {
		k, v, _ := strings.Cut(p, "=")
		var err error
		switch k {
		case "scale":
			spec.Scale, err = strconv.ParseFloat(v, 64)
			if err == nil && !(spec.Scale > 0 && spec.Scale <= MaxTraceScale) {
				err = fmt.Errorf("must be a number > 0 and at most %d", MaxTraceScale)
			}
		case "start":
			spec.Start, err = parseSeconds(v)
		case "duration":
			spec.Duration, err = parseSeconds(v)
		}
		if err != nil {
			return TraceSpec{}, fmt.Errorf("trace %q: %s=%s: %w", name, k, v, err)
		}
	}
	return spec, nil
}

func isTraceOption(p string) bool {
	k, _, ok := strings.Cut(p, "=")
	return ok && (k == "scale" || k == "start" || k == "duration")
}

// MaxTraceSeconds bounds a trace's times (timestamps, start, duration)
// and a replay's send times: 10⁹ s, about 31.7 years, beyond any trace and
// inside time.Duration's 292 years.
const MaxTraceSeconds = 1e9

// MaxTraceScale bounds a trace's time scale: a replay a thousand times
// slower than the trace.
const MaxTraceScale = 1000

func parseSeconds(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		s, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil || math.IsNaN(s) || math.IsInf(s, 0) {
			return 0, fmt.Errorf("want a duration (90s, 5m) or seconds")
		}
		// Compared before converting: a float beyond int64 converts to
		// the minimum int64, which would read as negative.
		if s > MaxTraceSeconds {
			return 0, fmt.Errorf("too large: at most %g seconds (about 31.7 years)", float64(MaxTraceSeconds))
		}
		d = time.Duration(s * float64(time.Second))
	}
	if d < 0 {
		return 0, errors.New("must be >= 0")
	}
	if d > MaxTraceSeconds*time.Second {
		return 0, fmt.Errorf("too large: at most %g seconds (about 31.7 years)", float64(MaxTraceSeconds))
	}
	return d, nil
}

// TraceRow is one request of a trace.
type TraceRow struct {
	// Line is the row's 1-based line in the file.
	Line int
	// At is the arrival time from the trace's first timestamp (unscaled).
	At time.Duration
	// Input and Output are the prompt and output lengths in tokens.
	Input, Output int
	// HashIDs are Mooncake's block ids (nil for the other formats).
	HashIDs []int
}

// Trace is a trace file read and windowed.
type Trace struct {
	Source string
	Format string
	// SHA256 is the hex sha256 of the whole file.
	SHA256 string
	// Rows are the requests inside the window, At still from the trace's
	// first timestamp; Offsets gives their scaled send times.
	Rows  []TraceRow
	Spec  TraceSpec
	Total int // rows in the file
}

// Offsets returns each row's send time from the start of the replay:
// (At - Start)·Scale. A send time past MaxTraceSeconds is an error, never
// an overflow (a scale of 10¹² wrapped every send time to the minimum
// int64: every request went at once).
func (t *Trace) Offsets() ([]time.Duration, error) {
	if !(t.Spec.Scale > 0 && t.Spec.Scale <= MaxTraceScale) {
		return nil, fmt.Errorf("trace %s: scale %v: must be a number > 0 and at most %d", t.Source, t.Spec.Scale, MaxTraceScale)
	}
	out := make([]time.Duration, len(t.Rows))
	for i, r := range t.Rows {
		at := r.At - t.Spec.Start
		// In floats: the product is compared before it is converted.
		send := at.Seconds() * t.Spec.Scale
		if at < 0 || send > MaxTraceSeconds {
			return nil, fmt.Errorf("trace %s:%d: %v into the window, scaled by %g, is sent at %gs: want [0, %g] seconds (about 31.7 years); use a smaller scale or a window (start, duration)",
				t.Source, r.Line, at, t.Spec.Scale, send, float64(MaxTraceSeconds))
		}
		out[i] = time.Duration(float64(at) * t.Spec.Scale)
	}
	return out, nil
}

// LoadTrace reads spec.Path (format detected from its first line) and keeps
// the rows inside the window, in arrival order.
func LoadTrace(spec TraceSpec) (*Trace, error) {
	data, err := boundedfile.Read(spec.Path, "trace", MaxDatasetBytes)
	if err != nil {
		return nil, err
	}
	return ParseTrace(data, spec)
}

// ParseTrace is LoadTrace on a file's contents.
func ParseTrace(data []byte, spec TraceSpec) (*Trace, error) {
	if spec.Scale == 0 {
		spec.Scale = 1
	}
	sum := sha256.Sum256(data)
	t := &Trace{Source: spec.Path, SHA256: hex.EncodeToString(sum[:]), Spec: spec}
	var rows []TraceRow
	var err error
	first := bytes.TrimSpace(firstLine(data))
	switch {
	case bytes.HasPrefix(first, []byte("{")):
		t.Format = TraceMooncake
		rows, err = parseMooncake(data, spec.Path)
	default:
		rows, t.Format, err = parseTraceCSV(data, spec.Path)
	}
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("trace %s: no requests", spec.Path)
	}
	t.Total = len(rows)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].At < rows[j].At })
	base := rows[0].At
	for _, r := range rows {
		r.At -= base
		if r.At < spec.Start || (spec.Duration > 0 && r.At >= spec.Start+spec.Duration) {
			continue
		}
		t.Rows = append(t.Rows, r)
	}
	if len(t.Rows) == 0 {
		return nil, fmt.Errorf("trace %s: no request in the window from %v for %v (the trace spans %v)", spec.Path, spec.Start, spec.Duration, rows[len(rows)-1].At-base)
	}
	return t, nil
}

func firstLine(data []byte) []byte {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[:i]
	}
	return data
}

// parseMooncake reads Mooncake's JSONL.
func parseMooncake(data []byte, name string) ([]TraceRow, error) {
	var rows []TraceRow
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec struct {
			Timestamp    *float64 `json:"timestamp"`
			InputLength  *int     `json:"input_length"`
			OutputLength *int     `json:"output_length"`
			HashIDs      []int    `json:"hash_ids"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, i+1, err)
		}
		switch {
		case rec.Timestamp == nil || rec.InputLength == nil || rec.OutputLength == nil:
			return nil, fmt.Errorf("%s:%d: want timestamp, input_length and output_length", name, i+1)
		case *rec.Timestamp < 0 || math.IsNaN(*rec.Timestamp):
			return nil, fmt.Errorf("%s:%d: timestamp %v: want milliseconds >= 0", name, i+1, *rec.Timestamp)
		case *rec.Timestamp > MaxTraceSeconds*1e3:
			return nil, fmt.Errorf("%s:%d: timestamp %v: too large: at most %g milliseconds (about 31.7 years)", name, i+1, *rec.Timestamp, MaxTraceSeconds*1e3)
		}
		row := TraceRow{Line: i + 1, At: time.Duration(*rec.Timestamp * float64(time.Millisecond)),
			Input: *rec.InputLength, Output: *rec.OutputLength, HashIDs: rec.HashIDs}
		if err := checkLengths(row, name); err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func checkLengths(r TraceRow, name string) error {
	if r.Input < 1 || r.Output < 1 || r.Input > MaxTraceTokens || r.Output > MaxTraceTokens {
		return fmt.Errorf("%s:%d: input %d, output %d tokens: want each in [1, %d]", name, r.Line, r.Input, r.Output, MaxTraceTokens)
	}
	return nil
}

// MaxTraceTokens bounds a trace row's input and output lengths.
const MaxTraceTokens = 1 << 22

// traceColumns are the CSV columns each format needs, by lowercase header.
var traceColumns = map[string][3]string{
	TraceAzure:    {"timestamp", "contexttokens", "generatedtokens"},
	TraceBurstGPT: {"timestamp", "request tokens", "response tokens"},
}

// parseTraceCSV reads Azure's or BurstGPT's CSV, told apart by the header.
func parseTraceCSV(data []byte, name string) ([]TraceRow, string, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, "", fmt.Errorf("%s:1: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
	}
	format := ""
	var idx [3]int
	for _, f := range []string{TraceAzure, TraceBurstGPT} {
		ok := true
		for k, c := range traceColumns[f] {
			i, has := col[c]
			ok = ok && has
			idx[k] = i
		}
		if ok {
			format = f
			break
		}
	}
	if format == "" {
		return nil, "", fmt.Errorf("%s:1: header %q: want Azure's TIMESTAMP,ContextTokens,GeneratedTokens, BurstGPT's Timestamp,...,Request tokens,Response tokens, or Mooncake JSONL", name, strings.Join(header, ","))
	}
	var rows []TraceRow
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			return nil, "", fmt.Errorf("%s:%d: %w", name, line, err)
		}
		row, err := csvRow(rec, idx, format, name, line)
		if err != nil {
			return nil, "", err
		}
		rows = append(rows, row)
	}
	return rows, format, nil
}

func csvRow(rec []string, idx [3]int, format, name string, line int) (TraceRow, error) {
	for _, i := range idx {
		if i >= len(rec) {
			return TraceRow{}, fmt.Errorf("%s:%d: %d fields, want at least %d", name, line, len(rec), i+1)
		}
	}
	row := TraceRow{Line: line}
	var err error
	if format == TraceAzure {
		row.At, err = azureTime(rec[idx[0]])
	} else {
		row.At, err = parseSeconds(strings.TrimSpace(rec[idx[0]]))
	}
	if err != nil {
		return TraceRow{}, fmt.Errorf("%s:%d: timestamp %q: %w", name, line, rec[idx[0]], err)
	}
	for k, dst := range []*int{&row.Input, &row.Output} {
		v := strings.TrimSpace(rec[idx[k+1]])
		if *dst, err = strconv.Atoi(v); err != nil {
			return TraceRow{}, fmt.Errorf("%s:%d: %s %q: want a whole number of tokens", name, line, traceColumns[format][k+1], v)
		}
	}
	return row, checkLengths(row, name)
}

// azureTime reads an Azure trace timestamp as the time since the Unix
// epoch (only differences matter).
func azureTime(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return time.Duration(t.UnixNano()), nil
		}
	}
	return 0, errors.New("want a time like 2023-11-16 18:15:46.6805900 or 2024-05-10 00:00:00.009930+00:00")
}

// traceStream separates the generator streams of trace prompts from the
// shared-prefix set's.
const traceStream = 0x7472616365 << 24 // "trace"

// RequestSet turns the windowed rows into a frozen set in arrival order:
// prompt i has the row's input length in words (about a token each, see
// LengthEstimate) and max_tokens its output length, sent with ignore_eos
// so that the engine generates exactly that many. A Mooncake row's prompt
// is made of one text per hash id (MooncakeBlockTokens words, the last
// block cut to the input length): rows sharing leading ids share that
// prefix. opt.Count, Shuffle and Repeat do not apply (the trace decides).
func (t *Trace) RequestSet(opt Options) (*RequestSet, error) {
	return t.requestSet(opt, 1)
}

// requestSet is RequestSet with ratio tokens per word: a row's input
// length and a Mooncake block are that many tokens in words.
func (t *Trace) requestSet(opt Options, ratio float64) (*RequestSet, error) {
	opt.Count, opt.Shuffle, opt.Repeat = 0, false, false
	if err := opt.validate(); err != nil {
		return nil, fmt.Errorf("trace %s: %w", t.Source, err)
	}
	words := 0
	for _, r := range t.Rows {
		words += r.Input
	}
	approx := Prompt{Prompt: strings.Repeat("x", 6*words/len(t.Rows)+1)}
	if err := checkMemory([]Prompt{approx}, len(t.Rows), t.Source, opt.MemoryAvailable); err != nil {
		return nil, err
	}
	blocks := map[int]string{}
	prompts := make([]Prompt, len(t.Rows))
	maxOut := 0
	for i, r := range t.Rows {
		prompts[i] = Prompt{ID: fmt.Sprintf("line-%d", r.Line), Prompt: t.promptText(r, opt.Seed, blocks, ratio), MaxTokens: r.Output}
		maxOut = max(maxOut, r.Output)
	}
	opt.Format = FormatJSONL
	opt.IgnoreEOS = true
	opt.MaxTokens = 0
	opt.MaxTokensCap = max(opt.MaxTokensCap, DefaultMaxTokensCap, maxOut)
	set, err := freeze(prompts, 0, TracePrefix+t.Source, opt)
	if err != nil {
		return nil, err
	}
	set.Options.Seed = opt.Seed
	set.LengthMethod = LengthEstimate
	set.Sampling = t.Describe()
	if set.Arrivals, err = t.Offsets(); err != nil {
		return nil, err
	}
	if ratio == 1 {
		set.refit = func(r float64) (*RequestSet, error) { return t.requestSet(opt, r) }
	}
	set.Trace = &TraceInfo{File: t.Source, Format: t.Format, SHA256: t.SHA256, StartS: t.Spec.Start.Seconds(),
		DurationS: t.Spec.Duration.Seconds(), Scale: t.Spec.Scale, Requests: len(t.Rows), TotalRows: t.Total}
	return set, nil
}

// TraceInfo identifies a replayed trace and the part of it replayed.
type TraceInfo struct {
	File      string
	Format    string
	SHA256    string
	StartS    float64 // window start, seconds from the trace's first timestamp
	DurationS float64 // window length; 0: to the end
	Scale     float64 // time scale (0.5: twice as fast)
	Requests  int     // rows in the window
	TotalRows int
}

// Describe says in words which part of which trace is replayed, and how.
func (t *Trace) Describe() string {
	end := "the end"
	if t.Spec.Duration > 0 {
		end = (t.Spec.Start + t.Spec.Duration).String()
	}
	return fmt.Sprintf("trace replay (%s, sha256 %s): %d of %d requests, window %v to %s of the trace, time scale %g",
		t.Format, t.SHA256, len(t.Rows), t.Total, t.Spec.Start, end, t.Spec.Scale)
}

func (t *Trace) promptText(r TraceRow, seed int64, blocks map[int]string, ratio float64) string {
	if len(r.HashIDs) == 0 {
		return wordText(wordsFor(r.Input, ratio), seed, traceStream|uint64(r.Line))
	}
	parts := make([]string, 0, len(r.HashIDs))
	left := r.Input
	block := wordsFor(MooncakeBlockTokens, ratio)
	for _, id := range r.HashIDs {
		if left <= 0 {
			break
		}
		n := min(left, MooncakeBlockTokens)
		left -= n
		b, ok := blocks[id]
		if !ok {
			b = wordText(block, seed, traceStream|1<<23|uint64(uint32(id)))
			blocks[id] = b
		}
		if n < MooncakeBlockTokens {
			b = firstWords(b, wordsFor(n, ratio))
		}
		parts = append(parts, b)
	}
	if left > 0 {
		parts = append(parts, wordText(wordsFor(left, ratio), seed, traceStream|uint64(r.Line)))
	}
	return strings.Join(parts, " ")
}

// firstWords returns the first n space-separated words of s.
func firstWords(s string, n int) string {
	i := 0
	for k := 0; k < n; k++ {
		j := strings.IndexByte(s[i:], ' ')
		if j < 0 {
			return s
		}
		i += j + 1
	}
	return s[:i-1]
}
