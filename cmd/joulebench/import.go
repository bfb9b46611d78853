package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/importer"
	"github.com/joulebench/joulebench/profiles"
)

func (a *app) importCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import ptdaemon|csv|prometheus FILE --out DIR [flags]",
		Short: "Turn a power recording made without joulebench into a run archive",
		Long: `import writes a new run directory (format v1) from a power recording, so
that analyze, report, compare and plot read it like a measured run:

  ptdaemon FILE    a PTDaemon / MLPerf Power sample log (spl.txt) with
                   --loadgen mlperf_log_detail.txt: the measured window is
                   the loadgen's power_begin..power_end; readings <= 0
                   (PTDaemon's -1) are failed samples, left out as gaps
  csv FILE         a CSV with a header; --map says which columns hold what:
                   time=COL (Unix s or RFC 3339) or time_ms=COL, device=COL
                   (optional), watts=COL and/or joules=COL (a cumulative counter)
  prometheus FILE  a /api/v1/query_range answer or range-vector export
                   (JSON); --unit watts|joules|millijoules, --device-label

The run has one stage, formal, over the window (--begin/--end for csv and
prometheus; default: the span every device covers). Without per-request
data, --output-tokens N writes one synthetic request over the window:
J/token divides by N, and latency metrics are not applicable. run.json's
"import" object records every file read (with its sha256) and these choices.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return a.importRun(cmd, args[0], args[1]) },
	}
	f := cmd.Flags()
	f.String("out", "", "run directory to create (must not exist)")
	f.String("loadgen", "", "ptdaemon: the loadgen's mlperf_log_detail.txt (power_begin/power_end)")
	f.String("map", "", "csv: column mapping, e.g. time=ts,device=gpu,watts=power_w")
	f.String("unit", "watts", "prometheus: unit of the values: watts, joules or millijoules (a counter)")
	f.String("device-label", "", "prometheus: label naming each series' device (default: gpu, device or instance)")
	f.String("begin", "", "csv, prometheus: start of the measured window (Unix s or RFC 3339)")
	f.String("end", "", "csv, prometheus: end of the measured window (Unix s or RFC 3339)")
	f.String("domain", archive.DomainGPU, "csv, prometheus: what the recorded power covers: gpu, cpu, dram or node (ptdaemon is node: the whole system at the wall)")
	f.Int("output-tokens", 0, "output tokens generated in the window (for J/token; no per-request data is imported)")
	f.String("profile", "benchmark-1.0", "built-in profile the archive is evaluated with by default")
	return cmd
}

func (a *app) importRun(cmd *cobra.Command, format, file string) error {
	out := a.v.GetString("out")
	if out == "" {
		return invalidf("import: --out DIR is required (the run directory to create)")
	}
	if _, err := os.Stat(out); err == nil {
		return invalidf("import: run directory %s already exists; an import is a new directory", out)
	}
	tokens := a.v.GetInt("output-tokens")
	if tokens < 0 {
		return invalidf("import: --output-tokens must be ≥ 0, got %d", tokens)
	}
	begin, end, err := a.importWindow()
	if err != nil {
		return err
	}
	rec, err := a.readRecording(format, file)
	if err != nil {
		return err
	}
	if err := a.importDomain(cmd.Flags().Changed("domain"), format, rec); err != nil {
		return err
	}
	if end > begin {
		if format == "ptdaemon" {
			return invalidf("import ptdaemon: the window is the loadgen's power_begin..power_end; --begin/--end are for csv and prometheus")
		}
		rec.Begin, rec.End, rec.Window = begin, end, "--begin/--end"
	}
	prof := a.v.GetString("profile")
	src, err := profiles.Read(prof)
	if err != nil {
		return invalidf("import: --profile %s: %v", prof, err)
	}
	opt := importer.WriteOptions{OutputTokens: tokens, ProfileYAML: src,
		Profile:  archive.ProfileRef{Name: prof, Source: "builtin"},
		Software: map[string]string{"joulebench": version, "go": runtime.Version()}}
	if err := importer.Write(cmd.Context(), out, rec, opt); err != nil {
		return withCode(exitFailure, err)
	}
	fmt.Fprintf(a.out, "imported %s (%d samples, %d failed readings left out as gaps) into %s\n",
		file, len(rec.Samples), rec.FailedSamples, out)
	if tokens == 0 {
		fmt.Fprintln(a.out, "no --output-tokens: energy and power only; J/token is not applicable, and analyze's formal_requests_succeeded fails (no request)")
	}
	if lo, hi := rec.Covered(); rec.End > rec.Begin && (rec.Begin < lo || rec.End > hi) {
		a.log.Warn().Str("component", "import").Msgf("the window [%g, %g] reaches beyond the samples every device has [%g, %g]: the power audit (power_devices_present) will exclude the run",
			rec.Begin, rec.End, lo, hi)
	}
	return nil
}

// importDomain gives every imported device the domain its power covers:
// --domain for csv and prometheus; a PTDaemon log is the whole node.
func (a *app) importDomain(given bool, format string, rec *importer.Recording) error {
	dom := a.v.GetString("domain")
	if format == "ptdaemon" {
		if given && dom != archive.DomainNode {
			return invalidf("import ptdaemon: --domain %s: a PTDaemon power analyzer measures the whole system at the wall (node)", dom)
		}
		dom = archive.DomainNode
	}
	if !slices.Contains(archive.Domains, dom) {
		return invalidf("import: --domain %q: want one of %s", dom, strings.Join(archive.Domains, ", "))
	}
	for i := range rec.Devices {
		rec.Devices[i].Domain = dom
	}
	return nil
}

// readRecording reads the user's files by format and records them.
func (a *app) readRecording(format, file string) (*importer.Recording, error) {
	open := func(role, path string) (*os.File, archive.ImportFile, error) {
		fi, err := importer.FileInfo(role, path)
		if err != nil {
			return nil, fi, invalidf("import: %v", err)
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, fi, invalidf("import: %v", err)
		}
		fi.Path = filepath.Clean(path)
		return f, fi, nil
	}
	f, fi, err := open("power", file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	files := []archive.ImportFile{fi}
	var rec *importer.Recording
	switch format {
	case "ptdaemon":
		lg := a.v.GetString("loadgen")
		if lg == "" {
			return nil, invalidf("import ptdaemon: --loadgen mlperf_log_detail.txt is required (the measured window is its power_begin..power_end)")
		}
		g, gi, err := open("loadgen", lg)
		if err != nil {
			return nil, err
		}
		defer g.Close()
		files = append(files, gi)
		rec, err = importer.PTD(f, file, g, lg)
		if err != nil {
			return nil, withCode(exitInvalid, err)
		}
	case "csv":
		m, err := importer.ParseMapping(a.v.GetString("map"))
		if err != nil {
			return nil, invalidf("import csv: --map: %v", err)
		}
		if rec, err = importer.CSV(f, file, m); err != nil {
			return nil, withCode(exitInvalid, err)
		}
	case "prometheus":
		rec, err = importer.Prometheus(f, file, importer.PromOptions{Unit: a.v.GetString("unit"), DeviceLabel: a.v.GetString("device-label")})
		if err != nil {
			return nil, withCode(exitInvalid, err)
		}
	default:
		return nil, invalidf("import: unknown format %q (ptdaemon, csv or prometheus)", format)
	}
	rec.Files = files
	return rec, nil
}

// importWindow reads --begin/--end (both 0 when not given).
func (a *app) importWindow() (begin, end float64, err error) {
	b, e := a.v.GetString("begin"), a.v.GetString("end")
	if (b == "") != (e == "") {
		return 0, 0, invalidf("import: give both --begin and --end, or neither (the span every device covers)")
	}
	if b == "" {
		return 0, 0, nil
	}
	if begin, err = importer.ParseTime(b); err != nil {
		return 0, 0, invalidf("import: --begin: %v", err)
	}
	if end, err = importer.ParseTime(e); err != nil {
		return 0, 0, invalidf("import: --end: %v", err)
	}
	if !(end > begin) {
		return 0, 0, invalidf("import: --end %s is not after --begin %s", e, b)
	}
	return begin, end, nil
}
