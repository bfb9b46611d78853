package importer

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"
)

// t0 is 10-19-2025 12:00:00 UTC in Unix seconds (date -u -d '2025-10-19
// 12:00:00' +%s).
const t0 = 1760875200.0

func openFixture(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "ptd", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// importPTD imports the PTDaemon fixture into a new run directory and
// loads it back.
func importPTD(t *testing.T, tokens int) *record.Run {
	t.Helper()
	rec, err := PTD(openFixture(t, "spl.txt"), "spl.txt", openFixture(t, "mlperf_log_detail.txt"), "mlperf_log_detail.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ptd-run")
	if err := Write(context.Background(), dir, rec, WriteOptions{OutputTokens: tokens,
		Profile: record.ProfileRef{Name: "benchmark-1.0", Source: "builtin"}}); err != nil {
		t.Fatal(err)
	}
	run, err := archive.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// The fixture, 1 Hz from 12:00:00 to 12:00:15, W:
//
//	t  0    1    2    3    4    5   6    7  8    9    10   11  12   13…15
//	W  1000 1000 1000 1004 1000 996 1000 -1 1000 1004 1000 996 1000 1000
//
// power_begin 12:00:02.500, power_end 12:00:12.500 (10 s).
//
// MLPerf's average power: the readings > 0 strictly inside the window,
// t = 3,4,5,6,8,9,10,11,12 (t = 7 failed):
// (1004+1000+996+1000+1000+1004+1000+996+1000) / 9 = 9000 / 9 = 1000 W.
//
// Trapezoid over [2.5, 12.5], the ends interpolated (P(2.5) = 1002,
// P(12.5) = 1000), the failed sample a 2 s gap between t = 6 and 8:
//
//	[2.5,3] (1002+1004)/2·0.5 = 501.5   [3,4] 1002   [4,5] 998   [5,6] 998
//	[6,8]   (1000+1000)/2·2   = 2000    [8,9] 1002   [9,10] 1002 [10,11] 998
//	[11,12] 998                         [12,12.5] (1000+1000)/2·0.5 = 500
//
// sum 9999.5 J; average 9999.5 / 10 = 999.95 W, 0.005 % from 1000 W.
func TestImportPTDaemonMatchesMLPerf(t *testing.T) {
	run := importPTD(t, 5000)
	const (
		mlperfMeanW = 1000.0
		trapzJ      = 9999.5
	)
	st, ok := run.Meta.StageByName("formal")
	if !ok || st.Start != t0+2.5 || st.End != t0+12.5 {
		t.Fatalf("formal stage = %+v, want [%v, %v]", st, t0+2.5, t0+12.5)
	}
	if len(run.Power) != 15 {
		t.Errorf("%d samples, want 15 (16 readings, one failed)", len(run.Power))
	}
	pd, err := measure.NewPowerData(run.Power)
	if err != nil {
		t.Fatal(err)
	}
	e, err := pd.Energy(st.Start, st.End, "trapz")
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(e-trapzJ) > 1e-6 {
		t.Errorf("formal energy %v J, want the trapezoid %v J", e, trapzJ)
	}
	avg := e / (st.End - st.Start)
	if rel := math.Abs(avg-mlperfMeanW) / mlperfMeanW; rel > 0.001 {
		t.Errorf("average power %v W is %.4f %% from MLPerf's plain mean %v W (limit 0.1 %%)", avg, rel*100, mlperfMeanW)
	}
	imp := run.Meta.Import
	if imp == nil || imp.Format != "ptdaemon" || imp.FailedSamples != 1 || imp.OutputTokens != 5000 ||
		!strings.Contains(imp.Window, "power_begin/power_end") {
		t.Errorf("import record = %+v", imp)
	}
	if run.Meta.Labels["scenario"] != "Offline" || run.Meta.Status != record.StatusComplete {
		t.Errorf("labels %v, status %q", run.Meta.Labels, run.Meta.Status)
	}
	if len(run.Requests) != 1 || !run.Requests[0].Synthetic || run.Requests[0].OutputTokens != 5000 ||
		run.Requests[0].FirstTokenAt != st.Start || run.Requests[0].DoneAt != st.End {
		t.Errorf("requests = %+v, want one synthetic request over the window", run.Requests)
	}
	// 9999.5 J / 5000 tokens = 1.9999 J/token.
	if jpt := e / float64(run.Requests[0].OutputTokens); math.Abs(jpt-1.9999) > 1e-9 {
		t.Errorf("J/token %v, want 1.9999", jpt)
	}
}

// Without --output-tokens no request is written.
func TestImportWithoutTokensHasNoRequests(t *testing.T) {
	run := importPTD(t, 0)
	if len(run.Requests) != 0 || !strings.HasPrefix(run.Meta.Import.Requests, "none") {
		t.Errorf("requests %+v, import %+v", run.Requests, run.Meta.Import)
	}
}

func TestReadPTDErrors(t *testing.T) {
	const ok = "Time,10-19-2025 12:00:00.000,Watts,10,Volts,1\n"
	for _, c := range []struct{ name, in, want string }{
		{"bad time", ok + "Time,2025-10-19 12:00:01,Watts,10\n", "spl.txt:2: time \"2025-10-19 12:00:01\" is not MM-DD-YYYY"},
		{"not watts", ok + "Time,10-19-2025 12:00:01.000,Volts,10\n", "spl.txt:2: field 3 is \"Volts\""},
		{"bad number", ok + "Time,10-19-2025 12:00:01.000,Watts,1x\n", "spl.txt:2: watts \"1x\" is not a number"},
		{"short", "Time,10-19-2025 12:00:01.000\n", "spl.txt:1: expected"},
		{"only failed", "Time,10-19-2025 12:00:01.000,Watts,-1\n", "no valid"},
		{"time back", ok + "Time,10-19-2025 12:00:00.000,Watts,10\n", "spl.txt:2: time \"10-19-2025 12:00:00.000\" is not after the previous sample's (line 1)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ReadPTD(strings.NewReader(c.in), "spl.txt")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

func TestReadPTDSemicolonsAndNaN(t *testing.T) {
	in := "Time,10-19-2025 12:00:00.250;Watts;12.5;Volts;230\nTime,10-19-2025 12:00:01.250;Watts;nan;Volts;230\n"
	s, failed, err := ReadPTD(strings.NewReader(in), "spl.txt")
	if err != nil || len(s) != 1 || failed != 1 || s[0].T != t0+0.25 || s[0].PowerW != 12.5 {
		t.Errorf("samples %+v, failed %d, err %v", s, failed, err)
	}
}

func TestReadLoadgenWindowErrors(t *testing.T) {
	line := func(k, v string) string {
		return `:::MLLOG {"key": "` + k + `", "value": ` + v + `, "time_ms": 1}` + "\n"
	}
	for _, c := range []struct{ name, in, want string }{
		{"no begin", line("power_end", `"10-19-2025 12:00:02.000"`), "no power_begin"},
		{"no end", line("power_begin", `"10-19-2025 12:00:02.000"`), "no power_end"},
		{"reversed", line("power_begin", `"10-19-2025 12:00:02.000"`) + line("power_end", `"10-19-2025 12:00:01.000"`), "is not after power_begin"},
		{"bad json", ":::MLLOG {\"key\": \n", "detail.txt:1: invalid :::MLLOG JSON"},
		{"not a string", line("power_begin", "12"), "detail.txt:1: power_begin: value is not a string"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadLoadgenWindow(strings.NewReader(c.in), "detail.txt")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

// A loadgen window that misses the samples is refused.
func TestPTDWindowOutsideSamples(t *testing.T) {
	spl := "Time,10-19-2025 12:00:00.000,Watts,10\nTime,10-19-2025 12:00:01.000,Watts,10\n"
	det := `:::MLLOG {"key": "power_begin", "value": "10-19-2025 13:00:00.000"}` + "\n" +
		`:::MLLOG {"key": "power_end", "value": "10-19-2025 13:00:10.000"}` + "\n"
	_, err := PTD(strings.NewReader(spl), "spl.txt", strings.NewReader(det), "detail.txt")
	if err == nil || !strings.Contains(err.Error(), "no valid sample inside the loadgen window") {
		t.Errorf("error %v", err)
	}
}

// Write refuses an existing directory: nothing is overwritten.
func TestWriteRefusesExistingDir(t *testing.T) {
	rec := &Recording{Format: "csv", Samples: []record.PowerSample{{T: t0, Device: "d", PowerW: 1, MemUsedBytes: -1}, {T: t0 + 1, Device: "d", PowerW: 1, MemUsedBytes: -1}},
		Devices: []record.Device{{ID: "d", Method: "power"}}}
	dir := t.TempDir()
	if err := Write(context.Background(), dir, rec, WriteOptions{}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("error %v, want already exists", err)
	}
}

// Covered is the span every device has samples over: a from 1 to 5, b
// from 2 to 4 → [2, 4].
func TestCovered(t *testing.T) {
	rec := &Recording{Samples: []record.PowerSample{{T: 5, Device: "a"}, {T: 1, Device: "a"}, {T: 2, Device: "b"}, {T: 4, Device: "b"}}}
	if lo, hi := rec.Covered(); lo != 2 || hi != 4 {
		t.Errorf("covered [%v, %v], want [2, 4]", lo, hi)
	}
}

// A sample the archive cannot hold (a device name with a line break, as a
// quoted CSV cell may carry) fails the import; the directory stays, marked
// failed with the reason, never left "running".
func TestWriteFailureMarksRunFailed(t *testing.T) {
	rec := &Recording{Format: "csv", Samples: []record.PowerSample{{T: t0, Device: "a\nb", PowerW: 1, MemUsedBytes: -1}, {T: t0 + 1, Device: "a\nb", PowerW: 1, MemUsedBytes: -1}},
		Devices: []record.Device{{ID: "a\nb", Method: "power"}}}
	dir := filepath.Join(t.TempDir(), "run")
	err := Write(context.Background(), dir, rec, WriteOptions{})
	if err == nil || !strings.Contains(err.Error(), "line break") {
		t.Fatalf("error %v, want the line break named", err)
	}
	meta, rerr := archive.ReadMeta(filepath.Join(dir, archive.RunFile))
	if rerr != nil || meta.Status != record.StatusFailed || !strings.Contains(meta.Reason, "line break") {
		t.Errorf("run.json status %q reason %q (%v), want failed with the reason", meta.Status, meta.Reason, rerr)
	}
}
