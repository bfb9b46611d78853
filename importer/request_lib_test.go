package importer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/exitcode"
)

// csvFile writes a CSV recording of two devices at t0 .. t0+4 s, 100 W and
// 200 W, and returns its path.
func csvFile(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("ts,gpu,power\n")
	for i := range 5 {
		for _, d := range []string{"a,100", "b,200"} {
			dev, w, _ := strings.Cut(d, ",")
			b.WriteString(strings.Join([]string{fmtT(t0 + float64(i)), dev, w}, ",") + "\n")
		}
	}
	p := filepath.Join(t.TempDir(), "p.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestImportRequest(t *testing.T) {
	file := csvFile(t)
	ok := func() Request {
		return Request{Format: "csv", File: file, Out: filepath.Join(t.TempDir(), "run"), Map: "time=ts,device=gpu,watts=power",
			Domain: record.DomainGPU, Profile: "benchmark-1.0", OutputTokens: 100}
	}
	exists := t.TempDir()
	for _, tc := range []struct {
		name string
		edit func(*Request)
		want string
		code exitcode.Code
	}{
		{"no out", func(q *Request) { q.Out = "" }, "--out DIR is required", exitcode.Invalid},
		{"out exists", func(q *Request) { q.Out = exists }, "already exists", exitcode.Invalid},
		{"negative tokens", func(q *Request) { q.OutputTokens = -1 }, "--output-tokens must be 0 .. 834666496 (199 requests of at most 4194304 tokens, the format's cap per request), got -1", exitcode.Invalid},
		{"begin alone", func(q *Request) { q.Begin = "1760875201" }, "give both --begin and --end", exitcode.Invalid},
		{"bad begin", func(q *Request) { q.Begin, q.End = "x", "1760875202" }, "--begin:", exitcode.Invalid},
		{"bad end", func(q *Request) { q.Begin, q.End = "1760875201", "y" }, "--end:", exitcode.Invalid},
		{"end before begin", func(q *Request) { q.Begin, q.End = "1760875202", "1760875201" }, "--end 1760875201 is not after --begin 1760875202", exitcode.Invalid},
		{"relative begin", func(q *Request) { q.Begin, q.End = "0", "19" }, "--begin: time 0 (1970-01-01T00:00:00Z) is outside", exitcode.Invalid},
		{"no file", func(q *Request) { q.File = filepath.Join(exists, "none.csv") }, "import: ", exitcode.Invalid},
		{"unknown format", func(q *Request) { q.Format = "xml" }, `unknown format "xml"`, exitcode.Invalid},
		{"bad map", func(q *Request) { q.Map = "nonsense" }, "import csv: --map:", exitcode.Invalid},
		{"bad domain", func(q *Request) { q.Domain = "gpux" }, `--domain "gpux": want one of`, exitcode.Invalid},
		{"ptdaemon without loadgen", func(q *Request) { q.Format = "ptdaemon" }, "--loadgen mlperf_log_detail.txt is required", exitcode.Invalid},
		{"bad profile", func(q *Request) { q.Profile = "nope" }, "import: --profile nope:", exitcode.Invalid},
	} {
		q := ok()
		tc.edit(&q)
		_, err := Import(context.Background(), q)
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitcode.Of(err) != int(tc.code) {
			t.Errorf("%s: %v (exit %d), want %q (exit %d)", tc.name, err, exitcode.Of(err), tc.want, tc.code)
		}
	}
	// A window of 1 .. 6 s after t0 reaches past the last sample (4 s):
	// analyze could integrate no power there, so the import refuses it.
	q := ok()
	q.Begin, q.End = fmtT(t0+1), fmtT(t0+6)
	_, err := Import(context.Background(), q)
	if want := "the window [2025-10-19T12:00:01Z, 2025-10-19T12:00:06Z] (--begin/--end) reaches beyond the samples every device has [2025-10-19T12:00:00Z, 2025-10-19T12:00:04Z] in " + file; err == nil ||
		exitcode.Of(err) != int(exitcode.Invalid) || !strings.Contains(err.Error(), want) {
		t.Errorf("window beyond the samples: %v (exit %d), want %q (exit 2)", err, exitcode.Of(err), want)
	}
	if _, err := os.Stat(q.Out); err == nil {
		t.Errorf("a refused import wrote %s", q.Out)
	}
	q = ok()
	q.Begin, q.End, q.Domain = fmtT(t0+1), fmtT(t0+4), record.DomainNode
	if _, err := Import(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	run, err := archive.LoadData(q.Out)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Meta.Hardware.Devices) != 2 || run.Meta.Hardware.Devices[0].Domain != record.DomainNode || run.Meta.Profile.Name != "benchmark-1.0" {
		t.Errorf("written run: devices %+v, profile %+v", run.Meta.Hardware.Devices, run.Meta.Profile)
	}
}

// A PTDaemon log is the whole node: another --domain is refused, as are
// --begin/--end (the loadgen's window is the window).
func TestImportPTDaemonDomainAndWindow(t *testing.T) {
	q := Request{Format: "ptdaemon", File: filepath.Join("testdata", "ptd", "spl.txt"), Loadgen: filepath.Join("testdata", "ptd", "mlperf_log_detail.txt"),
		Out: filepath.Join(t.TempDir(), "run"), Domain: record.DomainGPU, DomainGiven: true, Profile: "benchmark-1.0"}
	if _, err := Import(context.Background(), q); err == nil || !strings.Contains(err.Error(), "measures the whole system at the wall") {
		t.Errorf("ptdaemon --domain gpu: %v", err)
	}
	q.DomainGiven = false
	q.Begin, q.End = "1760875201", "1760875202"
	if _, err := Import(context.Background(), q); err == nil || !strings.Contains(err.Error(), "--begin/--end are for csv and prometheus") {
		t.Errorf("ptdaemon --begin/--end: %v", err)
	}
	q.Begin, q.End = "", ""
	if _, err := Import(context.Background(), q); err != nil {
		t.Errorf("ptdaemon: %v", err)
	}
}
