package doc

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// renderTerminal writes d for a terminal: headings after a blank line,
// text and notes one line each, tables in boxes (Plain: aligned columns).
func renderTerminal(w io.Writer, d *Document) error {
	for _, s := range d.Sections {
		if s.Heading != "" {
			fmt.Fprintf(w, "\n%s\n", s.Heading)
		}
		for _, b := range s.Blocks {
			var err error
			switch b := b.(type) {
			case *Title:
				_, err = fmt.Fprintln(w, b.Text)
			case *Note:
				_, err = fmt.Fprintln(w, b.Text)
			case *Text:
				_, err = fmt.Fprintln(w, b.Text)
			case *Alert:
				_, err = fmt.Fprintf(w, "%s %s\n", b.Label, b.Text)
			case *Blank:
				_, err = fmt.Fprintln(w)
			case *Table:
				err = boxTable(w, b, false)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// boxTable writes t as a box table or (markdown) a Markdown table; Plain
// tables as aligned columns or unpadded Markdown rows.
func boxTable(w io.Writer, t *Table, markdown bool) error {
	head := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		head[i] = c.Label()
	}
	rows := make([][]string, len(t.Rows))
	for i, r := range t.Rows {
		rows[i] = make([]string, len(r))
		for j, c := range r {
			rows[i][j] = c.Text
		}
	}
	if t.Plain {
		return plainTable(w, head, rows, markdown)
	}
	width := t.MaxWidth
	if width == 0 {
		width = 72
	}
	opts := []tablewriter.Option{tablewriter.WithHeaderAutoFormat(tw.Off)}
	if !markdown || !t.NoWrapMarkdown {
		opts = append(opts, tablewriter.WithRowAutoWrap(tw.WrapNormal), tablewriter.WithRowMaxWidth(width))
	} else {
		opts = append(opts, tablewriter.WithRowAutoWrap(tw.WrapNone))
	}
	if markdown {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
		head = escapeAll(head)
		for i := range rows {
			rows[i] = escapeAll(rows[i])
		}
	}
	tb := tablewriter.NewTable(w, opts...)
	tb.Header(head)
	if err := tb.Bulk(rows); err != nil {
		return fmt.Errorf("render table: %w", err)
	}
	if err := tb.Render(); err != nil {
		return fmt.Errorf("render table: %w", err)
	}
	return nil
}

func plainTable(w io.Writer, head []string, rows [][]string, markdown bool) error {
	if markdown {
		row := func(l []string) string { return "| " + strings.Join(escapeAll(l), " | ") + " |\n" }
		var b strings.Builder
		fmt.Fprintf(&b, "%s|%s\n", row(head), strings.Repeat(" --- |", len(head)))
		for _, l := range rows {
			b.WriteString(row(l))
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, l := range rows {
		fmt.Fprintln(tw, strings.Join(l, "\t"))
	}
	return tw.Flush()
}

func escapeAll(cells []string) []string {
	out := slices.Clone(cells)
	for i := range out {
		out[i] = MarkdownEscape(out[i])
	}
	return out
}
