package loadresults

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The three testdata files describe the same three requests (SOURCES.md):
//
//	request 0: sent at t, 32 input tokens, 4 output tokens, TTFT 100 ms,
//	           latency 250 ms: TPOT (250 − 100) / (4 − 1) = 50 ms
//	request 1: sent at t + 0.5 s, 32 input, 8 output, TTFT 200 ms,
//	           latency 340 ms: TPOT (340 − 200) / (8 − 1) = 20 ms
//	request 2: failed
//
// so every reader gives: 2 completed, 1 failed, 64 input and 12 output
// tokens (4 + 8), mean TTFT (100 + 200) / 2 = 150 ms, mean TPOT
// (50 + 20) / 2 = 35 ms, mean latency (250 + 340) / 2 = 295 ms. vLLM's
// mean ITL is over all 10 gaps: (3 × 50 + 7 × 20) / 10 = 29 ms.
func TestReadFormats(t *testing.T) {
	second := Request{TTFT: 0.2, Latency: 0.34, TPOT: 0.02, InputTokens: 32, OutputTokens: 8, OK: true}
	sevenGaps := []float64{0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02}
	tests := []struct {
		file          string
		format        Format
		tool, version string
		clock         Clock
		requests      int
		start         float64 // request 1's start
		itl           []float64
		failedErr     string // in request 2's Error
		agg           Aggregates
	}{
		{"vllm_detailed.json", VLLMBenchServe, "vllm bench serve", "", ClockMonotonic, 3, 5000.5, sevenGaps,
			"no first token",
			Aggregates{Duration: 2, Completed: 2, Failed: 1, InputTokens: 64, OutputTokens: 12,
				MeanTTFT: 0.150, MeanTPOT: 0.035, MeanITL: 0.029, MeanLatency: 0.295}},
		{"vllm_summary.json", VLLMBenchServe, "vllm bench serve", "", ClockNone, 0, 0, nil, "",
			Aggregates{Duration: 2, Completed: 2, Failed: 1, InputTokens: 64, OutputTokens: 12,
				MeanTTFT: 0.150, MeanTPOT: 0.035, MeanITL: 0.029, MeanLatency: 0.295}},
		// 1767268800 is 2026-01-01T12:00:00Z.
		{"guidellm_benchmarks.json", GuideLLM, "guidellm", "0.7.3", ClockUnix, 3, 1767268800.5, nil,
			"HTTPStatusError: 500",
			Aggregates{Duration: 2, Completed: 2, Failed: 1, InputTokens: 64, OutputTokens: 12,
				MeanTTFT: 0.150, MeanTPOT: 0.035, MeanLatency: 0.295}},
		// No aggregates in the file: counts and totals from its records.
		{"aiperf_profile_export.jsonl", AIPerf, "aiperf", "", ClockUnix, 3, 1767268800.5, sevenGaps,
			"HTTPStatusError: Internal Server Error (code 500)",
			Aggregates{Completed: 2, Failed: 1, InputTokens: 64, OutputTokens: 12}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			r, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if r.Format != tt.format || r.Tool != tt.tool || r.Version != tt.version || r.Clock != tt.clock || r.Path != path {
				t.Errorf("got format %q tool %q version %q clock %q path %q, want %q %q %q %q %q",
					r.Format, r.Tool, r.Version, r.Clock, r.Path, tt.format, tt.tool, tt.version, tt.clock, path)
			}
			checkAggregates(t, r.Aggregates, tt.agg)
			if len(r.Requests) != tt.requests {
				t.Fatalf("%d requests, want %d", len(r.Requests), tt.requests)
			}
			if tt.requests == 0 {
				if !strings.Contains(r.NoRequests, "--save-detailed") {
					t.Errorf("NoRequests %q does not say why", r.NoRequests)
				}
				return
			}
			want := second
			want.Start, want.ITL = tt.start, tt.itl
			checkRequest(t, r.Requests[1], want)
			if f := r.Requests[2]; f.OK || !strings.Contains(f.Error, tt.failedErr) || f.OutputTokens != 0 {
				t.Errorf("request 2: OK %v, error %q, %d output tokens; want failed with %q and 0 tokens", f.OK, f.Error, f.OutputTokens, tt.failedErr)
			}
			if q := r.Requests[0]; !q.OK || !near(q.TPOT, 0.05) || q.OutputTokens != 4 {
				t.Errorf("request 0: %+v, want OK with TPOT 0.05 s and 4 output tokens", q)
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9 }

func checkAggregates(t *testing.T, got, want Aggregates) {
	t.Helper()
	if got.Completed != want.Completed || got.Failed != want.Failed || got.InputTokens != want.InputTokens || got.OutputTokens != want.OutputTokens {
		t.Errorf("counts %d/%d, tokens %d/%d; want %d/%d, %d/%d", got.Completed, got.Failed, got.InputTokens, got.OutputTokens,
			want.Completed, want.Failed, want.InputTokens, want.OutputTokens)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"duration", got.Duration, want.Duration},
		{"mean TTFT", got.MeanTTFT, want.MeanTTFT},
		{"mean TPOT", got.MeanTPOT, want.MeanTPOT},
		{"mean ITL", got.MeanITL, want.MeanITL},
		{"mean latency", got.MeanLatency, want.MeanLatency},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s %v, want %v", c.name, c.got, c.want)
		}
	}
}

func checkRequest(t *testing.T, got, want Request) {
	t.Helper()
	if !near(got.Start, want.Start) || !near(got.TTFT, want.TTFT) || !near(got.Latency, want.Latency) || !near(got.TPOT, want.TPOT) ||
		got.InputTokens != want.InputTokens || got.OutputTokens != want.OutputTokens || got.OK != want.OK ||
		len(got.ITL) != len(want.ITL) {
		t.Fatalf("request 1: %+v, want %+v", got, want)
	}
	for i := range want.ITL {
		if !near(got.ITL[i], want.ITL[i]) {
			t.Errorf("request 1: ITL[%d] %v, want %v", i, got.ITL[i], want.ITL[i])
		}
	}
}

// A mean Python's json module wrote as NaN (vLLM's mean over no answered
// request) is read as not stated, not refused.
func TestReadNaNMeans(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "vllm_summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), `"mean_ttft_ms": 150.0`, `"mean_ttft_ms": NaN`, 1)
	s = strings.Replace(s, `"label": null`, `"label": "NaN Infinity"`, 1)
	r, err := Parse("x.json", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	if r.Aggregates.MeanTTFT != 0 || slices.Contains(r.Aggregates.Stated, "mean_ttft_ms") || !slices.Contains(r.Aggregates.Stated, "mean_tpot_ms") {
		t.Errorf("mean TTFT %v, stated %v: want 0 and not stated", r.Aggregates.MeanTTFT, r.Aggregates.Stated)
	}
}

// Each bad file is refused with an error naming the file, the field and
// what is wrong.
func TestReadRefusesBadInput(t *testing.T) {
	tests := []struct {
		name, file, old, new string
		want                 []string
	}{
		{"vllm list length", "vllm_detailed.json", `"output_lens": [4, 8, 0]`, `"output_lens": [4, 8]`,
			[]string{"field output_lens: 2 entries, but ttfts has 3"}},
		{"vllm negative ttft", "vllm_detailed.json", `"ttfts": [0.1, 0.2, 0.0]`, `"ttfts": [0.1, -0.2, 0.0]`,
			[]string{"field ttfts[1]: -0.2 is not a duration"}},
		{"vllm fractional tokens", "vllm_detailed.json", `"output_lens": [4, 8, 0]`, `"output_lens": [4, 8.5, 0]`,
			[]string{"field output_lens[1]: 8.5 is not a token count"}},
		{"vllm latency before ttft", "vllm_detailed.json", `"latencies": [0.25, 0.34, 0.0]`, `"latencies": [0.25, 0.1, 0.0]`,
			[]string{"field latencies[1]: 0.1 s is shorter than ttfts[1]"}},
		{"vllm no completed", "vllm_detailed.json", `"completed": 2,`, ``,
			[]string{`field "completed" or "duration" is missing`}},
		{"vllm text for a number", "vllm_detailed.json", `"duration": 2.0`, `"duration": "2.0"`,
			[]string{"vLLM bench serve result", "duration"}},
		{"vllm appended", "vllm_summary.json", "\n", "\n{\"completed\": 1, \"duration\": 1}\n",
			[]string{"--append-result"}},
		{"guidellm schema version", "guidellm_benchmarks.json", `"version": 2`, `"version": 1`,
			[]string{"field metadata.version: 1"}},
		{"guidellm start time", "guidellm_benchmarks.json", `"request_start_time": 1767268800.5`, `"request_start_time": 5.0`,
			[]string{"field benchmarks[0].requests.successful[1].request_start_time: 5 is not a Unix time"}},
		{"guidellm tokens", "guidellm_benchmarks.json", `"output_tokens": 8,`, `"output_tokens": -8,`,
			[]string{"field benchmarks[0].requests.successful[1].output_tokens: -8 is not a token count"}},
		{"guidellm no benchmark", "guidellm_benchmarks.json", `"benchmarks": [`, `"benchmarks": [], "x": [`,
			[]string{"field benchmarks: empty"}},
		{"aiperf unit", "aiperf_profile_export.jsonl", `{"value": 200.0, "unit": "ms"}`, `{"value": 200.0, "unit": "min"}`,
			[]string{"aiperf_profile_export.jsonl:2: field metrics.time_to_first_token.unit: \"min\" is not a time unit"}},
		{"aiperf broken line", "aiperf_profile_export.jsonl", `"session_num": 1,`, `"session_num": 1,,`,
			[]string{"aiperf_profile_export.jsonl:2: not an AIPerf record"}},
		{"aiperf start", "aiperf_profile_export.jsonl", `1767268800500000000`, `12`,
			[]string{"aiperf_profile_export.jsonl:2: field metadata.request_start_ns: 12 is not an epoch time in nanoseconds"}},
		{"aiperf tokens unit", "aiperf_profile_export.jsonl", `"output_sequence_length": {"value": 8, "unit": "tokens"}`, `"output_sequence_length": {"value": 8, "unit": "words"}`,
			[]string{"aiperf_profile_export.jsonl:2: field metrics.output_sequence_length.unit: \"words\", want tokens"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tt.old) {
				t.Fatalf("%s does not hold %q", tt.file, tt.old)
			}
			bad := strings.Replace(string(b), tt.old, tt.new, 1)
			path := filepath.Join(t.TempDir(), tt.file)
			if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = Read(path)
			if err == nil {
				t.Fatal("read without an error")
			}
			for _, w := range append(tt.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestReadRefusesUnknownFiles(t *testing.T) {
	for _, tt := range []struct{ name, content, want string }{
		{"empty", "", "the file is empty"},
		{"other json", `{"foo": 1}`, "not a result file this reader knows"},
		{"array", `[1, 2]`, "not a JSON object"},
		{"text", "hello", "not a result file this reader knows"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("f.json", []byte(tt.content))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "f.json: ") {
				t.Errorf("error %v, want f.json: ... %q", err, tt.want)
			}
		})
	}
	if _, err := Read(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: error %v, want not a regular file", err)
	}
}
