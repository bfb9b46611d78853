package doc

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// sample is a small document with every kind of block: a run's title and
// note, a table with a unit, an alert, and a section under a heading. Its
// strings hold what Markdown must escape (<, >, &, |).
func sample() *Document {
	t := &Table{Columns: []Column{{Name: "name"}, {Name: "energy", Unit: "J"}}}
	t.Rows = [][]Cell{{Str("a|b"), {Text: "1.5", Value: 1.5}}}
	return &Document{
		Sections: []Section{
			{Blocks: []Block{&Title{Text: "run <r1>"}, &Note{Text: "SIMULATED & replayed"}, t,
				&Alert{Label: "EXCLUDED", Text: "from formal results: x"}}},
			{Heading: "Flags", Blocks: []Block{&Text{Text: "None."}}},
		},
		Data: t,
	}
}

// loose is a comparison-like document: a note, a bold summary, then
// paragraphs and a table under a heading.
func loose() *Document {
	t := &Table{Columns: Cols("n"), Rows: [][]Cell{Row("1")}}
	return &Document{Loose: true, Sections: []Section{
		{Blocks: []Block{&Note{Text: "SIMULATED"}, &Title{Text: "Summary"}}},
		{Heading: "Runs", Blocks: []Block{t, &Text{Text: "[x]: left out"}}},
	}}
}

// plain is a table drawn without a box.
func plain() *Document {
	t := &Table{Columns: []Column{{Name: "name"}, {Name: "energy", Unit: "J"}}, Plain: true, Rows: [][]Cell{Row("a|b", "1.5")}}
	return &Document{Sections: []Section{{Blocks: []Block{t}}}, Data: t}
}

func TestRenderers(t *testing.T) {
	page := sample()
	page.Page = func(w io.Writer) error { _, err := io.WriteString(w, "<p>page</p>\n"); return err }
	payload := &Document{JSON: map[string]string{"run": "<r1>"}}
	keep := &Document{JSON: map[string]string{"run": "<r1>"}, JSONKeepHTML: true}
	for _, c := range []struct {
		name, format string
		d            *Document
		want         string
	}{
		// The box is as wide as each column's widest cell, plus a space
		// either side; the unit follows the column's name.
		{"sample", "table", sample(), `run <r1>
SIMULATED & replayed
┌──────┬──────────┐
│ name │ energy J │
├──────┼──────────┤
│ a|b  │ 1.5      │
└──────┴──────────┘
EXCLUDED from formal results: x

Flags
None.
`},
		// Every string escaped; "a\|b" is 4 wide, as "name".
		{"sample", "markdown", sample(), `**run \<r1\>**

> SIMULATED \& replayed

| name | energy J |
|:-----|:---------|
| a\|b | 1.5      |

**EXCLUDED** from formal results: x

#### Flags
None.
`},
		{"loose", "table", loose(), `SIMULATED
Summary

Runs
┌───┐
│ n │
├───┤
│ 1 │
└───┘
[x]: left out
`},
		// A blank line before each heading, table and line.
		{"loose", "markdown", loose(), `> SIMULATED

**Summary**

#### Runs

| n |
|:--|
| 1 |

[x]: left out
`},
		{"sample", "csv", sample(), "name,energy J\na|b,1.5\n"},
		// Without a payload, the rows as objects: the typed value where
		// there is one, keys sorted.
		{"sample", "json", sample(), "[\n  {\n    \"energy J\": 1.5,\n    \"name\": \"a|b\"\n  }\n]\n"},
		{"payload", "json", payload, "{\n  \"run\": \"\\u003cr1\\u003e\"\n}\n"},
		{"payload keeping HTML", "json", keep, "{\n  \"run\": \"<r1>\"\n}\n"},
		{"page", "html", page, "<p>page</p>\n"},
		// tabwriter: each column but the last padded by 2 past its widest.
		{"plain", "table", plain(), "name  energy J\na|b   1.5\n"},
		{"plain", "markdown", plain(), "| name | energy J |\n| --- | --- |\n| a\\|b | 1.5 |\n"},
		{"plain", "json", plain(), "[\n  {\n    \"energy J\": \"1.5\",\n    \"name\": \"a|b\"\n  }\n]\n"},
	} {
		t.Run(c.name+"/"+c.format, func(t *testing.T) {
			var b bytes.Buffer
			if err := Render(&b, c.d, c.format); err != nil {
				t.Fatal(err)
			}
			if b.String() != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), c.want)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	for _, c := range []struct {
		format string
		d      *Document
		want   string
	}{
		{"yaml", sample(), `unknown format "yaml" (valid: table, json, csv, markdown)`},
		{"html", sample(), "this output has no html rendering"},
		{"csv", &Document{}, "no table of data"},
		{"json", &Document{}, "no data"},
	} {
		err := Render(io.Discard, c.d, c.format)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Render(%s) = %v, want %q", c.format, err, c.want)
		}
	}
}

func TestFormats(t *testing.T) {
	if got := strings.Join(Names(false), ","); got != "table,json,csv,markdown" {
		t.Errorf("Names(false) = %s", got)
	}
	if got := strings.Join(Names(true), ","); got != "html" {
		t.Errorf("Names(true) = %s", got)
	}
	if err := Check("markdown"); err != nil {
		t.Error(err)
	}
	if err := Check("html"); err == nil {
		t.Error("Check(html): a page format is not one every document renders in")
	}
	if f, _ := Lookup("table"); !f.Terminal || f.File != "json" {
		t.Errorf("table: %+v", f)
	}
}

func TestMarkdownEscape(t *testing.T) {
	for in, want := range map[string]string{
		"<script>":  `\<script\>`,
		"a|b":       `a\|b`,
		`x\y`:       `x\\y`,
		"[t](u)":    `[t\](u)`,
		"AT&T":      `AT\&T`,
		"plain 1.5": "plain 1.5",
	} {
		if got := MarkdownEscape(in); got != want {
			t.Errorf("MarkdownEscape(%q) = %q, want %q", in, got, want)
		}
	}
}

// Add appends to the last section (starting one), AddSection starts one
// under a heading, Append joins documents: the same document as sample's
// literal.
func TestBuild(t *testing.T) {
	tb := &Table{Columns: []Column{{Name: "name"}, {Name: "energy", Unit: "J"}}}
	tb.Rows = [][]Cell{{Str("a|b"), {Text: "1.5", Value: 1.5}}}
	d := &Document{}
	d.Add(&Title{Text: "run <r1>"}, &Note{Text: "SIMULATED & replayed"})
	d.Add(tb, &Alert{Label: "EXCLUDED", Text: "from formal results: x"})
	rest := &Document{}
	rest.AddSection("Flags", &Text{Text: "None."})
	d.Append(rest)
	for _, f := range []string{"table", "markdown"} {
		var got, want bytes.Buffer
		if err := Render(&got, d, f); err != nil {
			t.Fatal(err)
		}
		if err := Render(&want, sample(), f); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%s:\n%s\nwant\n%s", f, got.String(), want.String())
		}
	}
}

// A Fit table wider than its width wraps its widest column so that every
// line fits; one that fits is drawn as before.
func TestFitTable(t *testing.T) {
	long := strings.Repeat("a reason that goes on ", 8) // 176 characters
	for _, width := range []int{60, 120} {
		tb := &Table{Columns: Cols("metric", "value", "note"), Fit: true, Width: width}
		tb.Add([]string{"steady_state_j_per_token", "0.25", long}, []string{"x", "1", "short"})
		var buf bytes.Buffer
		if err := Render(&buf, &Document{Sections: []Section{{Blocks: []Block{tb}}}}, "table"); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			if n := utf8.RuneCountInString(l); n > width {
				t.Errorf("width %d: line of %d: %q", width, n, l)
			}
		}
		if !strings.Contains(buf.String(), "steady_state_j_per_token") {
			t.Errorf("width %d:\n%s", width, buf.String())
		}
	}
}

// A Fit document wraps its lines of text at the width, continuation lines
// indented; a line that fits is left alone.
func TestWrapText(t *testing.T) {
	if got := wrapText("EXCLUDED from formal results: check release_closed failed", 30); got != "EXCLUDED from formal results:\n  check release_closed failed" {
		t.Errorf("%q", got)
	}
	if got := wrapText("short", 30); got != "short" {
		t.Errorf("%q", got)
	}
	if got := wrapText("a b", 0); got != "a b" {
		t.Errorf("%q", got)
	}
}
