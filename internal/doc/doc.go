// Package doc is joulebench's one output layer: a neutral document model
// (sections of titles, headings, notes, text and tables with typed cells
// and units) that every command builds, and one renderer per output format
// (table, markdown, csv, json, html), chosen in one place (Render). A new
// format is one file (its renderer) and one registration (formats, in
// registry.go).
//
// People read the blocks (table, markdown, html); programs read Data (csv)
// and JSON, the command's documented JSON when it is not Data's rows.
package doc

import "io"

// SimulatedNote is the note every output of a simulated run carries.
const SimulatedNote = "SIMULATED: engine and GPU are joulebench's simulator; these numbers are not measurements of real hardware."

// Document is what a command outputs.
type Document struct {
	// Sections are read in order.
	Sections []Section
	// FitTables keeps every boxed table of the terminal rendering within
	// the width, as Table.Fit does for one.
	FitTables bool
	// Fit wraps the terminal rendering's lines of text (titles, notes,
	// text, alerts) at the terminal's width (DefaultWidth when the output
	// is not one), continuation lines indented by two spaces.
	Fit bool
	// Loose spaces a Markdown rendering by paragraphs: a blank line before
	// each heading, text and table, a title without one after it. Without
	// it a title and a note end with a blank line and the rest follows
	// directly.
	Loose bool
	// Data is the table the csv format writes (header, then one line per
	// row) and, without JSON, the json format (one object per row).
	Data *Table
	// JSON is the command's documented JSON (encoded with two-space
	// indents); nil: Data's rows.
	JSON any
	// JSONKeepHTML writes <, > and & in JSON strings as they are (else
	// \u003c, ...).
	JSONKeepHTML bool
	// Page writes the document as one self-contained HTML page; formats
	// registered with Page render only documents that have one.
	Page func(w io.Writer) error
}

// Section is a part of a document under an optional heading.
type Section struct {
	// Heading is the section's heading; "" for none.
	Heading string
	Blocks  []Block
}

// Block is one element of a section: *Title, *Note, *Text, *Alert,
// *Blank or *Table.
type Block interface{ block() }

// Title is a bold line naming what follows (a run, a comparison).
type Title struct{ Text string }

// Note is a callout the reader must not miss (simulated power, a smoke
// workload).
type Note struct{ Text string }

// Text is a line of prose.
type Text struct {
	Text string
	// Para ends a paragraph: in a compact Markdown rendering, a blank
	// line follows.
	Para bool
}

// Alert is a line led by a word in capitals that stands out
// ("EXCLUDED from formal results: ...").
type Alert struct{ Label, Text string }

// Blank is an empty line.
type Blank struct{}

// Table is a table: columns, and rows of cells.
type Table struct {
	Columns []Column
	Rows    [][]Cell
	// MaxWidth wraps a cell wider than this (boxed tables); 0: 72.
	MaxWidth int
	// NoWrapMarkdown keeps each Markdown row on one line (a wrapped cell
	// becomes extra rows that break the table when pasted into a pull
	// request).
	NoWrapMarkdown bool
	// Plain draws aligned columns without a box, and Markdown rows
	// without padding.
	Plain bool
	// Fit keeps a boxed table within the terminal's width (Width, else
	// the terminal's when the output is one, else DefaultWidth), wrapping
	// its wide cells.
	Fit bool
	// Width is the width Fit keeps to (0: the terminal's).
	Width int
}

// DefaultWidth is the width a Fit table keeps to when the output is not a
// terminal.
const DefaultWidth = 120

// Column is a table's column: its name and the unit of its values.
type Column struct {
	Name string
	// Unit of the column's values ("J", "J/token", "s"); "" for none.
	Unit string
}

// Label is the column's heading: its name, then its unit.
func (c Column) Label() string {
	if c.Unit == "" {
		return c.Name
	}
	return c.Name + " " + c.Unit
}

// Cell is one value of a table: the text people read and, when it is a
// number or a flag, the typed value.
type Cell struct {
	Text string
	// Value is the cell's value for a program (float64, int64, bool,
	// string); nil: Text.
	Value any
}

// Str is a cell of text.
func Str(s string) Cell { return Cell{Text: s} }

// Row is a row of text cells.
func Row(cells ...string) []Cell {
	out := make([]Cell, len(cells))
	for i, c := range cells {
		out[i] = Cell{Text: c}
	}
	return out
}

// Cols are columns without units.
func Cols(names ...string) []Column {
	out := make([]Column, len(names))
	for i, n := range names {
		out[i] = Column{Name: n}
	}
	return out
}

// AddRow appends a row of cells.
func (t *Table) AddRow(cells ...Cell) { t.Rows = append(t.Rows, cells) }

// Add appends rows of text cells.
func (t *Table) Add(rows ...[]string) {
	for _, r := range rows {
		t.Rows = append(t.Rows, Row(r...))
	}
}

func (*Title) block() {}
func (*Note) block()  {}
func (*Text) block()  {}
func (*Alert) block() {}
func (*Blank) block() {}
func (*Table) block() {}

// Add appends blocks to the document's last section (a new one when it
// has none).
func (d *Document) Add(blocks ...Block) {
	if len(d.Sections) == 0 {
		d.Sections = append(d.Sections, Section{})
	}
	s := &d.Sections[len(d.Sections)-1]
	s.Blocks = append(s.Blocks, blocks...)
}

// AddSection starts a section under heading.
func (d *Document) AddSection(heading string, blocks ...Block) {
	d.Sections = append(d.Sections, Section{Heading: heading, Blocks: blocks})
}

// Append adds other's sections after d's.
func (d *Document) Append(other *Document) {
	d.Sections = append(d.Sections, other.Sections...)
}
