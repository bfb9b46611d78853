package doc

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
)

// renderCSV writes d.Data: a header of the column labels, then one line
// per row.
func renderCSV(w io.Writer, d *Document) error {
	if d.Data == nil {
		return errors.New("format csv: this output has no table of data")
	}
	cw := csv.NewWriter(w)
	head := make([]string, len(d.Data.Columns))
	for i, c := range d.Data.Columns {
		head[i] = c.Label()
	}
	_ = cw.Write(head)
	for _, r := range d.Data.Rows {
		line := make([]string, len(r))
		for i, c := range r {
			line[i] = c.Text
		}
		_ = cw.Write(line)
	}
	cw.Flush()
	return cw.Error()
}

// renderJSON writes d.JSON or, without it, d.Data's rows as objects keyed
// by the column labels (a cell's typed value, else its text).
func renderJSON(w io.Writer, d *Document) error {
	v := d.JSON
	if v == nil {
		if d.Data == nil {
			return errors.New("format json: this output has no data")
		}
		rows := make([]map[string]any, len(d.Data.Rows))
		for i, r := range d.Data.Rows {
			rows[i] = make(map[string]any, len(r))
			for j, c := range r {
				if j >= len(d.Data.Columns) {
					break
				}
				var x any = c.Text
				if c.Value != nil {
					x = c.Value
				}
				rows[i][d.Data.Columns[j].Label()] = x
			}
		}
		v = rows
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(!d.JSONKeepHTML)
	return enc.Encode(v)
}

// renderHTML writes the document's page.
func renderHTML(w io.Writer, d *Document) error { return d.Page(w) }
