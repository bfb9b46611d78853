package loadgen_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/loadgen"
)

// BenchmarkLongRunMemory replays a long run (issue 46): 100,000 requests
// (JOULEBENCH_BENCH_LONGRUN_REQUESTS to change), 64 in flight, against a
// stub OpenAI-compatible server on 127.0.0.1 that streams 16 one-token
// chunks at once, with the real streaming client, the records handed to a
// sink that drops them (as the runner's sink hands them to the archive).
// The client's memory must stay flat over the run: it reports the live
// heap (after a collection) before the first send, its highest value at
// each 10,000 requests done, and after the last, in MiB, and the
// goroutines left.
//
//	go test -run '^$' -bench LongRunMemory -benchtime 1x ./loadgen/
func BenchmarkLongRunMemory(b *testing.B) {
	n := 100_000
	if v := os.Getenv("JOULEBENCH_BENCH_LONGRUN_REQUESTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("JOULEBENCH_BENCH_LONGRUN_REQUESTS=%q: want a positive number", v)
		}
	}
	var body []byte
	for range 16 {
		body = append(body, "data: {\"choices\":[{\"delta\":{\"content\":\"tok \"}}]}\n\n"...)
	}
	body = append(body, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":16}}\n\ndata: [DONE]\n\n"...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	reqs := requests(n)
	live := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc) / (1 << 20)
	}
	for b.Loop() {
		client := openai.NewClient(srv.URL)
		start := live()
		peak, failed, done := start, 0, 0
		var series []float64
		sink := func(r record.Request) {
			if !r.OK {
				failed++
			}
			if done++; done%10_000 == 0 {
				h := live()
				series, peak = append(series, h), max(peak, h)
			}
		}
		err := loadgen.Run(context.Background(), loadgen.Config{Mode: loadgen.Concurrency, Concurrency: 64}, reqs, client, sink, nil)
		if err != nil {
			b.Fatal(err)
		}
		if failed > 0 || done != n {
			b.Fatalf("%d requests done, %d failed; want %d done", done, failed, n)
		}
		end := live()
		b.Logf("live heap (MiB) before the first send %.1f, at each 10,000 done %.1f, after the last %.1f", start, series, end)
		b.ReportMetric(start, "heap_start_MiB")
		b.ReportMetric(max(peak, end), "heap_max_MiB")
		b.ReportMetric(end, "heap_end_MiB")
		b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines_end")
	}
}
