package importer

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/boundedfile"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/profiles"
)

// Request is one import as the command line gives it: the format
// (ptdaemon, csv or prometheus), the power file, the run directory to
// create and each format's options. Errors name the flag they come from
// and carry their exit code (internal/exitcode): invalid input, or a
// failure to write.
type Request struct {
	Format, File, Out string
	// Loadgen is ptdaemon's mlperf_log_detail.txt; Map csv's column
	// mapping; Unit and DeviceLabel prometheus's.
	Loadgen, Map, Unit, DeviceLabel string
	// Begin and End are the measured window (both "" for the span every
	// device covers).
	Begin, End string
	// Domain is what the recorded power covers; DomainGiven says the user
	// named it (a PTDaemon log is always the node).
	Domain      string
	DomainGiven bool
	// OutputTokens, Profile (a built-in's name) and Software go to
	// WriteOptions. OutputTokens 0: the recording's own count (MLPerf's
	// loadgen token rate over the window), if any.
	OutputTokens int
	Profile      string
	Software     map[string]string
	// Model names the model (default: what the recording says).
	Model string
	// Ranging allows a power analyzer's range-finding pass (MLPerf's
	// ranging/ run), which is refused otherwise; the run is then marked
	// ranging (engine kind imported-ranging, label mlperf_run).
	Ranging bool
}

// MaxImportBytes caps each file an import reads (256 MiB: a PTDaemon log
// at 1 Hz holds about a month in it). A file over it, or a file that is
// not a regular file (a device, a FIFO, a directory), is refused before
// it is read.
const MaxImportBytes = 256 << 20

// Import reads the request's files and writes the run directory Out. It
// returns the recording written (its samples, failed readings and
// window).
func Import(ctx context.Context, q Request) (*Recording, error) {
	if q.Out == "" {
		return nil, exitcode.Invalidf("import: --out DIR is required (the run directory to create)")
	}
	if _, err := os.Stat(q.Out); err == nil {
		return nil, exitcode.Invalidf("import: run directory %s already exists; an import is a new directory", q.Out)
	}
	if q.OutputTokens < 0 || q.OutputTokens > MaxImportTokens {
		return nil, exitcode.Invalidf("import: --output-tokens must be 0 .. %d (%d requests of at most %d tokens, the format's cap per request), got %d",
			MaxImportTokens, MaxSyntheticRequests, archive.MaxOutputTokens, q.OutputTokens)
	}
	if q.Ranging && q.Format != "ptdaemon" {
		return nil, exitcode.Invalidf("import: --ranging is for ptdaemon (an MLPerf power run's ranging pass)")
	}
	begin, end, err := q.window()
	if err != nil {
		return nil, err
	}
	rec, err := q.read(ctx)
	if err != nil {
		return nil, err
	}
	if err := q.setRun(rec); err != nil {
		return nil, err
	}
	if err := q.setDomain(rec); err != nil {
		return nil, err
	}
	if end > begin {
		if q.Format == "ptdaemon" {
			return nil, exitcode.Invalidf("import ptdaemon: the window is the loadgen's power_begin..power_end; --begin/--end are for csv and prometheus")
		}
		rec.Begin, rec.End, rec.Window = begin, end, "--begin/--end"
	}
	if err := q.checkEvaluable(rec); err != nil {
		return nil, err
	}
	src, err := profiles.Read(q.Profile)
	if err != nil {
		return nil, exitcode.Invalidf("import: --profile %s: %v", q.Profile, err)
	}
	opt := WriteOptions{OutputTokens: rec.OutputTokens, TokensFrom: rec.TokensFrom, ProfileYAML: src,
		Profile: record.ProfileRef{Name: q.Profile, Source: "builtin"}, Software: q.Software}
	if err := writeChecked(ctx, q.Out, rec, opt); err != nil {
		return nil, err
	}
	return rec, nil
}

// setRun settles the run's token count, model and ranging mark: the
// user's --output-tokens and --model over the recording's own; a ranging
// pass refused unless asked for, and marked when it is.
func (q Request) setRun(rec *Recording) error {
	if q.OutputTokens > 0 {
		if rec.OutputTokens > 0 {
			rec.Notes = append(rec.Notes, fmt.Sprintf("--output-tokens %d overrides the %d output tokens %s", q.OutputTokens, rec.OutputTokens, rec.TokensFrom))
		}
		rec.OutputTokens, rec.TokensFrom = q.OutputTokens, "given with --output-tokens"
	}
	if q.Model != "" {
		rec.Model = q.Model
	}
	switch {
	case rec.Ranging && !q.Ranging:
		return exitcode.Invalidf("import ptdaemon: %s is a ranging run (%s): the power analyzer's range-finding pass, not the measured one (MLPerf's result is run_1/); give --ranging to import it anyway, marked ranging",
			q.File, rec.RangingWhy)
	case q.Ranging:
		rec.Ranging = true
		if rec.Labels == nil {
			rec.Labels = map[string]string{}
		}
		rec.Labels["mlperf_run"] = "ranging"
		why := cmp.Or(rec.RangingWhy, "--ranging given")
		rec.Notes = append(rec.Notes, "ranging run ("+why+"): the power analyzer's range-finding pass, imported with --ranging; MLPerf's result is the run_1 pass")
	}
	return nil
}

// writeChecked writes the run into a staging directory beside out, reads
// it back with the archive reader, and only then moves it to out: what an
// import writes, the reader accepts, and a run the reader would refuse
// is never left behind.
func writeChecked(ctx context.Context, out string, rec *Recording, opt WriteOptions) error {
	parent := filepath.Dir(filepath.Clean(out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("import: %w", err))
	}
	stage, err := os.MkdirTemp(parent, "."+filepath.Base(filepath.Clean(out))+".import-*")
	if err != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("import: %w", err))
	}
	defer os.RemoveAll(stage)
	dir := filepath.Join(stage, filepath.Base(filepath.Clean(out)))
	if err := Write(ctx, dir, rec, opt); err != nil {
		return ctxCode(ctx, exitcode.Failure, err)
	}
	if _, err := archive.LoadData(dir); err != nil {
		return exitcode.With(exitcode.Invalid, fmt.Errorf("import: the archive does not read back (nothing was written to %s): %w", out, err))
	}
	if _, err := os.Lstat(out); err == nil {
		return exitcode.Invalidf("import: run directory %s already exists; an import is a new directory", out)
	}
	if err := os.Rename(dir, out); err != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("import: %w", err))
	}
	return nil
}

// ctxCode gives err the exit code of an interrupted import when ctx is
// done, else code.
func ctxCode(ctx context.Context, code exitcode.Code, err error) error {
	if ctx.Err() != nil {
		return exitcode.With(exitcode.Interrupted, fmt.Errorf("import interrupted: %w", err))
	}
	return exitcode.With(code, err)
}

// ctxReader stops a read at the context's end: every loop over an
// import's file reads through it, so Ctrl-C or SIGTERM ends the import.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// BeyondSamples reports whether the window reaches beyond the samples
// every device has [lo, hi] (the power audit then excludes the run).
func (rec *Recording) BeyondSamples() (lo, hi float64, beyond bool) {
	lo, hi = rec.Covered()
	return lo, hi, rec.End > rec.Begin && (rec.Begin < lo || rec.End > hi)
}

// setDomain gives every imported device the domain its power covers:
// Domain for csv and prometheus; a PTDaemon log is the whole node.
func (q Request) setDomain(rec *Recording) error {
	dom := q.Domain
	if q.Format == "ptdaemon" {
		if q.DomainGiven && dom != record.DomainNode {
			return exitcode.Invalidf("import ptdaemon: --domain %s: a PTDaemon power analyzer measures the whole system at the wall (node)", dom)
		}
		dom = record.DomainNode
	}
	if !slices.Contains(record.Domains, dom) {
		return exitcode.Invalidf("import: --domain %q: want one of %s", dom, strings.Join(record.Domains, ", "))
	}
	for i := range rec.Devices {
		rec.Devices[i].Domain = dom
	}
	return nil
}

// open opens one of the user's files (a regular file of at most
// MaxImportBytes) and records it with its sha256 (the file's as given);
// the file is rewound for reading, and read decompressed when it is
// gzip (its content, too, at most MaxImportBytes).
func open(ctx context.Context, role, path string) (*inputFile, record.ImportFile, error) {
	fi := record.ImportFile{Role: role, Path: filepath.Clean(path)}
	f, err := boundedfile.Open(path, role+" file", MaxImportBytes)
	if err != nil {
		return nil, fi, exitcode.Invalidf("import: %v", err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		f.Close()
		return nil, fi, ctxCode(ctx, exitcode.Invalid, fmt.Errorf("import: %w", err))
	}
	if err := f.Rewind(); err != nil {
		f.Close()
		return nil, fi, exitcode.Invalidf("import: %v", err)
	}
	fi.SHA256 = hex.EncodeToString(h.Sum(nil))
	in, err := openContent(ctx, f, path, MaxImportBytes)
	if err != nil {
		f.Close()
		return nil, fi, ctxCode(ctx, exitcode.Invalid, fmt.Errorf("import: %s file: %w", role, err))
	}
	return in, fi, nil
}

// read reads the user's files by format and records them.
func (q Request) read(ctx context.Context) (*Recording, error) {
	if q.Format != "ptdaemon" && q.Format != "csv" && q.Format != "prometheus" {
		return nil, exitcode.Invalidf("import: unknown format %q (ptdaemon, csv or prometheus)", q.Format)
	}
	if q.Format == "ptdaemon" && q.Loadgen == "" {
		return nil, exitcode.Invalidf("import ptdaemon: --loadgen mlperf_log_detail.txt is required (the measured window is its power_begin..power_end)")
	}
	f, fi, err := open(ctx, "power", q.File)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	files := []record.ImportFile{fi}
	var rec *Recording
	switch q.Format {
	case "ptdaemon":
		g, gi, err := open(ctx, "loadgen", q.Loadgen)
		if err != nil {
			return nil, err
		}
		defer g.Close()
		files = append(files, gi)
		rec, err = ptd(ctx, ctxReader{ctx, f}, q.File, ctxReader{ctx, g}, q.Loadgen)
		if err != nil {
			return nil, ctxCode(ctx, exitcode.Invalid, err)
		}
	case "csv":
		m, err := ParseMapping(q.Map)
		if err != nil {
			return nil, exitcode.Invalidf("import csv: --map: %v", err)
		}
		if rec, err = CSV(ctxReader{ctx, f}, q.File, m); err != nil {
			return nil, ctxCode(ctx, exitcode.Invalid, err)
		}
	case "prometheus":
		rec, err = Prometheus(ctxReader{ctx, f}, q.File, PromOptions{Unit: q.Unit, DeviceLabel: q.DeviceLabel})
		if err != nil {
			return nil, ctxCode(ctx, exitcode.Invalid, err)
		}
	}
	rec.Files = files
	return rec, nil
}

// window reads Begin/End (both 0 when not given).
func (q Request) window() (begin, end float64, err error) {
	b, e := q.Begin, q.End
	if (b == "") != (e == "") {
		return 0, 0, exitcode.Invalidf("import: give both --begin and --end, or neither (the span every device covers)")
	}
	if b == "" {
		return 0, 0, nil
	}
	if begin, err = ParseTime(b); err != nil {
		return 0, 0, exitcode.Invalidf("import: --begin: %v", err)
	}
	if end, err = ParseTime(e); err != nil {
		return 0, 0, exitcode.Invalidf("import: --end: %v", err)
	}
	if !(end > begin) {
		return 0, 0, exitcode.Invalidf("import: --end %s is not after --begin %s", e, b)
	}
	return begin, end, nil
}
