package importer

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/measure"
)

// v41Run is a run directory of the real MLPerf Inference v4.1 result
// kept gzip-compressed in testdata (testdata/mlperf-v4.1/README.md).
func v41Run(model, scenario, run string) string {
	return filepath.Join("testdata", "mlperf-v4.1", "results", "H200-SXM-141GBx8_TRT_MaxQ", model, scenario, "performance", run)
}

// gunzipTo writes the decompressed content of the gzip file src to dst.
func gunzipTo(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, plain, 0o644); err != nil {
		t.Fatal(err)
	}
}

// importEnergy imports spl and detail and returns the formal stage's
// energy and the output tokens written.
func importEnergy(t *testing.T, spl, detail string) (float64, int, *record.Run) {
	t.Helper()
	q := Request{Format: "ptdaemon", File: spl, Loadgen: detail, Out: filepath.Join(t.TempDir(), "run"), Profile: "benchmark-1.0"}
	if _, err := Import(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	run, err := archive.LoadData(q.Out)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := run.Meta.StageByName("formal")
	pd, err := measure.NewPowerData(run.Power)
	if err != nil {
		t.Fatal(err)
	}
	e, err := pd.Energy(st.Start, st.End, "trapz")
	if err != nil {
		t.Fatal(err)
	}
	tokens := 0
	for _, r := range run.Requests {
		tokens += r.OutputTokens
	}
	return e, tokens, run
}

// The project's own MLPerf v4.1 data is imported as it is kept, gzipped
// (spl.txt.gz, mlperf_log_detail.txt.gz): the same energy, tokens, model
// and scenario as the same files decompressed first, and run.json
// records the .gz files as given (their sha256 is the compressed file's).
func TestImportGzipFiles(t *testing.T) {
	dir := v41Run("llama2-70b-99", "Offline", "run_1")
	gzSPL, gzDetail := filepath.Join(dir, "spl.txt.gz"), filepath.Join(dir, "mlperf_log_detail.txt.gz")
	// The plain copy keeps the results layout the model comes from.
	plainDir := filepath.Join(t.TempDir(), "results", "H200-SXM-141GBx8_TRT_MaxQ", "llama2-70b-99", "Offline", "performance", "run_1")
	gunzipTo(t, gzSPL, filepath.Join(plainDir, "spl.txt"))
	gunzipTo(t, gzDetail, filepath.Join(plainDir, "mlperf_log_detail.txt"))

	wantE, wantTokens, plain := importEnergy(t, filepath.Join(plainDir, "spl.txt"), filepath.Join(plainDir, "mlperf_log_detail.txt"))
	gotE, gotTokens, gz := importEnergy(t, gzSPL, gzDetail)
	if gotE != wantE || gotTokens != wantTokens || wantTokens == 0 {
		t.Errorf("gzipped: %v J, %d tokens; decompressed first: %v J, %d tokens", gotE, gotTokens, wantE, wantTokens)
	}
	if g, p := gz.Meta.Engine.Model, plain.Meta.Engine.Model; g != "llama2-70b-99" || g != p || gz.Meta.Labels["scenario"] != "Offline" {
		t.Errorf("gzipped: model %q scenario %q; want llama2-70b-99 Offline", g, gz.Meta.Labels["scenario"])
	}
	files := gz.Meta.Import.Files
	if len(files) != 2 || files[0].Path != gzSPL || files[1].Path != gzDetail {
		t.Errorf("recorded files %+v, want %s and %s", files, gzSPL, gzDetail)
	}
}

// A csv recording gzipped imports as the plain one (docs/import.md's
// example: 150 W × 6 s = 900 J).
func TestImportGzipCSV(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("ts,gpu,w\n")
	for ts := 1760875200; ts <= 1760875210; ts++ {
		csv.WriteString(fmtT(float64(ts)) + ",g0,100\n" + fmtT(float64(ts)) + ",g1,50\n")
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(csv.String()))
	zw.Close()
	path := filepath.Join(t.TempDir(), "power.csv.gz")
	if err := os.WriteFile(path, zb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	q := Request{Format: "csv", File: path, Map: "time=ts,device=gpu,watts=w", Begin: "1760875202", End: "1760875208",
		OutputTokens: 300, Out: filepath.Join(t.TempDir(), "run"), Domain: record.DomainGPU, Profile: "benchmark-1.0"}
	if _, err := Import(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	run, err := archive.LoadData(q.Out)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := measure.NewPowerData(run.Power)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := pd.Energy(1760875202, 1760875208, "trapz"); err != nil || e != 900 {
		t.Errorf("energy %v J (%v), want 150 W × 6 s = 900 J", e, err)
	}
}

// A gzip file that decompresses to more than MaxImportBytes (a zip bomb:
// 257 MiB of zeros in about 260 KiB) is refused, exit 2, naming the file
// and the bound, without holding what it decompresses to in memory; a
// corrupt gzip file is refused naming the file.
func TestImportGzipBounded(t *testing.T) {
	dir := t.TempDir()
	bomb := filepath.Join(dir, "spl.txt.gz")
	f, err := os.Create(bomb)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	zeros := make([]byte, 1<<20)
	for range MaxImportBytes>>20 + 1 {
		if _, err := zw.Write(zeros); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	corrupt := filepath.Join(dir, "corrupt.csv.gz")
	if err := os.WriteFile(corrupt, []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 'x', 'y', 'z'}, 0o644); err != nil {
		t.Fatal(err)
	}
	det := filepath.Join("testdata", "ptd", "mlperf_log_detail.txt")
	for _, c := range []struct {
		name string
		q    Request
		want string
	}{
		{"bomb", Request{Format: "ptdaemon", File: bomb, Loadgen: det}, "decompresses to more than 268435456 bytes"},
		{"corrupt", Request{Format: "csv", File: corrupt, Map: "time=ts,device=gpu,watts=w"}, "gzip"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.q.Out, c.q.Profile = filepath.Join(t.TempDir(), "run"), "benchmark-1.0"
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := Import(context.Background(), c.q)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.q.File) ||
				exitcode.Of(err) != int(exitcode.Invalid) {
				t.Fatalf("error %v, want exit 2 naming %s and %q", err, c.q.File, c.want)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
				t.Errorf("the import allocated %d MiB (limit 32 MiB): it holds what it decompresses", grew>>20)
			}
		})
	}
}
