package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

func TestMarkdownEscape(t *testing.T) {
	for in, want := range map[string]string{
		"steady_state_j_per_token":  "steady_state_j_per_token",
		"<script>alert(1)</script>": `\<script\>alert(1)\</script\>`,
		"a|b":                       `a\|b`,
		"[x](javascript:alert(1))":  `[x\](javascript:alert(1))`,
		`["r1","r2"]`:               `["r1","r2"]`,
		`back\<b>`:                  `back\\\<b\>`,
		"&lt;":                      `\&lt;`,
	} {
		if got := MarkdownEscape(in); got != want {
			t.Errorf("MarkdownEscape(%q) = %q, want %q", in, got, want)
		}
	}
}

// User strings (a run id, a model name, a note) reach Markdown output as
// text: no raw HTML tag and no link survives.
func TestMarkdownOutputEscapesUserStrings(t *testing.T) {
	evil := "<script>alert(1)</script>"
	run := Run{
		Meta: record.Meta{RunID: "r" + evil, Status: record.StatusComplete, Profile: record.ProfileRef{Name: "p"},
			Engine: record.EngineInfo{Kind: "vllm", Model: "[m](javascript:x)" + evil}},
		Results: &record.Results{Order: []string{"m"}, Excluded: true, ExcludeReason: "check x failed: " + evil,
			Values: map[string]record.Result{"m": {Kind: "metric", Value: "v" + evil, Note: evil}}},
	}
	// A stage note carries a result's note (a profile's text): escaped too.
	bd := StageBreakdown{RunID: run.Meta.RunID, Note: "n" + evil}
	for name, render := range map[string]func(*bytes.Buffer) error{
		"results":  func(b *bytes.Buffer) error { return Results(b, run, FormatMarkdown, true) },
		"runs":     func(b *bytes.Buffer) error { return Runs(b, []Run{run, run}, FormatMarkdown) },
		"stages":   func(b *bytes.Buffer) error { return RenderStages(b, []StageBreakdown{bd}, FormatMarkdown) },
		"baseline": func(b *bytes.Buffer) error { return ResultsWithBaseline(b, run, run, FormatMarkdown, false) },
	} {
		var b bytes.Buffer
		if err := render(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out := b.String()
		if unescaped := strings.NewReplacer(`\<`, "", `\](`, "").Replace(out); strings.Contains(unescaped, "<") || strings.Contains(unescaped, "](") {
			t.Errorf("%s: raw markup in Markdown:\n%s", name, out)
		}
		if !strings.Contains(out, `\<script\>`) {
			t.Errorf("%s: the user string is missing (escaped):\n%s", name, out)
		}
	}
}
