package observe

import (
	"math"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/importer/loadresults"
)

// A vLLM result file's times are on vLLM's monotonic clock: its requests
// are placed so that the last response ends at the formal stage's end,
// each keeping its offsets; a file whose span is longer than the stage is
// refused.
func TestFromResultsMonotonic(t *testing.T) {
	res := &loadresults.Results{Path: "r.json", Format: loadresults.VLLMBenchServe, Tool: "vllm bench serve", Clock: loadresults.ClockMonotonic,
		Requests: []loadresults.Request{
			{Start: 1000.0, TTFT: 0.1, Latency: 0.5, OutputTokens: 10, OK: true},
			{Start: 1000.2, TTFT: 0.2, Latency: 1.0, OutputTokens: 20, OK: true, ITL: []float64{0.1, 0.2}},
			{Start: 1000.3, OK: false, Error: "timeout"},
		}}
	// Hand placement: the last response ends at 1000.2 + 1.0 = 1001.2 on
	// vLLM's clock, at 50 on the run's: shift -951.2.
	got, err := FromResults(res, "sha", 40, 50, 30)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ sent, first, done float64 }{{48.8, 48.9, 49.3}, {49.0, 49.2, 50}, {49.1, 0, 49.1}}
	for i, w := range want {
		q := got.Requests[i]
		if math.Abs(q.SentAt-w.sent) > 1e-9 || math.Abs(q.FirstTokenAt-w.first) > 1e-9 || math.Abs(q.DoneAt-w.done) > 1e-9 {
			t.Errorf("request %d: sent %v first %v done %v, want %+v", i+1, q.SentAt, q.FirstTokenAt, q.DoneAt, w)
		}
	}
	if tt := got.Requests[1].TokenTimes; len(tt) != 3 || math.Abs(tt[2]-49.5) > 1e-9 {
		t.Errorf("token times %v, want 49.2, 49.3, 49.5", tt)
	}
	if got.Requests[2].OK || got.Requests[2].Error != "timeout" || got.File.OutputTokens != 30 {
		t.Errorf("failed request %+v, file %+v", got.Requests[2], got.File)
	}
	if n := strings.Join(got.Notes, "\n"); !strings.Contains(n, "30 by the vllm bench serve result file, 30 by the server's counter (0.0 % apart)") || !strings.Contains(n, "monotonic clock") {
		t.Errorf("notes %q", n)
	}
	// A stage of 0.5 s cannot hold a load that lasted 1.2 s.
	if _, err := FromResults(res, "sha", 49.5, 50, 30); err == nil || !strings.Contains(err.Error(), "outside the formal stage") {
		t.Errorf("span longer than the stage: %v", err)
	}
	// 40 tokens by the counter: 25 % apart, said.
	got, err = FromResults(res, "sha", 40, 50, 40)
	if err != nil || !strings.Contains(strings.Join(got.Notes, "\n"), "more than 2 % apart") {
		t.Errorf("cross-check: %v %q", err, got.Notes)
	}
}

// A file on the Unix clock is taken as it is, and refused when it is not
// of the stage; one without start times cannot be placed.
func TestFromResultsUnix(t *testing.T) {
	res := &loadresults.Results{Path: "p.jsonl", Format: loadresults.AIPerf, Tool: "aiperf", Clock: loadresults.ClockUnix,
		Requests: []loadresults.Request{{Start: 45, TTFT: 0.5, Latency: 2, OutputTokens: 8, OK: true}}}
	got, err := FromResults(res, "sha", 40, 50, 8)
	if err != nil || got.Requests[0].SentAt != 45 || got.Requests[0].DoneAt != 47 {
		t.Fatalf("%v %+v", err, got)
	}
	if _, err := FromResults(res, "sha", 100, 110, 8); err == nil || !strings.Contains(err.Error(), "not of this load") {
		t.Errorf("a file of another window: %v", err)
	}
	res.Clock = loadresults.ClockNone
	if _, err := FromResults(res, "sha", 40, 50, 8); err == nil || !strings.Contains(err.Error(), "no request start times") {
		t.Errorf("no start times: %v", err)
	}
}

// A result file whose output tokens are above the server counter's by
// more than archive.MaxResultTokensOver allows (10 %, at least 16
// tokens) counts tokens the server did not generate: it is not used
// (the counter's tokens stand), as the reader would refuse the archive.
// The file below holds 10 + 20 = 30 tokens.
func TestFromResultsAboveTheCounter(t *testing.T) {
	res := &loadresults.Results{Path: "p.jsonl", Format: loadresults.AIPerf, Tool: "aiperf", Clock: loadresults.ClockUnix,
		Requests: []loadresults.Request{
			{Start: 45, TTFT: 0.5, Latency: 2, OutputTokens: 10, OK: true},
			{Start: 46, TTFT: 0.5, Latency: 2, OutputTokens: 20, OK: true},
		}}
	// 10 counted: at most 10 + max(16, 1) = 26 by the file; 30 is above.
	if _, err := FromResults(res, "sha", 40, 50, 10); err == nil || !strings.Contains(err.Error(), "30 output tokens") || !strings.Contains(err.Error(), "10 by the server's counter") {
		t.Errorf("30 tokens against 10 counted: %v, want refused", err)
	}
	// 14 counted: at most 14 + 16 = 30: used. No count (-1): used.
	for _, counted := range []int{14, -1} {
		if _, err := FromResults(res, "sha", 40, 50, counted); err != nil {
			t.Errorf("30 tokens against %d counted: %v", counted, err)
		}
	}
}
