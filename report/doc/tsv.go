package doc

import (
	"errors"
	"io"
	"strings"
)

// renderTSV writes d.Data as tab-separated values: a header of the column
// labels, then one line per row (a tab or newline in a cell becomes a
// space). An example format: this file and one line in formats.
func renderTSV(w io.Writer, d *Document) error {
	if d.Data == nil {
		return errors.New("format tsv: this output has no table of data")
	}
	clean := strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")
	line := func(cells []string) error {
		for i := range cells {
			cells[i] = clean.Replace(cells[i])
		}
		_, err := io.WriteString(w, strings.Join(cells, "\t")+"\n")
		return err
	}
	head := make([]string, len(d.Data.Columns))
	for i, c := range d.Data.Columns {
		head[i] = c.Label()
	}
	if err := line(head); err != nil {
		return err
	}
	for _, r := range d.Data.Rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = c.Text
		}
		if err := line(cells); err != nil {
			return err
		}
	}
	return nil
}
