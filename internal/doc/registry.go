package doc

import (
	"fmt"
	"io"
	"strings"
)

// The names of the formats every output renders in (report and compare
// call them so too).
const (
	FormatTable    = "table"
	FormatJSON     = "json"
	FormatCSV      = "csv"
	FormatMarkdown = "markdown"
)

// Format is one registered output format.
type Format struct {
	Name   string
	Render func(w io.Writer, d *Document) error
	// Page formats render only documents that carry a page (Document.Page);
	// they are offered only by the commands that make one.
	Page bool
	// Terminal formats are for a person at a terminal: a run shows as its
	// summary, and a file asked for in the format gets File instead.
	Terminal bool
	// File is the format a file gets when this one is asked for; "": this
	// one.
	File string
}

// formats are the registered formats, in the order they are listed. A new
// format is its renderer's file and one line here.
func formats() []Format {
	return []Format{
		{Name: "table", Render: renderTerminal, Terminal: true, File: "json"},
		{Name: "json", Render: renderJSON},
		{Name: "csv", Render: renderCSV},
		{Name: "markdown", Render: renderMarkdown},
		{Name: "html", Render: renderHTML, Page: true},
	}
}

// Lookup returns the format named name.
func Lookup(name string) (Format, bool) {
	for _, f := range formats() {
		if f.Name == name {
			return f, true
		}
	}
	return Format{}, false
}

// Names lists the formats every document renders in (pages false) or
// those that need a page (pages true).
func Names(pages bool) []string {
	var out []string
	for _, f := range formats() {
		if f.Page == pages {
			out = append(out, f.Name)
		}
	}
	return out
}

// Check rejects a format that is not one every document renders in,
// listing the valid ones.
func Check(name string) error {
	if f, ok := Lookup(name); ok && !f.Page {
		return nil
	}
	return fmt.Errorf("unknown format %q (valid: %s)", name, strings.Join(Names(false), ", "))
}

// Render writes d in the format named format: the one place an output
// format is chosen.
func Render(w io.Writer, d *Document, format string) error {
	f, ok := Lookup(format)
	if !ok {
		return Check(format)
	}
	if f.Page && d.Page == nil {
		return fmt.Errorf("format %s: this output has no %s rendering (valid: %s)", format, format, strings.Join(Names(false), ", "))
	}
	return f.Render(w, d)
}
