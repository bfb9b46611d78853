package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/joulebench/joulebench/archive/record"
	"os"
	"path/filepath"
	"testing"
)

// writeBenchRun writes a run of the size the reader must handle quickly:
// powerRows rows of power.csv (two devices) and nreq requests, each with
// tokenTimes token arrival times.
func writeBenchRun(b testing.TB, dir string, powerRows, nreq, tokenTimes int) {
	b.Helper()
	meta := testMeta()
	// The devices the rows below are of: power of a device run.json does
	// not list is refused.
	meta.Hardware.Devices = []record.Device{{ID: "gpu0", Name: "H100", Method: "counter"}, {ID: "gpu1", Name: "H100", Method: "counter"}}
	w, err := Create(dir, meta)
	if err != nil {
		b.Fatal(err)
	}
	const t0 = 1717405200.0
	energy := [2]float64{1e6, 2e6}
	for i := range powerRows / 2 {
		t := t0 + float64(i)*0.1 + 0.000123
		for d := range 2 {
			p := 300 + float64((i*7+d*13)%97) + 0.25
			energy[d] += p * 0.1
			if err := w.AppendPower(record.PowerSample{T: t, Device: fmt.Sprint("gpu", d), PowerW: p, EnergyJ: energy[d], HasEnergy: true, MemUsedBytes: 77309411328 + int64(i)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := range nreq {
		sent := t0 + float64(i)*0.01 + 0.000456
		r := record.Request{
			ID: fmt.Sprintf("f%06d", i), Phase: "formal", PromptID: fmt.Sprintf("p%06d", i%5000),
			SentAt: sent, FirstTokenAt: sent + 0.123456, DoneAt: sent + 5.654321,
			PromptTokens: 400 + i%300, OutputTokens: tokenTimes, TokensSource: "usage", OutputChars: 4 * tokenTimes,
			OK: true, MaxTokens: 512, Engine: "vllm",
		}
		for k := range tokenTimes {
			r.TokenTimes = append(r.TokenTimes, sent+0.123456+float64(k)*0.021987)
		}
		if err := w.AppendRequest(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

func dirSize(b *testing.B, dir string) int64 {
	var n int64
	for _, name := range []string{PowerFile, RequestsFile} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		n += st.Size()
	}
	return n
}

// BenchmarkLoad loads a run with 288,000 power rows (two devices, 10 Hz for
// four hours) and 100,000 requests. tokens is the length of each request's
// token_times.
func BenchmarkLoad(b *testing.B) {
	for _, tokens := range []int{0, 16, 64} {
		b.Run(fmt.Sprintf("power=288000/requests=100000/tokens=%d", tokens), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "run")
			writeBenchRun(b, dir, 288000, 100000, tokens)
			b.SetBytes(dirSize(b, dir))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				run, err := Load(dir)
				if err != nil {
					b.Fatal(err)
				}
				if len(run.Power) != 288000 || len(run.Requests) != 100000 {
					b.Fatalf("loaded %d rows, %d requests", len(run.Power), len(run.Requests))
				}
			}
		})
	}
}

// BenchmarkReadPowerCSV reads 288,000 rows from memory.
func BenchmarkReadPowerCSV(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "run")
	writeBenchRun(b, dir, 288000, 0, 0)
	data, err := os.ReadFile(filepath.Join(dir, PowerFile))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadPowerCSV(bytes.NewReader(data), PowerFile); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadRequests reads 100,000 requests from memory; tokens is the
// length of each request's token_times.
func BenchmarkReadRequests(b *testing.B) {
	for _, tokens := range []int{0, 16, 64} {
		b.Run(fmt.Sprintf("tokens=%d", tokens), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "run")
			writeBenchRun(b, dir, 0, 100000, tokens)
			data, err := os.ReadFile(filepath.Join(dir, RequestsFile))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ReadRequests(bytes.NewReader(data), RequestsFile); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeRequestLine decodes one requests.jsonl line with 200
// token_times (3.4 KB), as the writer writes it, on one core: the
// decoder the reader uses (github.com/goccy/go-json v0.12.0 with the
// positions of errors) and encoding/json.
//
// Measured while choosing the library (go test -cpu 1, the same line, all
// giving identical records; a shared 2-core AMD EPYC, so the absolute
// times are high and only the ratios carry over):
//
//	encoding/json                                 219 µs/line  20 allocs
//	github.com/go-json-experiment/json v1.27.2    112 µs       10 allocs
//	  (encoding/json/v2; 123 µs with the v1 options)
//	the hand-written decoder (deleted)             84 µs        4 allocs
//	github.com/bytedance/sonic v1.15.5             51 µs       11 allocs
//	github.com/goccy/go-json v0.12.0               36 µs       13 allocs
//
// go-json-experiment is the better-kept code (it becomes encoding/json/v2)
// but is slower than the hand-written decoder; sonic generates machine
// code at run time on amd64 only; goccy/go-json follows encoding/json's
// rules and errors (FuzzDecodeRequest checks it) at 2.3 times the speed
// of the hand-written decoder, 6 times that of encoding/json.
func BenchmarkDecodeRequestLine(b *testing.B) {
	r := record.Request{ID: "f000123", Phase: "formal", PromptID: "p000123", SentAt: 1717405200.000456, FirstTokenAt: 1717405200.123912,
		DoneAt: 1717405205.654777, PromptTokens: 523, OutputTokens: 200, TokensSource: "usage", OutputChars: 800, OK: true, MaxTokens: 512, Engine: "vllm"}
	for k := range 200 {
		r.TokenTimes = append(r.TokenTimes, r.FirstTokenAt+float64(k)*0.021987)
	}
	line, err := json.Marshal(r)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("goccy-go-json", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		b.ReportAllocs()
		var d jsonLine
		for b.Loop() {
			var got record.Request
			if err := d.decodeRequest(line, &got); err != nil || len(got.TokenTimes) != 200 {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		b.ReportAllocs()
		for b.Loop() {
			var got record.Request
			if err := json.Unmarshal(line, &got); err != nil || len(got.TokenTimes) != 200 {
				b.Fatal(err)
			}
		}
	})
}
