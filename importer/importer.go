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
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

// Recording is what a reader found in the user's files.
type Recording struct {
	// Format is "ptdaemon", "csv" or "prometheus".
	Format string
	// Samples are the readings, any order; failed readings are left out
	// (FailedSamples counts them).
	Samples []record.PowerSample
	// Devices describe the devices of Samples, in order.
	Devices []record.Device
	// Begin and End are the measured (formal) window in Unix seconds;
	// both 0: the span every device covers.
	Begin, End float64
	// Window says where Begin and End came from.
	Window        string
	Files         []record.ImportFile
	FailedSamples int
	Notes         []string
	Labels        map[string]string
	// Model is the model the recording ran ("" when unknown).
	Model string
	// OutputTokens is the output token count the recording's own logs
	// give (MLPerf's loadgen: its token rate over the window); 0: none.
	// TokensFrom says how it was worked out.
	OutputTokens int
	TokensFrom   string
	// Ranging marks a power analyzer's range-finding pass (MLPerf's
	// ranging/ run), imported only when asked for; RangingWhy says how
	// the logs show it.
	Ranging    bool
	RangingWhy string
	// Validity is an MLPerf result's validity as the loadgen logged it
	// (result_validity: VALID or INVALID; "" when not logged), and
	// ValidityWhy the file that says so. It goes to run.json's import
	// record; a result other than VALID is said by import, analyze and
	// report.
	Validity, ValidityWhy string
}

// WriteOptions complete the archive.
type WriteOptions struct {
	// OutputTokens is the number of output tokens generated in the window
	// (the user's figure, else the recording's own); 0 writes no request,
	// and J/token is then not applicable. Above MaxOutputTokensPerRequest
	// it is split over several synthetic requests (MaxImportTokens at
	// most).
	OutputTokens int
	// TokensFrom says where OutputTokens came from (for run.json).
	TokensFrom string
	// Profile names the profile the run is evaluated with by default, and
	// ProfileYAML is its source, kept as profile.yaml (its sha256 goes to
	// run.json).
	Profile     record.ProfileRef
	ProfileYAML []byte
	// Software is recorded in run.json (joulebench's version).
	Software map[string]string
	// Parameters are archived in run.json: analyze evaluates the run
	// with them.
	Parameters map[string]any
}

// SyntheticRequestID is the id of the synthetic request of an imported
// run; when the tokens are split over several, they are
// SyntheticRequestID-1, -2, ….
const SyntheticRequestID = "imported-window"

// MaxSyntheticRequests bounds the synthetic requests of an import, and
// with the format's cap on one request's output tokens
// (archive.MaxOutputTokens, 4,194,304) the output tokens of an import:
// MaxImportTokens, 834,666,496 (70 minutes at 200,000 tokens/s, an
// MLPerf run of 10 minutes at 1.4 million). It is one below the
// requests the built-in profiles' steady state needs (window 100 ×
// min_windows 2): 200 synthetic requests, all over the same window with
// the same J/token, made a "steady state" whose span holds no token, and
// analyze failed (exit 4).
const (
	MaxSyntheticRequests = 199
	MaxImportTokens      = MaxSyntheticRequests * archive.MaxOutputTokens
)

// EngineKind is the engine kind of an imported run; EngineKindRanging
// that of an imported ranging pass, so that every title and table says so.
const (
	EngineKind        = "imported"
	EngineKindRanging = "imported-ranging"
)

// syntheticRequests spreads n output tokens over the fewest synthetic
// requests over [begin, end] that keep each within
// archive.MaxOutputTokens, as evenly as whole tokens allow (the first
// ones take one more).
func syntheticRequests(n int, begin, end float64) []record.Request {
	return archive.SyntheticRequests(n, begin, end, SyntheticRequestID, "user")
}

// Write creates the run directory dir (it must not exist) from rec.
func Write(ctx context.Context, dir string, rec *Recording, opt WriteOptions) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(rec.Samples) == 0 {
		return errors.New("import: the recording has no valid power samples")
	}
	if opt.OutputTokens < 0 || opt.OutputTokens > MaxImportTokens {
		return fmt.Errorf("import: output tokens must be 0 .. %d, got %d", MaxImportTokens, opt.OutputTokens)
	}
	samples := slices.Clone(rec.Samples)
	slices.SortStableFunc(samples, func(a, b record.PowerSample) int { return cmp.Compare(a.T, b.T) })
	lo, hi := coveredSpan(samples)
	begin, end, window := rec.Begin, rec.End, rec.Window
	if begin == 0 && end == 0 {
		begin, end = lo, hi
		window = "the span every device covers (no window given)"
	}
	if !(end > begin) {
		return fmt.Errorf("import: the measured window [%s, %s] is empty; give a window inside the recording (%s to %s)",
			fmtTime(begin), fmtTime(end), fmtTime(lo), fmtTime(hi))
	}
	for _, t := range []float64{begin, end} {
		if err := checkTime(t); err != nil {
			return fmt.Errorf("import: the measured window: %w", err)
		}
	}
	meta := buildMeta(filepath.Base(filepath.Clean(dir)), rec, opt, samples, begin, end, window)
	w, err := archive.Create(dir, meta)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer func() {
		if err != nil { // the directory stays, saying why it is incomplete
			_ = w.UpdateMeta(func(m *record.Meta) { m.Status, m.Reason = record.StatusFailed, err.Error() })
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
	for _, r := range syntheticRequests(opt.OutputTokens, begin, end) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := w.AppendRequest(r); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	return w.UpdateMeta(func(m *record.Meta) { m.Status = record.StatusComplete })
}

// ProfileFile is the archived profile's name in a run directory (as
// workflow.ProfileFile).
const ProfileFile = "profile.yaml"

func buildMeta(runID string, rec *Recording, opt WriteOptions, samples []record.PowerSample, begin, end float64, window string) record.Meta {
	prof := opt.Profile
	if len(opt.ProfileYAML) > 0 {
		sum := sha256.Sum256(opt.ProfileYAML)
		prof.SHA256 = hex.EncodeToString(sum[:])
	}
	requests := "none: no per-request data and no output token count; J/token is not applicable"
	from := cmp.Or(opt.TokensFrom, "given with --output-tokens")
	if n := len(syntheticRequests(opt.OutputTokens, 0, 0)); n == 1 {
		requests = fmt.Sprintf("synthetic: one request %q over the formal window carrying the %d output tokens %s; no latency is measured",
			SyntheticRequestID, opt.OutputTokens, from)
	} else if n > 1 {
		requests = fmt.Sprintf("synthetic: %d requests %q-1 .. -%d over the formal window carrying the %d output tokens %s, split so that none carries more than %d (the format's cap per request); no latency is measured",
			n, SyntheticRequestID, n, opt.OutputTokens, from, archive.MaxOutputTokens)
	}
	kind := EngineKind
	if rec.Ranging {
		kind = EngineKindRanging
	}
	interval := medianInterval(samples)
	first, last := samples[0].T, samples[len(samples)-1].T
	return record.Meta{
		RunID:    runID,
		Profile:  prof,
		Engine:   record.EngineInfo{Kind: kind, Model: rec.Model},
		Hardware: record.Hardware{Devices: slices.Clone(rec.Devices)},
		Software: opt.Software,
		Telemetry: record.TelemetryInfo{Source: "import:" + rec.Format, IntervalS: interval,
			Note: fmt.Sprintf("imported %s recording (%d samples, median interval %s s): power measured outside joulebench",
				rec.Format, len(samples), strconv.FormatFloat(interval, 'g', 6, 64))},
		Status:     record.StatusRunning,
		StartedAt:  min(first, begin),
		EndedAt:    max(last, end),
		Stages:     []record.Stage{{Name: "formal", Start: begin, End: end}},
		Events:     []record.Event{},
		Labels:     rec.Labels,
		Parameters: opt.Parameters,
		Import: &record.ImportInfo{Format: rec.Format, Files: rec.Files, Window: window, Requests: requests,
			OutputTokens: opt.OutputTokens, FailedSamples: rec.FailedSamples, Notes: rec.Notes, Validity: rec.Validity},
	}
}

// Covered is the time range every device of the recording has samples
// over.
func (rec *Recording) Covered() (lo, hi float64) {
	samples := slices.Clone(rec.Samples)
	slices.SortStableFunc(samples, func(a, b record.PowerSample) int { return cmp.Compare(a.T, b.T) })
	return coveredSpan(samples)
}

// coveredSpan is the time range every device has samples over (samples in
// time order).
func coveredSpan(samples []record.PowerSample) (lo, hi float64) {
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
func medianInterval(samples []record.PowerSample) float64 {
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

// unixSeconds is t in Unix seconds, the fraction added to the whole
// seconds (exact for milliseconds, unlike UnixNano()/1e9).
func unixSeconds(t time.Time) float64 { return float64(t.Unix()) + float64(t.Nanosecond())/1e9 }

// fmtT writes a number (a time in Unix seconds where a file holds one,
// an energy) in plain decimals.
func fmtT(t float64) string { return strconv.FormatFloat(t, 'f', -1, 64) }

// fmtTime writes a time for a message: ISO 8601 (RFC 3339) in UTC, with
// its zone, to the millisecond where it has a fraction.
func fmtTime(t float64) string {
	if math.IsNaN(t) || math.IsInf(t, 0) {
		return fmtT(t)
	}
	sec := math.Floor(t)
	return time.Unix(int64(sec), int64(math.Round((t-sec)*1e9))).UTC().Format("2006-01-02T15:04:05.999Z07:00")
}

// Times an import accepts, in Unix seconds: 2000-01-01T00:00:00Z to
// 2100-01-01T00:00:00Z. A recording's times are absolute; a time before
// 2000 is almost always a relative column (seconds since the start) or
// the wrong unit, and would be read as a run in 1970.
const (
	MinTime = 946684800
	MaxTime = 4102444800
)

// MaxPowerW bounds a reading an import accepts: 100 kW, far above any
// device or node a recording here measures (an 8-GPU node draws about
// 10 kW); a reading above it is a unit error (mW, µW) or a corrupt value.
const MaxPowerW = 100e3

// checkTime says why t is not a time an import accepts.
func checkTime(t float64) error {
	switch {
	case math.IsNaN(t) || math.IsInf(t, 0):
		return fmt.Errorf("time %v is not finite", t)
	case t < MinTime || t >= MaxTime:
		return fmt.Errorf("time %s (%s) is outside %s .. %s: times must be absolute (Unix seconds or RFC 3339), not seconds since the start",
			fmtT(t), fmtTime(t), fmtTime(MinTime), fmtTime(MaxTime))
	}
	return nil
}

// checkPower says why w (watts) is not a reading an import accepts.
func checkPower(w float64) error {
	switch {
	case math.IsNaN(w) || math.IsInf(w, 0):
		return fmt.Errorf("power %v W is not finite", w)
	case w < 0:
		return fmt.Errorf("negative power %s W", fmtT(w))
	case w > MaxPowerW:
		return fmt.Errorf("power %s W is above %g W, the most an import accepts (a unit error: mW or µW?)", fmtT(w), float64(MaxPowerW))
	}
	return nil
}

// ParseTime reads a time given on the command line or in a file: Unix
// seconds (a decimal number) or RFC 3339.
func ParseTime(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return v, checkTime(v)
	}
	t, err := parseRFC3339(s)
	if err != nil {
		return 0, fmt.Errorf("time %q is neither Unix seconds nor RFC 3339 (2006-01-02T15:04:05Z)", s)
	}
	return t, checkTime(t)
}
