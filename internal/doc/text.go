package doc

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"golang.org/x/term"
)

// renderTerminal writes d for a terminal: headings after a blank line,
// text and notes one line each, tables in boxes (Plain: aligned columns).
func renderTerminal(w io.Writer, d *Document) error {
	width := 0
	if d.Fit {
		width = fitWidth(w, 0)
	}
	line := func(s string) error {
		_, err := fmt.Fprintln(w, wrapText(s, width))
		return err
	}
	for _, s := range d.Sections {
		if s.Heading != "" {
			fmt.Fprintf(w, "\n%s\n", wrapText(s.Heading, width))
		}
		for _, b := range s.Blocks {
			var err error
			switch b := b.(type) {
			case *Title:
				err = line(b.Text)
			case *Note:
				err = line(b.Text)
			case *Text:
				err = line(b.Text)
			case *Alert:
				err = line(b.Label + " " + b.Text)
			case *Blank:
				_, err = fmt.Fprintln(w)
			case *Table:
				if d.FitTables && !b.Fit {
					fitted := *b
					fitted.Fit = true
					b = &fitted
				}
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
		if t.Fit && !markdown {
			opts = append(opts, tablewriter.WithHeaderAutoWrap(tw.WrapNormal))
		}
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
	if t.Fit && !markdown {
		fit := fitWidth(w, t.Width)
		caps := narrowed(head, rows, width, fit)
		if tableWidth(head, rows, width, caps) > fit {
			return cardRows(w, head, rows, fit)
		}
		if len(caps) > 0 {
			tb.Configure(func(cfg *tablewriter.Config) {
				for _, c := range []*tw.CellConfig{&cfg.Header, &cfg.Row} {
					c.ColMaxWidths.PerColumn = caps
				}
			})
		}
	}
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

// fitWidth is the width a Fit table keeps to: want when set, else the
// terminal's when w is one, else DefaultWidth.
func fitWidth(w io.Writer, want int) int {
	if want > 0 {
		return want
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			return cols
		}
	}
	return DefaultWidth
}

// narrowed returns, for a table wider than fit columns (its cells wrapped
// at width), the widths its columns must wrap at for it to fit: the widest
// column narrowed first, none below its longest word (so a table of many
// columns may still be wider). Empty when it fits already.
func narrowed(head []string, rows [][]string, width, fit int) tw.Mapper[int, int] {
	widths := make([]int, len(head))
	floor := make([]int, len(head))
	see := func(i int, c string) {
		for _, l := range strings.Split(c, "\n") {
			widths[i] = max(widths[i], min(utf8.RuneCountInString(l), width))
		}
		for _, word := range strings.Fields(c) {
			floor[i] = max(floor[i], min(utf8.RuneCountInString(word), width))
		}
	}
	for i, h := range head {
		see(i, h)
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(widths) {
				see(i, c)
			}
		}
	}
	total := 1
	for _, w := range widths {
		total += w + 3
	}
	caps := tw.Mapper[int, int]{}
	for total > fit {
		col := -1
		for i, w := range widths {
			if w > floor[i] && (col < 0 || w-floor[i] > widths[col]-floor[col]) {
				col = i
			}
		}
		if col < 0 {
			break
		}
		widths[col]--
		total--
		caps[col] = widths[col]
	}
	return caps
}

// tableWidth is the width of a boxed table whose cells wrap at width, and
// at caps for the columns it names (words are never broken).
func tableWidth(head []string, rows [][]string, width int, caps tw.Mapper[int, int]) int {
	total := 1
	for i := range head {
		lim := width
		if c, ok := caps[i]; ok {
			lim = c
		}
		w := 0
		for _, c := range append([]string{head[i]}, column(rows, i)...) {
			for _, l := range strings.Split(c, "\n") {
				w = max(w, min(utf8.RuneCountInString(l), lim))
			}
			for _, word := range strings.Fields(c) {
				w = max(w, min(utf8.RuneCountInString(word), width))
			}
		}
		total += w + 3
	}
	return total
}

func column(rows [][]string, i int) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		if i < len(r) {
			out = append(out, r[i])
		}
	}
	return out
}

// cardRows writes a table too wide for fit columns even with its columns
// narrowed as one wrapped paragraph per row, "column: value" joined by
// " · " (empty cells left out); --wide draws the table instead.
func cardRows(w io.Writer, head []string, rows [][]string, fit int) error {
	var b strings.Builder
	for _, r := range rows {
		var parts []string
		for i, c := range r {
			c = strings.Join(strings.Fields(c), " ")
			if i < len(head) && c != "" {
				parts = append(parts, strings.Join(strings.Fields(head[i]), " ")+": "+c)
			}
		}
		b.WriteString("- " + wrapText(strings.Join(parts, " · "), fit-2) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wrapText breaks s at spaces into lines of at most width columns (a word
// longer stays whole), continuation lines indented by two spaces; width 0
// or a line that fits: s as it is.
func wrapText(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width || strings.Contains(s, "\n") {
		return s
	}
	var lines []string
	cur := ""
	for _, word := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = word
		case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(word) <= width:
			cur += " " + word
		default:
			lines = append(lines, cur)
			cur = "  " + word
		}
	}
	return strings.Join(append(lines, cur), "\n")
}
