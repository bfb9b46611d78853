package doc

import (
	"fmt"
	"io"
	"strings"
)

// markdownEscaper backslash-escapes what would let text in Markdown become
// markup: HTML and autolinks (< > &), an inline link's "](", a table
// cell's end (|), and the backslash itself (else a user's "\" would undo
// the escape that follows).
var markdownEscaper = strings.NewReplacer(`\`, `\\`, "<", `\<`, ">", `\>`, "&", `\&`, "](", `\](`, "|", `\|`)

// MarkdownEscape makes a string (a label, a model name, a run id, a note)
// literal text in Markdown: a label "<script>" renders as those characters,
// never as HTML.
func MarkdownEscape(s string) string { return markdownEscaper.Replace(s) }

// renderMarkdown writes d as Markdown to paste into an issue or a pull
// request: every string of the document escaped (MarkdownEscape), headings
// at level 4, titles bold, notes quoted.
func renderMarkdown(w io.Writer, d *Document) error {
	esc := MarkdownEscape
	for _, s := range d.Sections {
		if s.Heading != "" {
			fmt.Fprintf(w, "\n#### %s\n", esc(s.Heading))
		}
		for _, b := range s.Blocks {
			var err error
			switch b := b.(type) {
			case *Title:
				if d.Loose {
					_, err = fmt.Fprintf(w, "**%s**\n", esc(b.Text))
				} else {
					_, err = fmt.Fprintf(w, "**%s**\n\n", esc(b.Text))
				}
			case *Note:
				_, err = fmt.Fprintf(w, "> %s\n\n", esc(b.Text))
			case *Text:
				switch {
				case d.Loose:
					_, err = fmt.Fprintf(w, "\n%s\n", esc(b.Text))
				case b.Para:
					_, err = fmt.Fprintf(w, "%s\n\n", esc(b.Text))
				default:
					_, err = fmt.Fprintf(w, "%s\n", esc(b.Text))
				}
			case *Alert:
				_, err = fmt.Fprintf(w, "\n**%s** %s\n", esc(b.Label), esc(b.Text))
			case *Blank:
				_, err = fmt.Fprintln(w)
			case *Table:
				if d.Loose {
					fmt.Fprintln(w)
				}
				err = boxTable(w, b, true)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}
