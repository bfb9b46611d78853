package loadresults

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The three requests of testdata (SOURCES.md) as archive records: vLLM's
// monotonic start times shifted to Unix time (5000.5 + 1767263800 =
// 1767268800.5, 2026-01-01T12:00:00.5Z), the others as they are; request
// 1 sent at 1767268800.5, first token 0.2 s later, done 0.34 s after it
// was sent; the failed request keeps no output tokens.
func TestRecords(t *testing.T) {
	for _, c := range []struct {
		file  string
		shift float64
	}{
		{"vllm_detailed.json", 1767268800 - 5000},
		{"guidellm_benchmarks.json", 0},
		{"aiperf_profile_export.jsonl", 0},
	} {
		t.Run(c.file, func(t *testing.T) {
			r, err := Read(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			recs, err := r.Records(c.shift, "formal")
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 3 {
				t.Fatalf("%d records, want 3", len(recs))
			}
			q := recs[1]
			if math.Abs(q.SentAt-1767268800.5) > 1e-6 || math.Abs(q.FirstTokenAt-1767268800.7) > 1e-6 ||
				math.Abs(q.DoneAt-1767268800.84) > 1e-6 || q.PromptTokens != 32 || q.OutputTokens != 8 || !q.OK || q.Phase != "formal" {
				t.Errorf("request 1: %+v", q)
			}
			if f := recs[2]; f.OK || f.OutputTokens != 0 || f.Error == "" || f.FirstTokenAt != 0 {
				t.Errorf("failed request: %+v", f)
			}
			if recs[0].ID == recs[1].ID {
				t.Errorf("ids not distinct: %q", recs[0].ID)
			}
		})
	}
}

func TestRecordsRefuses(t *testing.T) {
	read := func(file string) *Results {
		r, err := Read(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	b, err := os.ReadFile(filepath.Join("testdata", "aiperf_profile_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	unstreamed, err := Parse("x.jsonl", []byte(strings.Replace(string(b), `"time_to_first_token": {"value": 200.0, "unit": "ms"}, `, "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	backwards := read("guidellm_benchmarks.json")
	backwards.Requests[1].Latency = 0.1 // before its first token at 0.2 s
	// Not streamed, first token stated at the end: request 1 (8 tokens)
	// has TTFT = latency = 0.34 s; request 0 is made the same.
	atEnd := read("guidellm_benchmarks.json")
	for i := range atEnd.Requests {
		if atEnd.Requests[i].OK {
			atEnd.Requests[i].TTFT = atEnd.Requests[i].Latency
		}
	}
	for _, c := range []struct {
		name  string
		r     *Results
		shift float64
		want  string
	}{
		{"monotonic without offset", read("vllm_detailed.json"), 0, "need the offset to Unix time"},
		{"no per-request data", read("vllm_summary.json"), 1, "no per-request data: the file has no per-request ttfts"},
		{"unix with offset", read("guidellm_benchmarks.json"), 5, "no offset applies"},
		{"not streamed", unstreamed, 0, "request 1 succeeded but has no time to first token"},
		{"done before the first token", backwards, 0, "request 1: latency 0.1 s is shorter than its time to first token 0.2 s"},
		{"first token stated at the end", atEnd, 0, "every successful request of two or more output tokens has its time to first token equal to its latency (2 requests): the responses were not streamed"},
	} {
		if _, err := c.r.Records(c.shift, "formal"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// One response that came in one chunk (its first token at its end) among
// streamed ones is kept as it is: its TPOT is 0 because its tokens came
// together.
func TestRecordsKeepsOneChunkResponse(t *testing.T) {
	r, err := Read(filepath.Join("testdata", "guidellm_benchmarks.json"))
	if err != nil {
		t.Fatal(err)
	}
	r.Requests[1].TTFT = r.Requests[1].Latency // 0.34 s, 8 tokens
	recs, err := r.Records(0, "formal")
	if err != nil {
		t.Fatal(err)
	}
	if q := recs[1]; q.FirstTokenAt != q.DoneAt || q.OutputTokens != 8 {
		t.Errorf("request 1: first token %v, done %v, %d tokens; want first token at done, 8 tokens", q.FirstTokenAt, q.DoneAt, q.OutputTokens)
	}
}
