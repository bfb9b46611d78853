package importer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/exitcode"
)

// importWithin runs Import and fails the test when it takes longer than
// limit (a read of /dev/zero would never end).
func importWithin(t *testing.T, ctx context.Context, q Request, limit time.Duration) (*Recording, error) {
	t.Helper()
	type result struct {
		rec *Recording
		err error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		rec, err := Import(ctx, q)
		done <- result{rec, err}
	}()
	select {
	case r := <-done:
		return r.rec, r.err
	case <-time.After(limit):
		t.Fatalf("import %s %s (loadgen %q) still running after %s", q.Format, q.File, q.Loadgen, limit)
		return nil, nil
	}
}

// Every file an import reads must be a regular file: /dev/zero, a FIFO
// or a directory, given as any format's file or as the loadgen log, is
// refused in under a second, naming the file and its kind, exit 2.
func TestImportRefusesNonRegularFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("devices and FIFOs are unix files")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "spl.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	spl, det := filepath.Join("testdata", "ptd", "spl.txt"), filepath.Join("testdata", "ptd", "mlperf_log_detail.txt")
	cases := []struct{ format, file, loadgen, kind string }{
		{"ptdaemon", "/dev/zero", det, "a character device"},
		{"ptdaemon", spl, "/dev/zero", "a character device"},
		{"ptdaemon", fifo, det, "a named pipe"},
		{"ptdaemon", spl, dir, "a directory"},
		{"csv", "/dev/zero", "", "a character device"},
		{"csv", fifo, "", "a named pipe"},
		{"prometheus", "/dev/zero", "", "a character device"},
		{"prometheus", "/dev/urandom", "", "a character device"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s %s %s", c.format, c.file, c.loadgen), func(t *testing.T) {
			q := Request{Format: c.format, File: c.file, Loadgen: c.loadgen, Map: "time=ts,watts=p", Out: filepath.Join(dir, fmt.Sprint("run", i)),
				Domain: record.DomainGPU, Profile: "benchmark-1.0"}
			start := time.Now()
			_, err := importWithin(t, context.Background(), q, 5*time.Second)
			if took := time.Since(start); took > time.Second {
				t.Errorf("refused after %s, want under a second", took)
			}
			if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), c.kind) ||
				exitcode.Of(err) != int(exitcode.Invalid) {
				t.Errorf("error %v (exit %d), want %q refused as not a regular file (exit 2)", err, exitcode.Of(err), c.kind)
			}
			if _, err := os.Stat(q.Out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("run directory written: %v", err)
			}
		})
	}
}

// A long import stops when its context ends (Ctrl-C, SIGTERM): the reads
// go through the context, and the import exits 130 without a run
// directory.
func TestImportCancelled(t *testing.T) {
	var b strings.Builder
	b.WriteString("ts,p\n")
	for i := range 200000 { // about 4 MB
		fmt.Fprintf(&b, "%d,%d\n", int(t0)+i, 100+i%7)
	}
	p := filepath.Join(t.TempDir(), "p.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := importWithin(t, ctx, Request{Format: "csv", File: p, Map: "time=ts,watts=p", Out: out, Domain: record.DomainGPU,
		Profile: "benchmark-1.0", OutputTokens: 10}, 5*time.Second)
	if err == nil || exitcode.Of(err) != int(exitcode.Interrupted) || !errors.Is(err, context.Canceled) {
		t.Errorf("error %v (exit %d), want interrupted (exit 130)", err, exitcode.Of(err))
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run directory written: %v", err)
	}
}

// --output-tokens above what an import holds (199 requests of at most
// 4,194,304 tokens = 834,666,496) is refused up front, exit 2, nothing
// written: 10^18 used to give an archive analyze refused, and 10^9 (239
// requests) one analyze could not evaluate.
func TestImportOutputTokensBound(t *testing.T) {
	for _, n := range []int{1_000_000_000_000_000_000, 1_000_000_000, MaxImportTokens + 1} {
		q := Request{Format: "csv", File: csvFile(t), Map: "time=ts,device=gpu,watts=power", Out: filepath.Join(t.TempDir(), "run"),
			Domain: record.DomainGPU, Profile: "benchmark-1.0", OutputTokens: n}
		_, err := Import(context.Background(), q)
		if err == nil || exitcode.Of(err) != int(exitcode.Invalid) || !strings.Contains(err.Error(), "--output-tokens must be 0 .. 834666496") {
			t.Errorf("%d tokens: %v (exit %d)", n, err, exitcode.Of(err))
		}
		if _, err := os.Stat(q.Out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%d tokens: run directory written: %v", n, err)
		}
	}
}

// Tokens above the format's cap per request (4,194,304) are split over
// the fewest synthetic requests that keep it: 10,000,000 tokens need
// ceil(10,000,000 / 4,194,304) = 3, carrying 3,333,334 + 3,333,333 +
// 3,333,333 (the first takes the remainder 1); the archive reads back.
func TestImportSplitsTokens(t *testing.T) {
	q := Request{Format: "csv", File: csvFile(t), Map: "time=ts,device=gpu,watts=power", Out: filepath.Join(t.TempDir(), "run"),
		Domain: record.DomainGPU, Profile: "benchmark-1.0", OutputTokens: 10_000_000}
	if _, err := Import(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	run, err := archive.LoadData(q.Out)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id     string
		tokens int
	}{{"imported-window-1", 3333334}, {"imported-window-2", 3333333}, {"imported-window-3", 3333333}}
	if len(run.Requests) != len(want) {
		t.Fatalf("%d requests, want 3", len(run.Requests))
	}
	for i, w := range want {
		r := run.Requests[i]
		if r.ID != w.id || r.OutputTokens != w.tokens || !r.Synthetic || r.TokensSource != "user" {
			t.Errorf("request %d = %+v, want %s with %d tokens", i, r, w.id, w.tokens)
		}
	}
	if !strings.Contains(run.Meta.Import.Requests, "synthetic: 3 requests") {
		t.Errorf("import.requests %q", run.Meta.Import.Requests)
	}
}

// What an import writes is read back with the archive reader before the
// run directory appears: a recording the reader refuses (here a device
// listed without a sample, which a complete run may not have) fails the
// import, exit 2, with the reader's reason, and leaves nothing behind:
// no run directory, no staging directory.
func TestWriteCheckedReadsBack(t *testing.T) {
	parent := t.TempDir()
	out := filepath.Join(parent, "run")
	rec := &Recording{Format: "csv", Samples: []record.PowerSample{{T: t0, Device: "a", PowerW: 1, MemUsedBytes: -1}, {T: t0 + 1, Device: "a", PowerW: 1, MemUsedBytes: -1}},
		Devices: []record.Device{{ID: "a", Method: "power"}, {ID: "b", Method: "power"}}}
	err := writeChecked(context.Background(), out, rec, WriteOptions{OutputTokens: 10})
	if err == nil || exitcode.Of(err) != int(exitcode.Invalid) || !strings.Contains(err.Error(), "does not read back") || !strings.Contains(err.Error(), `no sample of device "b"`) {
		t.Errorf("error %v (exit %d), want the reader's refusal (exit 2)", err, exitcode.Of(err))
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// Every import path writes what the reader accepts: ptdaemon, csv and
// prometheus, each read back with archive.LoadData, complete, with the
// tokens given.
func TestImportEveryPathReadsBack(t *testing.T) {
	tmp := t.TempDir()
	prom := filepath.Join(tmp, "q.json")
	if err := os.WriteFile(prom, []byte(promAnswer), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, q := range []Request{
		{Format: "ptdaemon", File: filepath.Join("testdata", "ptd", "spl.txt"), Loadgen: filepath.Join("testdata", "ptd", "mlperf_log_detail.txt")},
		{Format: "csv", File: csvFile(t), Map: "time=ts,device=gpu,watts=power", Domain: record.DomainGPU},
		{Format: "prometheus", File: prom, Domain: record.DomainGPU},
	} {
		q.Out, q.Profile, q.OutputTokens = filepath.Join(tmp, q.Format), "benchmark-1.0", 1000
		if _, err := Import(context.Background(), q); err != nil {
			t.Errorf("%s: %v", q.Format, err)
			continue
		}
		run, err := archive.LoadData(q.Out)
		if err != nil || run.Meta.Status != record.StatusComplete || len(run.Requests) != 1 || run.Requests[0].OutputTokens != 1000 {
			t.Errorf("%s: read back %v, %+v", q.Format, err, run)
		}
	}
}
