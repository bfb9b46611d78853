package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/report/htmlreport"
)

// outFormatHelp is the --format help of report and compare.
const outFormatHelp = "output format: table, json, csv, markdown, html (one self-contained file; give --out)"

// outFileHelp is the --out help of report and compare.
const outFileHelp = "write the output to this file (written whole, then renamed into place) instead of standard output"

// checkOutFormat accepts the text formats and html.
func checkOutFormat(format string) error {
	if format == htmlreport.Format {
		return nil
	}
	if err := report.CheckFormat(format); err != nil {
		return fmt.Errorf("%w (or %s)", err, htmlreport.Format)
	}
	return nil
}

// toOut runs write on standard output, or with a path on a temporary file
// beside it that is renamed to the path once written: a failed write
// leaves no partial report.
func (a *app) toOut(path string, write func(io.Writer) error) error {
	if path == "" {
		return write(a.out)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	tmp := f.Name()
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("--out %s: %w", path, err)
	}
	// CreateTemp makes the file 0600; a report is for sharing.
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("--out %s: %w", path, err)
	}
	a.log.Info().Str("file", path).Msg("written")
	return nil
}
