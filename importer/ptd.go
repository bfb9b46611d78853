package importer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive"
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
func ReadPTD(r io.Reader, name string) (samples []archive.PowerSample, failed int, err error) {
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
			return nil, 0, fmt.Errorf("%s:%d: expected \"Time,MM-DD-YYYY HH:MM:SS.fff,Watts,VALUE,...\", got %q", name, line, clip(text))
		}
		t, err := parsePTDTime(f[1])
		if err != nil {
			return nil, 0, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if n := len(samples); n > 0 && t <= samples[n-1].T {
			return nil, 0, fmt.Errorf("%s:%d: time %q is not after the previous sample's (line %d)", name, line, strings.TrimSpace(f[1]), prevLine)
		}
		if !strings.EqualFold(strings.TrimSpace(f[2]), "Watts") {
			return nil, 0, fmt.Errorf("%s:%d: field 3 is %q, want \"Watts\" (a single-channel PTDaemon log)", name, line, f[2])
		}
		w, perr := strconv.ParseFloat(strings.TrimSpace(f[3]), 64)
		switch {
		case perr != nil && !strings.EqualFold(strings.TrimSpace(f[3]), "nan"):
			return nil, 0, fmt.Errorf("%s:%d: watts %q is not a number", name, line, f[3])
		case perr != nil || math.IsNaN(w) || math.IsInf(w, 0) || w <= 0:
			failed++
			continue
		}
		samples = append(samples, archive.PowerSample{T: t, Device: PTDDevice, PowerW: w, MemUsedBytes: -1})
		prevLine = line
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if len(samples) == 0 {
		return nil, failed, fmt.Errorf("%s: no valid \"Time,...,Watts,...\" sample lines (%d failed readings)", name, failed)
	}
	return samples, failed, nil
}

func parsePTDTime(s string) (float64, error) {
	t, err := time.Parse(ptdLayout, strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("time %q is not MM-DD-YYYY HH:MM:SS.fff", s)
	}
	return unixSeconds(t), nil
}

// mllog is one ":::MLLOG {...}" line of the loadgen's mlperf_log_detail.txt.
type mllog struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// LoadgenWindow holds what the loadgen's detail log says about the run.
type LoadgenWindow struct {
	Begin, End float64
	// Scenario is effective_scenario when logged.
	Scenario string
}

// ReadLoadgenWindow reads power_begin and power_end from the loadgen's
// mlperf_log_detail.txt (":::MLLOG" JSON lines; the first of each counts,
// as in MLPerf's checker).
func ReadLoadgenWindow(r io.Reader, name string) (LoadgenWindow, error) {
	var w LoadgenWindow
	var haveBegin, haveEnd bool
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		_, rest, ok := strings.Cut(sc.Text(), ":::MLLOG")
		if !ok {
			continue
		}
		var m mllog
		if err := json.Unmarshal([]byte(rest), &m); err != nil {
			return w, fmt.Errorf("%s:%d: invalid :::MLLOG JSON: %w", name, line, err)
		}
		var dst *float64
		switch strings.ToLower(m.Key) {
		case "power_begin":
			if haveBegin {
				continue
			}
			dst, haveBegin = &w.Begin, true
		case "power_end":
			if haveEnd {
				continue
			}
			dst, haveEnd = &w.End, true
		case "effective_scenario":
			_ = json.Unmarshal(m.Value, &w.Scenario)
			continue
		default:
			continue
		}
		var s string
		if err := json.Unmarshal(m.Value, &s); err != nil {
			return w, fmt.Errorf("%s:%d: %s: value is not a string: %w", name, line, m.Key, err)
		}
		t, err := parsePTDTime(s)
		if err != nil {
			return w, fmt.Errorf("%s:%d: %s: %w", name, line, m.Key, err)
		}
		*dst = t
	}
	if err := sc.Err(); err != nil {
		return w, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	switch {
	case !haveBegin:
		return w, fmt.Errorf("%s: no power_begin (:::MLLOG {\"key\": \"power_begin\", ...}): is this the loadgen's mlperf_log_detail.txt of a power run?", name)
	case !haveEnd:
		return w, fmt.Errorf("%s: no power_end (:::MLLOG {\"key\": \"power_end\", ...})", name)
	case !(w.End > w.Begin):
		return w, fmt.Errorf("%s: power_end %s is not after power_begin %s", name, fmtT(w.End), fmtT(w.Begin))
	}
	return w, nil
}

// PTD builds a recording from a PTDaemon sample log and the loadgen's
// detail log (their readers and file records given by the caller).
func PTD(spl io.Reader, splName string, detail io.Reader, detailName string) (*Recording, error) {
	samples, failed, err := ReadPTD(spl, splName)
	if err != nil {
		return nil, err
	}
	win, err := ReadLoadgenWindow(detail, detailName)
	if err != nil {
		return nil, err
	}
	rec := &Recording{
		Format:  "ptdaemon",
		Samples: samples,
		Devices: []archive.Device{{ID: PTDDevice, Name: "PTDaemon power analyzer: whole system (AC at the wall)", Method: "power",
			PowerField: "ptdaemon:Watts"}},
		Begin: win.Begin, End: win.End,
		Window:        "loadgen power_begin/power_end (" + detailName + ")",
		FailedSamples: failed,
		Notes: []string{"times of both logs read as UTC (they carry no zone; MLPerf's checker compares them as they are)",
			"readings <= 0 or NaN (PTDaemon's -1: a failed sample) are left out: each is a gap in power.csv"},
	}
	inside := 0
	for _, s := range samples {
		if s.T > win.Begin && s.T < win.End {
			inside++
		}
	}
	if inside == 0 {
		return nil, fmt.Errorf("%s: no valid sample inside the loadgen window (%s, %s) of %s: are they logs of the same run?",
			splName, fmtT(win.Begin), fmtT(win.End), detailName)
	}
	if win.Scenario != "" {
		rec.Labels = map[string]string{"scenario": win.Scenario}
	}
	return rec, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
