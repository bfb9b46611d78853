package importer

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/archive"
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
	// WriteOptions.
	OutputTokens int
	Profile      string
	Software     map[string]string
}

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
	if q.OutputTokens < 0 {
		return nil, exitcode.Invalidf("import: --output-tokens must be ≥ 0, got %d", q.OutputTokens)
	}
	begin, end, err := q.window()
	if err != nil {
		return nil, err
	}
	rec, err := q.read()
	if err != nil {
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
	src, err := profiles.Read(q.Profile)
	if err != nil {
		return nil, exitcode.Invalidf("import: --profile %s: %v", q.Profile, err)
	}
	opt := WriteOptions{OutputTokens: q.OutputTokens, ProfileYAML: src,
		Profile: archive.ProfileRef{Name: q.Profile, Source: "builtin"}, Software: q.Software}
	if err := Write(ctx, q.Out, rec, opt); err != nil {
		return nil, exitcode.With(exitcode.Failure, err)
	}
	return rec, nil
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
		if q.DomainGiven && dom != archive.DomainNode {
			return exitcode.Invalidf("import ptdaemon: --domain %s: a PTDaemon power analyzer measures the whole system at the wall (node)", dom)
		}
		dom = archive.DomainNode
	}
	if !slices.Contains(archive.Domains, dom) {
		return exitcode.Invalidf("import: --domain %q: want one of %s", dom, strings.Join(archive.Domains, ", "))
	}
	for i := range rec.Devices {
		rec.Devices[i].Domain = dom
	}
	return nil
}

// open opens one of the user's files and records it.
func open(role, path string) (*os.File, archive.ImportFile, error) {
	fi, err := FileInfo(role, path)
	if err != nil {
		return nil, fi, exitcode.Invalidf("import: %v", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fi, exitcode.Invalidf("import: %v", err)
	}
	fi.Path = filepath.Clean(path)
	return f, fi, nil
}

// read reads the user's files by format and records them.
func (q Request) read() (*Recording, error) {
	f, fi, err := open("power", q.File)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	files := []archive.ImportFile{fi}
	var rec *Recording
	switch q.Format {
	case "ptdaemon":
		if q.Loadgen == "" {
			return nil, exitcode.Invalidf("import ptdaemon: --loadgen mlperf_log_detail.txt is required (the measured window is its power_begin..power_end)")
		}
		g, gi, err := open("loadgen", q.Loadgen)
		if err != nil {
			return nil, err
		}
		defer g.Close()
		files = append(files, gi)
		rec, err = PTD(f, q.File, g, q.Loadgen)
		if err != nil {
			return nil, exitcode.With(exitcode.Invalid, err)
		}
	case "csv":
		m, err := ParseMapping(q.Map)
		if err != nil {
			return nil, exitcode.Invalidf("import csv: --map: %v", err)
		}
		if rec, err = CSV(f, q.File, m); err != nil {
			return nil, exitcode.With(exitcode.Invalid, err)
		}
	case "prometheus":
		rec, err = Prometheus(f, q.File, PromOptions{Unit: q.Unit, DeviceLabel: q.DeviceLabel})
		if err != nil {
			return nil, exitcode.With(exitcode.Invalid, err)
		}
	default:
		return nil, exitcode.Invalidf("import: unknown format %q (ptdaemon, csv or prometheus)", q.Format)
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
