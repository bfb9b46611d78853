package ssebench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Entry is one answered completion request as the server saw it.
type Entry struct {
	// ID is the request's X-Request-Id ("" when it had none).
	ID string `json:"id"`
	// ArrivedAt is when the request had been read (server clock).
	ArrivedAt float64 `json:"arrived_at"`
	// Writes holds, per content chunk, when the write that carried it
	// began (server clock); batched chunks share their write's time.
	Writes []float64 `json:"writes"`
	// WriteEnds holds, per content chunk, when that write returned: on
	// loopback the bytes are in the client's receive queue by then, so a
	// client time after it is the client's own delay, and WriteEnds -
	// Writes is how long the server took (or was kept off its CPU).
	WriteEnds []float64 `json:"write_ends"`
}

// Log is the server's record of the streams it finished, in order of
// completion. It is safe for concurrent use.
type Log struct {
	mu      sync.Mutex
	entries []Entry
}

// Add records a finished stream.
func (l *Log) Add(e Entry) {
	l.mu.Lock()
	l.entries = append(l.entries, e)
	l.mu.Unlock()
}

// Entries returns the entries whose ID starts with prefix, in order.
func (l *Log) Entries(prefix string) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Entry
	for _, e := range l.entries {
		if strings.HasPrefix(e.ID, prefix) {
			out = append(out, e)
		}
	}
	return out
}

// WriteJSON writes the entries whose ID starts with prefix as a JSON array.
func (l *Log) WriteJSON(w io.Writer, prefix string) error {
	entries := l.Entries(prefix)
	if entries == nil {
		entries = []Entry{}
	}
	if err := json.NewEncoder(w).Encode(entries); err != nil {
		return fmt.Errorf("ssebench log: %w", err)
	}
	return nil
}

// ByRequest joins a run's log entries to its archived requests: it maps
// each request id of run runID (the X-Request-Id "<run id>-<request id>"
// that joulebench sends) to its entry. An entry of another run, without
// an id, or whose request id came twice is an error.
func ByRequest(entries []Entry, runID string) (map[string]Entry, error) {
	out := make(map[string]Entry, len(entries))
	for i, e := range entries {
		id, ok := SplitRequestID(e.ID, runID)
		if !ok {
			return nil, fmt.Errorf("ssebench log entry %d: X-Request-Id %q is not %q followed by -<request id>", i, e.ID, runID)
		}
		if _, dup := out[id]; dup {
			return nil, fmt.Errorf("ssebench log entry %d: request id %q came twice", i, id)
		}
		out[id] = e
	}
	return out, nil
}

// SplitRequestID returns the request id in header, the X-Request-Id
// "<run id>-<request id>" of run runID, and whether header has that form
// with a non-empty request id. Run ids contain dashes, so the run id must
// be known to split.
func SplitRequestID(header, runID string) (string, bool) {
	if runID == "" {
		return "", false
	}
	id, ok := strings.CutPrefix(header, runID+"-")
	if !ok || id == "" {
		return "", false
	}
	return id, true
}
