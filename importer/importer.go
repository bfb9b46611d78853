// Package importer turns power recordings made without joulebench into run
// archives (format v1) that analyze, report, compare and plot read like any
// other run: PTDaemon / MLPerf Power logs (the analyzer's samples and the
// loadgen's power_begin/power_end), a CSV with a column mapping, and a
// Prometheus query_range / range-vector JSON export.
//
// An imported run has one stage, formal, over the measured window. Where the
// recording has no per-request data, requests.jsonl holds one synthetic
// request over the window carrying the output tokens the user gives
// (Request.Synthetic): J/token then divides by that count, and the
// profiles leave synthetic requests out of every latency metric. run.json's
// import object records where every part came from.
package importer

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive"
)

// Recording is what a reader found in the user's files.
type Recording struct {
	// Format is "ptdaemon", "csv" or "prometheus".
	Format string
	// Samples are the readings, any order; failed readings are left out
	// (FailedSamples counts them).
	Samples []archive.PowerSample
	// Devices describe the devices of Samples, in order.
	Devices []archive.Device
	// Begin and End are the measured (formal) window in Unix seconds;
	// both 0: the span every device covers.
	Begin, End float64
	// Window says where Begin and End came from.
	Window        string
	Files         []archive.ImportFile
	FailedSamples int
	Notes         []string
	Labels        map[string]string
}

// WriteOptions complete the archive.
type WriteOptions struct {
	// OutputTokens is the number of output tokens generated in the window
	// (the user's figure); 0 writes no request, and J/token is then not
	// applicable.
	OutputTokens int
	// Profile names the profile the run is evaluated with by default, and
	// ProfileYAML is its source, kept as profile.yaml (its sha256 goes to
	// run.json).
	Profile     archive.ProfileRef
	ProfileYAML []byte
	// Software is recorded in run.json (joulebench's version).
	Software map[string]string
}

// SyntheticRequestID is the id of the synthetic request of an imported run.
const SyntheticRequestID = "imported-window"

// Write creates the run directory dir (it must not exist) from rec.
func Write(ctx context.Context, dir string, rec *Recording, opt WriteOptions) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(rec.Samples) == 0 {
		return errors.New("import: the recording has no valid power samples")
	}
	if opt.OutputTokens < 0 {
		return fmt.Errorf("import: output tokens must be ≥ 0, got %d", opt.OutputTokens)
	}
	samples := slices.Clone(rec.Samples)
	slices.SortStableFunc(samples, func(a, b archive.PowerSample) int { return cmp.Compare(a.T, b.T) })
	lo, hi := coveredSpan(samples)
	begin, end, window := rec.Begin, rec.End, rec.Window
	if begin == 0 && end == 0 {
		begin, end = lo, hi
		window = "the span every device covers (no window given)"
	}
	if !(end > begin) {
		return fmt.Errorf("import: the measured window [%s, %s] is empty; give a window inside the recording (%s to %s)",
			fmtT(begin), fmtT(end), fmtT(lo), fmtT(hi))
	}
	meta := buildMeta(filepath.Base(filepath.Clean(dir)), rec, opt, samples, begin, end, window)
	w, err := archive.Create(dir, meta)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer func() {
		if err != nil { // the directory stays, saying why it is incomplete
			_ = w.UpdateMeta(func(m *archive.Meta) { m.Status, m.Reason = archive.StatusFailed, err.Error() })
		}
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("import: %w", cerr)
		}
	}()
	if len(opt.ProfileYAML) > 0 {
		if err := os.WriteFile(filepath.Join(dir, ProfileFile), opt.ProfileYAML, 0o644); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	if err := w.AppendPower(samples...); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if opt.OutputTokens > 0 {
		r := archive.Request{ID: SyntheticRequestID, Phase: "formal", SentAt: begin, FirstTokenAt: begin, DoneAt: end,
			OutputTokens: opt.OutputTokens, TokensSource: "user", OK: true, Synthetic: true}
		if err := w.AppendRequest(r); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	return w.UpdateMeta(func(m *archive.Meta) { m.Status = archive.StatusComplete })
}

// ProfileFile is the archived profile's name in a run directory (as
// workflow.ProfileFile).
const ProfileFile = "profile.yaml"

func buildMeta(runID string, rec *Recording, opt WriteOptions, samples []archive.PowerSample, begin, end float64, window string) archive.Meta {
	prof := opt.Profile
	if len(opt.ProfileYAML) > 0 {
		sum := sha256.Sum256(opt.ProfileYAML)
		prof.SHA256 = hex.EncodeToString(sum[:])
	}
	requests := "none: no per-request data and no --output-tokens; J/token is not applicable"
	if opt.OutputTokens > 0 {
		requests = fmt.Sprintf("synthetic: one request %q over the formal window carrying the %d output tokens given with --output-tokens; no latency is measured",
			SyntheticRequestID, opt.OutputTokens)
	}
	interval := medianInterval(samples)
	first, last := samples[0].T, samples[len(samples)-1].T
	return archive.Meta{
		RunID:    runID,
		Profile:  prof,
		Engine:   archive.EngineInfo{Kind: "imported"},
		Hardware: archive.Hardware{Devices: slices.Clone(rec.Devices)},
		Software: opt.Software,
		Telemetry: archive.TelemetryInfo{Source: "import:" + rec.Format, IntervalS: interval,
			Note: fmt.Sprintf("imported %s recording (%d samples, median interval %s s): power measured outside joulebench",
				rec.Format, len(samples), strconv.FormatFloat(interval, 'g', 6, 64))},
		Status:    archive.StatusRunning,
		StartedAt: min(first, begin),
		EndedAt:   max(last, end),
		Stages:    []archive.Stage{{Name: "formal", Start: begin, End: end}},
		Events:    []archive.Event{},
		Labels:    rec.Labels,
		Import: &archive.ImportInfo{Format: rec.Format, Files: rec.Files, Window: window, Requests: requests,
			OutputTokens: opt.OutputTokens, FailedSamples: rec.FailedSamples, Notes: rec.Notes},
	}
}

// Covered is the time range every device of the recording has samples
// over.
func (rec *Recording) Covered() (lo, hi float64) {
	samples := slices.Clone(rec.Samples)
	slices.SortStableFunc(samples, func(a, b archive.PowerSample) int { return cmp.Compare(a.T, b.T) })
	return coveredSpan(samples)
}

// coveredSpan is the time range every device has samples over (samples in
// time order).
func coveredSpan(samples []archive.PowerSample) (lo, hi float64) {
	first, last := map[string]float64{}, map[string]float64{}
	for _, s := range samples {
		if _, ok := first[s.Device]; !ok {
			first[s.Device] = s.T
		}
		last[s.Device] = s.T
	}
	lo, hi = math.Inf(-1), math.Inf(1)
	for d, t := range first {
		lo, hi = max(lo, t), min(hi, last[d])
	}
	return lo, hi
}

// medianInterval is the median time between successive samples of a
// device, over all devices (samples in time order); 0 with fewer than two.
func medianInterval(samples []archive.PowerSample) float64 {
	prev := map[string]float64{}
	var d []float64
	for _, s := range samples {
		if p, ok := prev[s.Device]; ok && s.T > p {
			d = append(d, s.T-p)
		}
		prev[s.Device] = s.T
	}
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// hashReader returns the sha256 of the bytes read from r.
func hashReader(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// FileInfo reads path's sha256 for the import record.
func FileInfo(role, path string) (archive.ImportFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return archive.ImportFile{}, err
	}
	defer f.Close()
	sum, err := hashReader(f)
	if err != nil {
		return archive.ImportFile{}, fmt.Errorf("%s: %w", path, err)
	}
	return archive.ImportFile{Role: role, Path: path, SHA256: sum}, nil
}

// unixSeconds is t in Unix seconds, the fraction added to the whole
// seconds (exact for milliseconds, unlike UnixNano()/1e9).
func unixSeconds(t time.Time) float64 { return float64(t.Unix()) + float64(t.Nanosecond())/1e9 }

func fmtT(t float64) string { return strconv.FormatFloat(t, 'f', -1, 64) }

// ParseTime reads a time given on the command line or in a file: Unix
// seconds (a decimal number) or RFC 3339.
func ParseTime(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("time %q is not finite", s)
		}
		return v, nil
	}
	t, err := parseRFC3339(s)
	if err != nil {
		return 0, fmt.Errorf("time %q is neither Unix seconds nor RFC 3339 (2006-01-02T15:04:05Z)", s)
	}
	return t, nil
}
