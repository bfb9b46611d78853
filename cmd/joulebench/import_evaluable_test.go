package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
)

// editFile rewrites path with edit applied to its text.
func editFile(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := edit(string(b))
	if s == string(b) {
		t.Fatalf("%s: the edit changed nothing", path)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An import either refuses what analyze could not evaluate (exit 2, naming
// what and where) or writes a run that analyze evaluates in full (exit 0,
// not exit 4): edited copies of a real MLPerf v4.1 power result
// (llama2-70b-99 Offline run_1) and a CSV recording.
func TestImportRefusesWhatAnalyzeCannotEvaluate(t *testing.T) {
	fresh := func(t *testing.T) string {
		return unpackMLPerfRun(t, t.TempDir(), "llama2-70b-99", "Offline", "run_1")
	}
	importPTD := func(t *testing.T, run string, extra ...string) (string, string, string, int) {
		out := filepath.Join(t.TempDir(), "run")
		args := append([]string{"import", "ptdaemon", filepath.Join(run, "spl.txt"), "--loadgen", filepath.Join(run, "mlperf_log_detail.txt"), "--out", out}, extra...)
		stdout, stderr, code := runCLI(t, args...)
		return out, stdout, stderr, code
	}
	refused := func(t *testing.T, out, stderr string, code int, want ...string) {
		t.Helper()
		if code != exitInvalid {
			t.Fatalf("import: exit %d, want %d (refused)\n%s", code, exitInvalid, stderr)
		}
		for _, w := range want {
			if !strings.Contains(stderr, w) {
				t.Errorf("import's message does not say %q:\n%s", w, stderr)
			}
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("a refused import left %s", out)
		}
	}
	evaluated := func(t *testing.T, out string) {
		t.Helper()
		for _, args := range [][]string{{"analyze", out}, {"analyze", out, "--format", "json"}, {"report", out}} {
			stdout, stderr, code := runCLI(t, args...)
			if code != exitOK {
				t.Errorf("%v: exit %d, want %d (every figure evaluated)\n%.2000s\n%.2000s", args, code, exitOK, stdout, stderr)
			}
		}
	}

	// (a) power_end an hour later than the loadgen logged it: the window
	// reaches an hour beyond the analyzer's samples.
	t.Run("window beyond the samples", func(t *testing.T) {
		run := fresh(t)
		detail := filepath.Join(run, "mlperf_log_detail.txt")
		editFile(t, detail, func(s string) string {
			re := regexp.MustCompile(`("key": "power_end", "value": "\d\d-\d\d-\d{4} )(\d\d)`)
			return re.ReplaceAllStringFunc(s, func(m string) string {
				sub := re.FindStringSubmatch(m)
				h, _ := strconv.Atoi(sub[2])
				return sub[1] + strconv.Itoa(h+1)
			})
		})
		out, _, stderr, code := importPTD(t, run)
		refused(t, out, stderr, code, "beyond the samples", "mlperf_log_detail.txt")
	})
	t.Run("csv window beyond the samples", func(t *testing.T) {
		dir := t.TempDir()
		csv := filepath.Join(dir, "p.csv")
		writeFile(t, csv, "ts,w\n1760875200,100\n1760875201,100\n1760875202,100\n1760875203,100\n1760875204,100\n")
		out := filepath.Join(dir, "run")
		_, stderr, code := runCLI(t, "import", "csv", csv, "--map", "time=ts,watts=w", "--begin", "1760875201", "--end", "1760878804",
			"--output-tokens", "300", "--out", out)
		refused(t, out, stderr, code, "beyond the samples", "--begin/--end")
	})

	// (b) --output-tokens large but under the old cap (1.7·10^10): 10^9
	// tokens made 239 synthetic requests, enough for a steady state of
	// 2 windows of 100 with an empty span (analyze exit 4). Refused now;
	// the most an import takes (199 requests of 4,194,304 tokens:
	// 834,666,496 tokens over the run's ~10 min window, ~1.4·10^6
	// tokens/s) is evaluated in full.
	t.Run("output tokens", func(t *testing.T) {
		run := fresh(t)
		out, _, stderr, code := importPTD(t, run, "--output-tokens", "1000000000")
		refused(t, out, stderr, code, "--output-tokens", "834666496")
		out, stdout, stderr, code := importPTD(t, run, "--output-tokens", "834666496")
		if code != exitOK {
			t.Fatalf("import: exit %d\n%s\n%s", code, stdout, stderr)
		}
		data, err := archive.LoadData(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(data.Requests) != 199 {
			t.Errorf("%d synthetic requests, want 199 (834666496 / 4194304)", len(data.Requests))
		}
		evaluated(t, out)
	})
	// A count no system generates in the window: 10^8 tokens over a 2 s
	// CSV window is 5·10^7 tokens/s, accepted; 10^9 over 2 s (5·10^8
	// tokens/s, above the 10^8 tokens/s bound) is refused.
	t.Run("token rate", func(t *testing.T) {
		dir := t.TempDir()
		csv := filepath.Join(dir, "p.csv")
		writeFile(t, csv, "ts,w\n1760875200,100\n1760875201,100\n1760875202,100\n")
		out := filepath.Join(dir, "run")
		_, stderr, code := runCLI(t, "import", "csv", csv, "--map", "time=ts,watts=w", "--output-tokens", "800000000", "--out", out)
		refused(t, out, stderr, code, "tokens/s", "--output-tokens")
		stdout, stderr, code := runCLI(t, "import", "csv", csv, "--map", "time=ts,watts=w", "--output-tokens", "100000000", "--out", out)
		if code != exitOK {
			t.Fatalf("import: exit %d\n%s\n%s", code, stdout, stderr)
		}
		evaluated(t, out)
	})

	// (c) An INVALID MLPerf result is imported, and says so: on import's
	// stdout, in run.json's import record, in analyze and report.
	t.Run("invalid result", func(t *testing.T) {
		run := fresh(t)
		editFile(t, filepath.Join(run, "mlperf_log_detail.txt"), func(s string) string {
			return strings.Replace(s, `"key": "result_validity", "value": "VALID"`, `"key": "result_validity", "value": "INVALID"`, 1)
		})
		out, stdout, stderr, code := importPTD(t, run)
		if code != exitOK || !strings.Contains(stdout, "INVALID") {
			t.Fatalf("import: exit %d, want 0 and the result's validity INVALID on stdout\n%s\n%s", code, stdout, stderr)
		}
		data, err := archive.LoadData(out)
		if err != nil {
			t.Fatal(err)
		}
		if data.Meta.Import == nil || data.Meta.Import.Validity != "INVALID" {
			t.Errorf("run.json import record %+v, want validity INVALID", data.Meta.Import)
		}
		for _, args := range [][]string{{"analyze", out}, {"analyze", out, "--format", "json"}, {"report", out}} {
			stdout, stderr, code := runCLI(t, args...)
			if code != exitOK || !strings.Contains(stdout, "INVALID") {
				t.Errorf("%v: exit %d, want 0 and the result's validity INVALID\n%.3000s\n%s", args, code, stdout, stderr)
			}
		}
		// A VALID result says nothing of the kind.
		out, _, _, code = importPTD(t, fresh(t))
		if code != exitOK {
			t.Fatalf("import of the VALID run: exit %d", code)
		}
		if stdout, _, _ := runCLI(t, "analyze", out); strings.Contains(stdout, "INVALID") {
			t.Errorf("analyze of a VALID result says INVALID:\n%s", stdout)
		}
	})

	// (d) Two power_begin lines: refused, naming both lines.
	t.Run("two power_begin", func(t *testing.T) {
		run := fresh(t)
		detail := filepath.Join(run, "mlperf_log_detail.txt")
		var first int
		editFile(t, detail, func(s string) string {
			lines := strings.SplitAfter(s, "\n")
			for i, l := range lines {
				if strings.Contains(l, `"key": "power_begin"`) {
					first = i + 1
					return strings.Join(lines[:i+1], "") + l + strings.Join(lines[i+1:], "")
				}
			}
			return s
		})
		out, _, stderr, code := importPTD(t, run)
		refused(t, out, stderr, code, "power_begin", "mlperf_log_detail.txt:"+strconv.Itoa(first+1), "line "+strconv.Itoa(first))
	})
}
