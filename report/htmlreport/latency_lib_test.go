package htmlreport

import (
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// An imported recording's synthetic request (one over the whole window)
// gives no latency: its TTFT of 0 and E2E of the window are not times a
// client saw. A real request beside it still counts.
func TestLatenciesLeaveOutSyntheticRequests(t *testing.T) {
	synthetic := &record.Request{ID: "imported-window", Phase: "formal", SentAt: 100, FirstTokenAt: 100, DoneAt: 110,
		OutputTokens: 787352, TokensSource: "user", OK: true, Synthetic: true}
	out, notes := latencies([]*record.Request{synthetic})
	if len(out) != 0 || len(notes) == 0 || !strings.Contains(notes[0], "synthetic") {
		t.Errorf("synthetic only: %d distributions, notes %q; want none, saying the request is synthetic", len(out), notes)
	}
	// A request sent at 200, first token at 200.25, done at 201.25 with 5
	// tokens: TTFT 250 ms, E2E 1250 ms.
	rq := &record.Request{ID: "r", Phase: "formal", SentAt: 200, FirstTokenAt: 200.25, DoneAt: 201.25, OutputTokens: 5, OK: true}
	out, _ = latencies([]*record.Request{synthetic, rq})
	for _, l := range out {
		if l.N != 1 {
			t.Errorf("%s: n = %d, want 1 (the real request only)", l.Name, l.N)
		}
		if l.Name == "TTFT" && l.P50 != 250 {
			t.Errorf("TTFT p50 %g, want 250", l.P50)
		}
	}
}
