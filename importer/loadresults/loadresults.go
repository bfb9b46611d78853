// Package loadresults reads the result files of load generators that
// joulebench did not write: vLLM's `vllm bench serve --save-result` JSON,
// GuideLLM's benchmarks JSON report and AIPerf's per-request export
// (profile_export.jsonl). Read detects the format from the file's
// content and returns the tool, its version where the file records it,
// the per-request records where the file has them, and the file's own
// aggregates.
//
// Every time is in seconds. A request's TPOT is the mean time per output
// token after the first ((latency − TTFT) / (output tokens − 1)): vLLM's
// tpot, GuideLLM's inter_token_latency_ms and AIPerf's
// inter_token_latency. ITL is the list of gaps between successive
// streamed chunks where the file lists them (vLLM's itls, AIPerf's
// inter_chunk_latency).
package loadresults

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/internal/boundedfile"
)

// MaxBytes caps a result file (256 MiB: a vLLM file saved with
// --save-detailed holds every generated text, about a hundred thousand
// requests of a few KiB each).
const MaxBytes = 256 << 20

// MaxTokens bounds a request's input or output token count: the archive's
// own bound on a request's output tokens (archive.MaxOutputTokens).
const MaxTokens = archive.MaxOutputTokens

// Format names a result-file format Read understands.
type Format string

// The formats Read detects.
const (
	VLLMBenchServe Format = "vllm-bench-serve"
	GuideLLM       Format = "guidellm"
	AIPerf         Format = "aiperf"
)

// Clock says what a request's Start counts from.
type Clock string

const (
	// ClockNone: the file records no request start times.
	ClockNone Clock = ""
	// ClockUnix: seconds since the Unix epoch (GuideLLM, AIPerf).
	ClockUnix Clock = "unix"
	// ClockMonotonic: seconds of the tool's own monotonic clock (vLLM's
	// time.perf_counter()): only differences between requests mean
	// anything; the origin is not the epoch.
	ClockMonotonic Clock = "monotonic"
)

// Request is one request of a result file. A duration the file does not
// hold is 0 (none of them can be 0 for a request that was answered).
type Request struct {
	// Start is when the request was sent, on the Results' Clock.
	Start float64
	// TTFT is the time to the first token; Latency the time to the last.
	TTFT, Latency float64
	// TPOT is the mean time per output token after the first.
	TPOT float64
	// ITL lists the gaps between successive streamed chunks.
	ITL []float64
	// InputTokens and OutputTokens as the tool counted them.
	InputTokens, OutputTokens int
	// OK says the request succeeded; Error is the tool's reason when not.
	OK    bool
	Error string
	// Group names the benchmark of a file that holds several (GuideLLM's
	// strategies, "" otherwise).
	Group string
}

// Aggregates are the totals and means a file states for itself. A figure
// the file does not state is 0 (and its name is missing from Stated).
type Aggregates struct {
	// Duration is the benchmark's length in seconds.
	Duration float64
	// Completed and Failed count requests.
	Completed, Failed int
	// InputTokens and OutputTokens are totals over the completed requests.
	InputTokens, OutputTokens int64
	// MeanTTFT, MeanTPOT, MeanITL and MeanLatency are seconds.
	MeanTTFT, MeanTPOT, MeanITL, MeanLatency float64
	// Stated lists the figures above that the file stated.
	Stated []string
}

// Results is what Read gives for one file.
type Results struct {
	// Path is the file read; Format the format detected.
	Path   string
	Format Format
	// Tool names the load generator; Version its version where the file
	// records it ("" when it does not).
	Tool, Version string
	// Clock is what every request's Start counts from.
	Clock Clock
	// Requests are the per-request records, nil when the file has none;
	// NoRequests then says why.
	Requests   []Request
	NoRequests string
	// Aggregates are the file's own figures.
	Aggregates Aggregates
	// Notes say what was read in a way worth knowing (a sample, a
	// benchmark phase left out).
	Notes []string
}

// Read reads the result file at path (a regular file of at most MaxBytes)
// and detects its format from its content. A gzip-compressed file (found
// by its first two bytes, whatever its name) is read decompressed, its
// content, too, at most MaxBytes.
func Read(path string) (*Results, error) {
	data, err := boundedfile.Read(path, "result file", MaxBytes)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse reads a result file's content, decompressed first when it is
// gzip; name is the file's name in errors.
func Parse(name string, data []byte) (*Results, error) {
	if isGzip(data) {
		var err error
		if data, err = gunzipCapped(name, data, MaxBytes); err != nil {
			return nil, err
		}
	}
	data = nanToNull(data)
	first, rest, err := firstValue(data)
	if err != nil {
		return nil, fmt.Errorf("%s: not a result file this reader knows (vLLM bench serve JSON, GuideLLM benchmarks JSON, AIPerf profile_export.jsonl): %w", name, err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(first, &keys); err != nil {
		return nil, fmt.Errorf("%s: the file's first value is not a JSON object: %w", name, err)
	}
	switch {
	case has(keys, "benchmarks"):
		if rest {
			return nil, fmt.Errorf("%s: a GuideLLM report is one JSON object; more follows it", name)
		}
		return parseGuideLLM(name, first)
	case has(keys, "metadata") && (has(keys, "metrics") || has(keys, "error")):
		return parseAIPerf(name, data)
	case has(keys, "completed") || has(keys, "ttfts") || has(keys, "endpoint_type") || has(keys, "backend"):
		if rest {
			return nil, fmt.Errorf("%s: holds more than one vLLM result (written with --append-result); give a file with one", name)
		}
		return parseVLLM(name, first)
	}
	return nil, fmt.Errorf("%s: not a result file this reader knows: a vLLM bench serve result has \"completed\" and \"duration\", a GuideLLM report \"benchmarks\", an AIPerf profile_export.jsonl line \"metadata\" and \"metrics\"", name)
}

func has(m map[string]json.RawMessage, k string) bool {
	_, ok := m[k]
	return ok
}

// firstValue returns the file's first JSON value and whether anything
// but white space follows it.
func firstValue(data []byte) (json.RawMessage, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, false, errors.New("the file is empty")
		}
		return nil, false, err
	}
	rest := bytes.TrimSpace(data[dec.InputOffset():])
	return v, len(rest) > 0, nil
}

// nanToNull replaces the bare NaN, Infinity and -Infinity that Python's
// json module writes for a float it cannot express in JSON (vLLM's mean
// over no successful request) by null, outside strings: such a figure is
// not known. The data is copied only when one is found.
func nanToNull(data []byte) []byte {
	var out []byte
	inStr, esc, last := false, false, 0
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		if c == '"' {
			inStr = true
			continue
		}
		for _, tok := range [][]byte{[]byte("NaN"), []byte("-Infinity"), []byte("Infinity")} {
			if bytes.HasPrefix(data[i:], tok) {
				out = append(out, data[last:i]...)
				out = append(out, "null"...)
				i += len(tok) - 1
				last = i + 1
				break
			}
		}
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

// fieldError is a bad value in a result file: the file, the field (a
// JSON path, with the line for a JSON Lines file) and what is wrong.
func fieldError(name, field, format string, args ...any) error {
	return fmt.Errorf("%s: field %s: %s", name, field, fmt.Sprintf(format, args...))
}

// checkSeconds refuses a duration that is negative, not finite or beyond
// a day (no request of a benchmark takes longer).
func checkSeconds(name, field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 86400 {
		return fieldError(name, field, "%v is not a duration in seconds (0 .. 86400)", v)
	}
	return nil
}

// checkTokens refuses a token count that is negative, not whole or over
// MaxTokens.
func checkTokens(name, field string, v float64) (int, error) {
	if math.IsNaN(v) || v < 0 || v > MaxTokens || v != math.Trunc(v) {
		return 0, fieldError(name, field, "%v is not a token count (a whole number 0 .. %d)", v, MaxTokens)
	}
	return int(v), nil
}

// summarize fills the aggregates a file leaves out from its requests:
// counts and token totals over the successful ones.
func (r *Results) summarize() {
	a := &r.Aggregates
	if !stated(a, "completed") {
		for _, q := range r.Requests {
			if q.OK {
				a.Completed++
			} else {
				a.Failed++
			}
		}
	}
	if !stated(a, "output_tokens") {
		for _, q := range r.Requests {
			if q.OK {
				a.InputTokens += int64(q.InputTokens)
				a.OutputTokens += int64(q.OutputTokens)
			}
		}
	}
}

func stated(a *Aggregates, name string) bool {
	for _, s := range a.Stated {
		if s == name {
			return true
		}
	}
	return false
}
