package importer

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// ptdLayout is the time stamp of PTDaemon's samples and of the loadgen's
// power_begin/power_end (MLPerf's checkers parse both with
// "%m-%d-%Y %H:%M:%S.%f"). They carry no zone: both files are read as UTC,
// as MLPerf's submission checker does (it applies no offset to either), so
// the window and the samples stay on one clock.
const ptdLayout = "01-02-2006 15:04:05.999999999"

// PTDDevice is the device id of an imported PTDaemon recording: the power
// analyzer measures the whole system at the wall (AC).
const PTDDevice = "node0"

// ReadPTD reads a PTDaemon sample log (MLPerf's spl.txt): lines
//
//	Time,10-19-2025 12:00:03.000,Watts,1004.000000,Volts,230.1,Amps,4.36,PF,0.99,Mark,run_1
//
// (fields split at commas or semicolons). Lines that do not begin with
// "Time" (PTDaemon's messages) are skipped, as MLPerf's checker does. A
// reading ≤ 0 or not a number (PTDaemon writes -1 for a failed sample) is
// a failed sample: it is not written to power.csv, so it is a gap in the
// samples, and it is counted. MLPerf's average power is the plain mean of
// the readings > 0 strictly inside (power_begin, power_end).
//
// Errors name name:line and what was expected.
func ReadPTD(r io.Reader, name string) (samples []record.PowerSample, failed int, err error) {
	l, err := readPTD(r, name)
	return l.samples, l.failed, err
}

// ptdLog is what readPTD found: the samples, the failed readings, and the
// first line whose Mark says ranging (0: none) with that Mark.
type ptdLog struct {
	samples     []record.PowerSample
	failed      int
	rangingLine int
	rangingMark string
}

func readPTD(r io.Reader, name string) (ptdLog, error) {
	var l ptdLog
	var samples []record.PowerSample
	failed := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	line, prevLine := 0, 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(text, "Time") {
			continue
		}
		f := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ';' })
		if len(f) < 4 || f[0] != "Time" {
			return l, fmt.Errorf("%s:%d: expected \"Time,MM-DD-YYYY HH:MM:SS.fff,Watts,VALUE,...\", got %q", name, line, clip(text))
		}
		t, err := parsePTDTime(f[1])
		if err != nil {
			return l, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if n := len(samples); n > 0 && t <= samples[n-1].T {
			return l, fmt.Errorf("%s:%d: time %q is not after the previous sample's (line %d)", name, line, strings.TrimSpace(f[1]), prevLine)
		}
		if !strings.EqualFold(strings.TrimSpace(f[2]), "Watts") {
			return l, fmt.Errorf("%s:%d: field 3 is %q, want \"Watts\" (a single-channel PTDaemon log)", name, line, f[2])
		}
		if mark, ok := rangingMark(f); ok && l.rangingLine == 0 {
			l.rangingLine, l.rangingMark = line, mark
		}
		w, perr := strconv.ParseFloat(strings.TrimSpace(f[3]), 64)
		switch {
		case perr != nil && !strings.EqualFold(strings.TrimSpace(f[3]), "nan"):
			return l, fmt.Errorf("%s:%d: watts %q is not a number", name, line, f[3])
		case perr != nil || math.IsNaN(w) || w <= 0:
			failed++
			continue
		}
		if err := checkPower(w); err != nil {
			return l, fmt.Errorf("%s:%d: watts: %w", name, line, err)
		}
		samples = append(samples, record.PowerSample{T: t, Device: PTDDevice, PowerW: w, MemUsedBytes: -1})
		prevLine = line
	}
	l.samples, l.failed = samples, failed
	if err := sc.Err(); err != nil {
		return l, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if len(samples) == 0 {
		return l, fmt.Errorf("%s: no valid \"Time,...,Watts,...\" sample lines (%d failed readings)", name, failed)
	}
	return l, nil
}

// rangingMark returns a sample line's Mark (the value after "Mark") and
// whether it marks the power analyzer's range-finding pass: "ranging",
// or SESSION_ranging as MLPerf's power client writes it
// ("2024-07-17_01-39-59_ranging"; the measured pass is
// SESSION_testing).
func rangingMark(f []string) (string, bool) {
	for i := 4; i+1 < len(f); i++ {
		if strings.EqualFold(strings.TrimSpace(f[i]), "Mark") {
			mark := strings.TrimSpace(f[i+1])
			m := strings.ToLower(mark)
			return mark, m == "ranging" || strings.HasSuffix(m, "_ranging")
		}
	}
	return "", false
}

func parsePTDTime(s string) (float64, error) {
	t, err := time.Parse(ptdLayout, strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("time %q is not MM-DD-YYYY HH:MM:SS.fff", s)
	}
	return unixSeconds(t), checkTime(unixSeconds(t))
}

// mllog is one ":::MLLOG {...}" line of the loadgen's mlperf_log_detail.txt.
type mllog struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// LoadgenLog holds what the loadgen's detail log says about the run.
type LoadgenLog struct {
	// Begin and End are power_begin and power_end (Unix seconds).
	Begin, End float64
	// Scenario is effective_scenario, RequestedScenario
	// requested_scenario, TestMode effective_test_mode, Validity
	// result_validity and SUTName sut_name, when logged.
	Scenario, RequestedScenario, TestMode, Validity, SUTName string
	// Model is the model when the log names it (a "model",
	// "requested_model" or "effective_model" key; the loadgen itself
	// logs none).
	Model string
	// TokenRate is the scenario's output token rate (tokens/s) as the
	// loadgen reports it, TokenKey its key and TokenLine its line; 0
	// when the log has none (not an LLM benchmark, or an older loadgen).
	TokenRate float64
	TokenKey  string
	TokenLine int
}

// tokenRateKeys are, per scenario, the loadgen's output token rate keys
// in the order they are used, as MLPerf's submission checker reads the
// result of an LLM benchmark: Offline result_tokens_per_second (the
// tokens of every sample over the time to the last completion), Server
// (and Interactive) result_completed_tokens_per_second (over the time to
// the last completion); the "inferred" keys are GPT-J's in v4.1.
var tokenRateKeys = map[string][]string{
	"offline":     {"result_tokens_per_second", "result_inferred_tokens_per_second"},
	"server":      {"result_completed_tokens_per_second", "result_inferred_completed_tokens_per_second"},
	"interactive": {"result_completed_tokens_per_second", "result_inferred_completed_tokens_per_second"},
}

// maxTokenRate bounds a loadgen token rate (tokens/s): 10^8, far above
// any system's.
const maxTokenRate = 1e8

// ReadLoadgen reads the loadgen's mlperf_log_detail.txt (":::MLLOG" JSON
// lines; the first line of each key counts, as in MLPerf's checker):
// power_begin and power_end, the scenario, test mode, validity and the
// scenario's token rate. A second power_begin or power_end is an error
// naming both lines: which window was measured is then unclear.
func ReadLoadgen(ctx context.Context, r io.Reader, name string) (LoadgenLog, error) {
	var w LoadgenLog
	seen := map[string]bool{}
	windowLine := map[string]int{} // power_begin's and power_end's lines
	rates := map[string]struct {
		v    float64
		line int
	}{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		if line%4096 == 0 && ctx.Err() != nil {
			return w, ctx.Err()
		}
		_, rest, ok := strings.Cut(sc.Text(), ":::MLLOG")
		if !ok {
			continue
		}
		var m mllog
		if err := json.Unmarshal([]byte(rest), &m); err != nil {
			return w, fmt.Errorf("%s:%d: invalid :::MLLOG JSON: %w", name, line, err)
		}
		key := strings.ToLower(m.Key)
		if prev := windowLine[key]; prev > 0 {
			return w, fmt.Errorf("%s:%d: a second %s (the first is at line %d): the window is ambiguous (MLPerf's checker takes the first; is this two runs' logs in one file?)", name, line, m.Key, prev)
		}
		if seen[key] {
			continue
		}
		switch key {
		case "power_begin", "power_end":
			t, err := loadgenTime(m.Value)
			if err != nil {
				return w, fmt.Errorf("%s:%d: %s: %w", name, line, m.Key, err)
			}
			windowLine[key] = line
			if key == "power_begin" {
				w.Begin = t
			} else {
				w.End = t
			}
		case "effective_scenario", "requested_scenario", "effective_test_mode", "result_validity", "sut_name",
			"model", "requested_model", "effective_model":
			var v string
			if err := json.Unmarshal(m.Value, &v); err != nil {
				return w, fmt.Errorf("%s:%d: %s: value is not a string: %w", name, line, m.Key, err)
			}
			*map[string]*string{"effective_scenario": &w.Scenario, "requested_scenario": &w.RequestedScenario,
				"effective_test_mode": &w.TestMode, "result_validity": &w.Validity, "sut_name": &w.SUTName,
				"model": &w.Model, "requested_model": &w.Model, "effective_model": &w.Model}[key] = strings.TrimSpace(v)
		case "result_tokens_per_second", "result_inferred_tokens_per_second",
			"result_completed_tokens_per_second", "result_inferred_completed_tokens_per_second":
			var v float64
			if err := json.Unmarshal(m.Value, &v); err != nil {
				return w, fmt.Errorf("%s:%d: %s: value is not a number: %w", name, line, m.Key, err)
			}
			if !(v > 0 && v <= maxTokenRate) {
				return w, fmt.Errorf("%s:%d: %s: %v tokens/s is not a rate a run can have (0 < rate ≤ %g)", name, line, m.Key, v, maxTokenRate)
			}
			rates[key] = struct {
				v    float64
				line int
			}{v, line}
		default:
			continue
		}
		seen[key] = true
	}
	if err := sc.Err(); err != nil {
		return w, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	switch {
	case !seen["power_begin"]:
		return w, fmt.Errorf("%s: no power_begin (:::MLLOG {\"key\": \"power_begin\", ...}): is this the loadgen's mlperf_log_detail.txt of a power run?", name)
	case !seen["power_end"]:
		return w, fmt.Errorf("%s: no power_end (:::MLLOG {\"key\": \"power_end\", ...})", name)
	case !(w.End > w.Begin):
		return w, fmt.Errorf("%s: power_end %s is not after power_begin %s", name, fmtTime(w.End), fmtTime(w.Begin))
	}
	for _, k := range tokenRateKeys[strings.ToLower(w.Scenario)] {
		if r, ok := rates[k]; ok {
			w.TokenRate, w.TokenKey, w.TokenLine = r.v, k, r.line
			break
		}
	}
	return w, nil
}

// loadgenTime reads power_begin/power_end's value (a string in
// PTDaemon's layout).
func loadgenTime(raw json.RawMessage) (float64, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("value is not a string: %w", err)
	}
	return parsePTDTime(s)
}

// ReadLoadgenWindow reads the loadgen's detail log (ReadLoadgen without
// a context).
func ReadLoadgenWindow(r io.Reader, name string) (LoadgenLog, error) {
	return ReadLoadgen(context.Background(), r, name)
}

// Tokens is the output token count over the power window: the token rate
// times power_end - power_begin, rounded to whole tokens, and how it was
// worked out; 0 when the log has no token rate.
func (w LoadgenLog) Tokens(name string) (int, string, error) {
	if w.TokenRate == 0 {
		return 0, "", nil
	}
	span := w.End - w.Begin
	n := math.Round(w.TokenRate * span)
	from := fmt.Sprintf("worked out from the loadgen: %s %s tokens/s (%s:%d) × the power window %s s (power_begin %s .. power_end %s)",
		w.TokenKey, strconv.FormatFloat(w.TokenRate, 'g', -1, 64), name, w.TokenLine, strconv.FormatFloat(span, 'f', -1, 64),
		fmtTime(w.Begin), fmtTime(w.End))
	if n < 1 || n > MaxImportTokens {
		return 0, "", fmt.Errorf("%s:%d: %s × the power window gives %.0f output tokens, outside 1 .. %d", name, w.TokenLine, w.TokenKey, n, MaxImportTokens)
	}
	return int(n), from, nil
}

// PTD builds a recording from a PTDaemon sample log and the loadgen's
// detail log (their readers and file records given by the caller).
func PTD(spl io.Reader, splName string, detail io.Reader, detailName string) (*Recording, error) {
	return ptd(context.Background(), spl, splName, detail, detailName)
}

func ptd(ctx context.Context, spl io.Reader, splName string, detail io.Reader, detailName string) (*Recording, error) {
	pl, err := readPTD(spl, splName)
	if err != nil {
		return nil, err
	}
	win, err := ReadLoadgen(ctx, detail, detailName)
	if err != nil {
		return nil, err
	}
	if win.TestMode != "" && !strings.EqualFold(win.TestMode, "PerformanceOnly") {
		return nil, fmt.Errorf("%s: effective_test_mode is %q: a power run is a PerformanceOnly run (run_1/ or ranging/ of a power submission)", detailName, win.TestMode)
	}
	rec := &Recording{
		Format:  "ptdaemon",
		Samples: pl.samples,
		Devices: []record.Device{{ID: PTDDevice, Name: "PTDaemon power analyzer: whole system (AC at the wall)", Method: "power",
			PowerField: "ptdaemon:Watts"}},
		Begin: win.Begin, End: win.End,
		Window:        "loadgen power_begin/power_end (" + detailName + ")",
		FailedSamples: pl.failed,
		Notes: []string{"times of both logs read as UTC (they carry no zone; MLPerf's checker compares them as they are)",
			"readings <= 0 or NaN (PTDaemon's -1: a failed sample) are left out: each is a gap in power.csv"},
		Model:       cmp.Or(win.Model, modelFromPath(detailName, win.Scenario)),
		Validity:    win.Validity,
		ValidityWhy: detailName,
	}
	inside := 0
	for _, s := range pl.samples {
		if s.T > win.Begin && s.T < win.End {
			inside++
		}
	}
	if inside == 0 {
		return nil, fmt.Errorf("%s: no valid sample inside the loadgen window (%s, %s) of %s: are they logs of the same run?",
			splName, fmtTime(win.Begin), fmtTime(win.End), detailName)
	}
	rec.Labels = map[string]string{}
	for k, v := range map[string]string{"scenario": win.Scenario, "mlperf_result_validity": win.Validity, "mlperf_sut_name": win.SUTName} {
		if v != "" {
			rec.Labels[k] = v
		}
	}
	if len(rec.Labels) == 0 {
		rec.Labels = nil
	}
	if rec.OutputTokens, rec.TokensFrom, err = win.Tokens(detailName); err != nil {
		return nil, err
	}
	switch {
	case pl.rangingLine > 0:
		rec.Ranging, rec.RangingWhy = true, fmt.Sprintf("%s:%d: Mark %q", splName, pl.rangingLine, pl.rangingMark)
	case inDir(splName, "ranging") || inDir(detailName, "ranging"):
		rec.Ranging, rec.RangingWhy = true, "the logs are in a directory named ranging"
	}
	return rec, nil
}

// inDir reports whether path's file lies in a directory named dir (a
// relative path, such as spl.txt given from within ranging/, is resolved
// against the working directory).
func inDir(path, dir string) bool {
	return filepath.Base(filepath.Dir(absPath(path))) == dir
}

// absPath is path made absolute, or path cleaned when the working
// directory cannot be found: the directories above a file named relative
// to the working directory (spl.txt run from run_1/) are part of an
// MLPerf submission's layout.
func absPath(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return filepath.Clean(path)
}

// modelFromPath is the benchmark (model) an MLPerf submission's layout
// names: results/SYSTEM/MODEL/SCENARIO/performance/(run_1|ranging)/
// mlperf_log_detail.txt, the scenario directory matching the log's;
// "" otherwise.
func modelFromPath(detail, scenario string) string {
	d := filepath.Dir(absPath(detail))
	perf := filepath.Dir(d)
	scen := filepath.Dir(perf)
	model := filepath.Base(filepath.Dir(scen))
	if filepath.Base(perf) != "performance" || scenario == "" || !strings.EqualFold(filepath.Base(scen), scenario) ||
		model == "." || model == string(filepath.Separator) {
		return ""
	}
	return model
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
