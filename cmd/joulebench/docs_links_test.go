package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// mdLink is a Markdown link or image target: ](target) or ](target "title").
var mdLink = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)

// codeSpan is an inline code span, one backtick or more on each side,
// whose text is not a link.
var codeSpan = regexp.MustCompile("(`+)[^`].*?`+")

// docLinks returns the link targets of a Markdown page outside fenced code
// blocks and inline code, with their lines.
func docLinks(md string) (targets []string, lines []int) {
	fence := ""
	for i, l := range strings.Split(md, "\n") {
		trim := strings.TrimSpace(l)
		if f, ok := fenceOf(trim); ok {
			switch {
			case fence == "":
				fence = f
			case strings.HasPrefix(f, fence) && strings.TrimLeft(trim, "`~") == "":
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(l, ""), -1) {
			targets = append(targets, m[1])
			lines = append(lines, i+1)
		}
	}
	return targets, lines
}

// fenceOf says whether a trimmed line opens or closes a fenced code block,
// and returns its fence (``` or ~~~, at least three).
func fenceOf(trim string) (string, bool) {
	for _, c := range []string{"`", "~"} {
		n := len(trim) - len(strings.TrimLeft(trim, c))
		if n >= 3 {
			return strings.Repeat(c, n), true
		}
	}
	return "", false
}

// headingAnchors returns the anchors GitHub gives a page's headings:
// lower case, punctuation dropped, blanks as hyphens, a repeated one
// numbered -1, -2, ….
func headingAnchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, l := range strings.Split(md, "\n") {
		trim := strings.TrimSpace(l)
		if f, ok := fenceOf(trim); ok {
			switch {
			case fence == "":
				fence = f
			case strings.HasPrefix(f, fence) && strings.TrimLeft(trim, "`~") == "":
				fence = ""
			}
			continue
		}
		rest := strings.TrimLeft(l, "#")
		if fence != "" || len(rest) == len(l) || len(l)-len(rest) > 6 || !strings.HasPrefix(rest, " ") {
			continue
		}
		text := strings.TrimSpace(rest)
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), unicode.IsMark(r), r == '_', r == '-':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		out[a] = true
	}
	return out
}

// Every relative link of README.md and of the guides in docs/ names a
// file of the repository, and a heading of it where it has a #anchor.
func TestDocsLinks(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, page := range docFiles(t, repo) {
		path := filepath.Join(repo, filepath.FromSlash(page))
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		targets, lines := docLinks(string(src))
		for i, target := range targets {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := path
			if file != "" {
				dest = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
			}
			checked++
			rel, err := filepath.Rel(repo, dest)
			if err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s:%d: %s leaves the repository", page, lines[i], target)
				continue
			}
			body, err := os.ReadFile(dest)
			if err != nil {
				if fi, serr := os.Stat(dest); serr == nil && fi.IsDir() && anchor == "" {
					continue
				}
				t.Errorf("%s:%d: %s: no such file", page, lines[i], target)
				continue
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") && !headingAnchors(string(body))[anchor] {
				t.Errorf("%s:%d: %s: %s has no heading with the anchor #%s", page, lines[i], target, rel, anchor)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d relative links checked: the parser or the docs changed", checked)
	}
}

// The link parser skips code; the anchors follow GitHub's rule.
func TestDocsLinksParse(t *testing.T) {
	md := "# A: b `c` (d)\n[x](a.md) `[y](no.md)` ![i](img/p.png \"t\")\n```sh\n[z](no.md)\n# not a heading\n```\n## A: b `c` (d)\n### Energy–latency, frontier\n"
	targets, lines := docLinks(md)
	if got := fmt.Sprint(targets, lines); got != "[a.md img/p.png] [2 2]" {
		t.Errorf("links %s, want [a.md img/p.png] [2 2]", got)
	}
	a := headingAnchors(md)
	// "A: b `c` (d)" → "a-b-c-d", its repeat "a-b-c-d-1"; the en dash
	// and the comma dropped: "energylatency-frontier".
	for _, want := range []string{"a-b-c-d", "a-b-c-d-1", "energylatency-frontier"} {
		if !a[want] {
			t.Errorf("no anchor %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Errorf("a comment in a code block made an anchor: %v", a)
	}
}
