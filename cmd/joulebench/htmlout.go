package main

import (
	"io"
	"strings"

	"github.com/joulebench/joulebench/internal/doc"
	"github.com/joulebench/joulebench/report"
)

// formatList lists the formats every output renders in (the registry's).
func formatList() string { return strings.Join(doc.Names(false), ", ") }

// outFormatHelp is the --format help of report and compare.
var outFormatHelp = "output format: " + formatList() + ", " + strings.Join(doc.Names(true), ", ") + " (one self-contained file; give --out)"

// outFileHelp is the --out help of report and compare.
const outFileHelp = "write the output to this file (written whole, then renamed into place) instead of standard output"

// toOut runs write on standard output, or on the file path
// (report.WriteFile: whole or not at all).
func (a *app) toOut(path string, write func(io.Writer) error) error {
	if path == "" {
		return write(a.out)
	}
	if err := report.WriteFile(path, write); err != nil {
		return err
	}
	a.log.Info().Str("file", path).Msg("written")
	return nil
}
