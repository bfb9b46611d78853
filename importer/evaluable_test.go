package importer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/profiles"
)

// A second power_begin (or power_end) makes the window ambiguous: refused,
// naming both lines (MLPerf's checker silently takes the first).
func TestReadLoadgenSecondWindowKey(t *testing.T) {
	line := func(k, v string) string {
		return `:::MLLOG {"key": "` + k + `", "value": "` + v + `", "time_ms": 1}` + "\n"
	}
	for _, c := range []struct{ name, in, want string }{
		{"two power_begin", line("power_begin", "10-19-2025 12:00:02.000") + line("power_begin", "10-19-2025 12:00:05.000") +
			line("power_end", "10-19-2025 12:00:09.000"), "detail.txt:2: a second power_begin (the first is at line 1)"},
		{"two power_end", line("power_begin", "10-19-2025 12:00:02.000") + line("power_end", "10-19-2025 12:00:05.000") +
			line("power_end", "10-19-2025 12:00:09.000"), "detail.txt:3: a second power_end (the first is at line 2)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadLoadgenWindow(strings.NewReader(c.in), "detail.txt")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

// An output token count no system generates in the window is refused:
// the csv recording spans t0 .. t0+4 s; 4·10^8 tokens over 4 s is 10^8
// tokens/s, the bound, accepted; 4·10^8 + 4 is just above it, refused
// (exit 2), nothing written.
func TestImportTokenRateBound(t *testing.T) {
	for _, c := range []struct {
		tokens int
		ok     bool
	}{{400_000_000, true}, {400_000_004, false}} {
		q := Request{Format: "csv", File: csvFile(t), Map: "time=ts,device=gpu,watts=power", Out: filepath.Join(t.TempDir(), "run"),
			Domain: record.DomainGPU, Profile: "benchmark-1.0", OutputTokens: c.tokens}
		_, err := Import(context.Background(), q)
		switch {
		case c.ok && err != nil:
			t.Errorf("%d tokens: %v", c.tokens, err)
		case !c.ok && (err == nil || exitcode.Of(err) != int(exitcode.Invalid) || !strings.Contains(err.Error(), "above 1e+08 tokens/s")):
			t.Errorf("%d tokens: %v (exit %d), want refused above 1e+08 tokens/s (exit 2)", c.tokens, err, exitcode.Of(err))
		case !c.ok:
			if _, err := os.Stat(q.Out); err == nil {
				t.Errorf("%d tokens: a refused import wrote %s", c.tokens, q.Out)
			}
		}
	}
}

// The synthetic requests of an import never reach what a built-in
// profile's steady state needs (window × min_windows): 200 of them, all
// over the window with the same J/token, made a steady state whose span
// held no token, and analyze failed (exit 4).
func TestMaxSyntheticRequestsBelowSteadyState(t *testing.T) {
	if MaxImportTokens != 834_666_496 { // 199 × 4,194,304
		t.Errorf("MaxImportTokens %d", MaxImportTokens)
	}
	for _, name := range profiles.Names() {
		src, err := profiles.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Parameters map[string]struct {
				Default any `yaml:"default"`
			} `yaml:"parameters"`
		}
		if err := yaml.Unmarshal(src, &p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w, okW := p.Parameters["window"].Default.(int)
		m, okM := p.Parameters["min_windows"].Default.(int)
		if !okW || !okM {
			continue // no steady state
		}
		if MaxSyntheticRequests >= w*m {
			t.Errorf("profile %s: steady state from %d × %d = %d requests, but an import writes up to %d synthetic ones", name, w, m, w*m, MaxSyntheticRequests)
		}
	}
}

// The loadgen's result_validity goes to the recording and run.json's
// import record; an INVALID result is said in the import's summary.
func TestImportMLPerfValidity(t *testing.T) {
	dir := t.TempDir()
	src := mlperfRun("Server", "run_1")
	spl, err := os.ReadFile(filepath.Join(src, "spl.txt"))
	if err != nil {
		t.Fatal(err)
	}
	det, err := os.ReadFile(filepath.Join(src, "mlperf_log_detail.txt"))
	if err != nil {
		t.Fatal(err)
	}
	invalid := strings.Replace(string(det), `"value": "VALID"`, `"value": "INVALID"`, 1)
	if invalid == string(det) {
		t.Fatal("no result_validity VALID in the fixture")
	}
	for _, c := range []struct{ validity, detail string }{{"VALID", string(det)}, {"INVALID", invalid}} {
		run := filepath.Join(dir, c.validity)
		if err := os.MkdirAll(run, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(run, "spl.txt"), spl, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(run, "mlperf_log_detail.txt"), []byte(c.detail), 0o644); err != nil {
			t.Fatal(err)
		}
		q := Request{Format: "ptdaemon", File: filepath.Join(run, "spl.txt"), Loadgen: filepath.Join(run, "mlperf_log_detail.txt"),
			Out: filepath.Join(run, "out"), Profile: "benchmark-1.0"}
		rec, err := Import(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		data, err := archive.LoadData(q.Out)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Validity != c.validity || data.Meta.Import.Validity != c.validity {
			t.Errorf("validity %q, run.json import.validity %q; want %q", rec.Validity, data.Meta.Import.Validity, c.validity)
		}
		says := strings.Contains(q.Summary(rec), "MLPerf result_validity INVALID ("+q.Loadgen+")")
		if says != (c.validity == "INVALID") {
			t.Errorf("%s: summary says INVALID: %v\n%s", c.validity, says, q.Summary(rec))
		}
	}
}
