package main

// BenchmarkAnalyzeLarge times `joulebench analyze` end to end on a run of
// the size issue 15 names: 100,000 formal requests with about 200 token
// times each (a requests.jsonl of about 400 MB) and 8 GPUs sampled at 10 Hz
// for an hour (288,000 power rows with energy counters). The archive is
// generated once, deterministically, under the system's temporary
// directory and kept for the next run (delete it to regenerate). Each
// iteration runs analyze in a child process, joulebench as a user builds
// it (`go build` of this package: not the test binary, whose test code
// links more, e.g. the Kubernetes client of the cluster tests), so that its
// peak RSS is analyze's own:
//
//	go test -run '^$' -bench AnalyzeLarge -benchtime 3x ./cmd/joulebench/
//
// BenchmarkAnalyzeMillion is the same at ten times the size (issue 46):
// 1,000,000 requests and 10 h of power (a requests.jsonl of about 4 GB;
// check the temporary directory's free space first). Another size:
// JOULEBENCH_BENCH_ANALYZE_REQUESTS=N for AnalyzeLarge (power for
// 3600 s per 100,000 requests, at least an hour).
//
// It reports wall_s, cpu_s (user + system) and peak_rss_MB of the child;
// on a shared machine cpu_s is the steadier figure. With
// JOULEBENCH_BENCH_ANALYZE_OUT=FILE the last iteration's JSON results are
// written to FILE, to check that a change leaves them identical.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

const (
	benchDevices   = 8
	benchHz        = 10
	benchRequests  = 100_000
	benchT0        = 1717405200.123456
	benchFormalBeg = benchT0 + 60
)

// benchSize is the size of a generated run: its requests and the seconds
// of power around them.
type benchSize struct{ requests, seconds int }

// sizeOf is the run of n requests: an hour of power per 100,000 requests
// (at least one).
func sizeOf(n int) benchSize { return benchSize{n, 3600 * max(1, n/benchRequests)} }

func (z benchSize) formalEnd() float64 { return benchT0 + float64(z.seconds) - 60 }

// benchArchive returns the directory of the large run of size z,
// generating it when it is missing.
func benchArchive(b *testing.B, z benchSize) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("joulebench-bench-analyze-v3-%d", z.requests))
	if _, err := os.Stat(filepath.Join(dir, "run.json")); err == nil {
		return dir
	}
	tmp := dir + fmt.Sprintf(".tmp%d", os.Getpid())
	if err := writeLargeRun(tmp, z); err != nil {
		_ = os.RemoveAll(tmp)
		b.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		b.Fatal(err)
	}
	return dir
}

func writeLargeRun(dir string, z benchSize) error {
	benchSeconds, benchRequests, benchFormalEnd := float64(z.seconds), z.requests, z.formalEnd()
	devs := make([]record.Device, benchDevices)
	for d := range devs {
		devs[d] = record.Device{ID: fmt.Sprintf("gpu%d", d), Name: "bench", Method: "counter"}
	}
	w, err := archive.Create(dir, record.Meta{
		RunID:     "bench-large",
		Profile:   record.ProfileRef{Name: "benchmark-1.5"},
		Engine:    record.EngineInfo{Kind: "vllm", Model: "bench"},
		Hardware:  record.Hardware{Devices: devs},
		Telemetry: record.TelemetryInfo{Source: "nvml", IntervalS: 1.0 / benchHz},
		Status:    record.StatusComplete,
		StartedAt: benchT0 + 1, EndedAt: benchT0 + benchSeconds - 1,
		Stages: []record.Stage{
			{Name: "baseline", Start: benchT0 + 1, End: benchT0 + 20},
			{Name: "startup", Start: benchT0 + 20, End: benchFormalBeg},
			{Name: "formal", Start: benchFormalBeg, End: benchFormalEnd},
			{Name: "release", Start: benchFormalEnd, End: benchT0 + benchSeconds - 1},
		},
		Events: []record.Event{{Name: "engine_exited", T: benchFormalEnd + 5}},
	})
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(15, 15))
	energy := make([]float64, benchDevices)
	rows := make([]record.PowerSample, benchDevices)
	for i := range z.seconds * benchHz {
		t := benchT0 + float64(i)/benchHz + 0.0003*rng.Float64()
		busy := t > benchFormalBeg && t < benchFormalEnd
		for d := range rows {
			p := 80 + 10*rng.Float64()
			if busy {
				p = 550 + 100*rng.Float64()
			}
			energy[d] += p / benchHz
			rows[d] = record.PowerSample{T: t, Device: devs[d].ID, PowerW: p, EnergyJ: energy[d], HasEnergy: true, MemUsedBytes: 70e9 + int64(d)}
		}
		if err := w.AppendPower(rows...); err != nil {
			return err
		}
	}
	span := benchFormalEnd - benchFormalBeg - 15
	lastDone := 0.0
	for i := range benchRequests {
		sent := benchFormalBeg + span*float64(i)/float64(benchRequests) + 0.001*rng.Float64()
		first := sent + 0.05 + 0.3*rng.Float64()
		n := 180 + rng.IntN(41) // ~200 tokens, one per chunk
		r := record.Request{ID: fmt.Sprintf("f%06d", i), Phase: "formal", PromptID: fmt.Sprintf("p%05d", i%5000),
			SentAt: sent, FirstTokenAt: first, PromptTokens: 300 + rng.IntN(500), OutputTokens: n,
			TokensSource: "usage", OutputChars: 4 * n, OK: true, MaxTokens: 256}
		r.TokenTimes = make([]float64, n)
		t := first
		for k := range n {
			r.TokenTimes[k] = t
			t += 0.02 + 0.01*rng.Float64()
		}
		r.DoneAt = r.TokenTimes[n-1] + 0.0001
		lastDone = max(lastDone, r.DoneAt)
		if err := w.AppendRequest(r); err != nil {
			return err
		}
	}
	// The formal stage ends at its last response, as the requests step
	// ends it (archive: formalStageEndsAtItsLastResponse).
	if err := w.UpdateMeta(func(m *record.Meta) {
		m.Stages[2].End, m.Stages[3].Start = lastDone, lastDone
		m.Events[0].T = lastDone + 5
	}); err != nil {
		return err
	}
	return w.Close()
}

func BenchmarkAnalyzeLarge(b *testing.B) {
	n := benchRequests
	if v := os.Getenv("JOULEBENCH_BENCH_ANALYZE_REQUESTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("JOULEBENCH_BENCH_ANALYZE_REQUESTS=%q: want a positive number of requests", v)
		}
	}
	benchAnalyze(b, sizeOf(n))
}

func BenchmarkAnalyzeMillion(b *testing.B) { benchAnalyze(b, sizeOf(1_000_000)) }

// BenchmarkAnalyzeTenfold measures issue 46's "time linear" in one run
// on one machine: analyze of 100,000 requests, of 1,000,000, and of
// 100,000 again (the machine's load may change between them), reporting
// the million's CPU and wall time over the mean of the two 100,000 runs
// (the issue allows 12) and the million's peak RSS.
func BenchmarkAnalyzeTenfold(b *testing.B) {
	small, large := benchArchive(b, sizeOf(100_000)), benchArchive(b, sizeOf(1_000_000))
	bin := buildBench(b)
	var cpuRatio, wallRatio, rss float64
	for b.Loop() {
		s1 := runAnalyze(b, bin, small)
		l := runAnalyze(b, bin, large)
		s2 := runAnalyze(b, bin, small)
		cpuRatio += l.cpu / ((s1.cpu + s2.cpu) / 2)
		wallRatio += l.wall / ((s1.wall + s2.wall) / 2)
		rss = max(rss, l.rss)
	}
	b.ReportMetric(cpuRatio/float64(b.N), "cpu_ratio")
	b.ReportMetric(wallRatio/float64(b.N), "wall_ratio")
	b.ReportMetric(rss, "peak_rss_MB")
}

// buildBench builds the command for a benchmark that runs it.
func buildBench(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "joulebench")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// analyzeRun is what one analyze took: wall and CPU (user+sys) seconds,
// peak RSS (MiB) and its standard output.
type analyzeRun struct {
	wall, cpu, rss float64
	out            []byte
}

// runAnalyze runs bin's analyze of dir with benchmark-1.5, as JSON.
func runAnalyze(b *testing.B, bin, dir string) analyzeRun {
	cmd := exec.Command(bin, "analyze", dir, "--profile", "benchmark-1.5", "--format", "json", "--all")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	r := analyzeRun{wall: time.Since(t0).Seconds(), out: stdout.Bytes()}
	if err != nil && cmd.ProcessState == nil {
		b.Fatal(err)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 && code != exitChecks {
		b.Fatalf("analyze: exit %d: %s", code, stderr.Bytes())
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rss = float64(ru.Maxrss) / 1024 // kB on Linux
		r.cpu = float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	}
	return r
}

func benchAnalyze(b *testing.B, z benchSize) {
	dir := benchArchive(b, z)
	bin := buildBench(b)
	var wall, cpu, rss float64
	var out []byte
	for b.Loop() {
		r := runAnalyze(b, bin, dir)
		wall, cpu, rss, out = wall+r.wall, cpu+r.cpu, max(rss, r.rss), r.out
	}
	b.ReportMetric(wall/float64(b.N), "wall_s")
	b.ReportMetric(cpu/float64(b.N), "cpu_s")
	b.ReportMetric(rss, "peak_rss_MB")
	if f := os.Getenv("JOULEBENCH_BENCH_ANALYZE_OUT"); f != "" {
		if err := os.WriteFile(f, out, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
