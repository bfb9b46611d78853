package workflow_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

var docBlockRE = regexp.MustCompile("(?s)```yaml\n# file: ([^\n]+)\n(.*?)```")

// The examples of docs/profiles.md load as the page says: each block
// `# file: NAME` is written to a directory (they extend each other); a
// block with `# expect-error: TEXT` must fail with that text, every other
// must load.
func TestDocsProfileExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/profiles.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := docBlockRE.FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 3 {
		t.Fatalf("found %d examples in docs/profiles.md", len(blocks))
	}
	dir := t.TempDir()
	for _, b := range blocks {
		if err := os.WriteFile(filepath.Join(dir, b[1]), []byte(b[2]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range blocks {
		path := filepath.Join(dir, b[1])
		_, err := workflow.Load([]byte(b[2]), path, workflow.Options{Registry: steps.Registry()})
		want := ""
		if m := regexp.MustCompile(`# expect-error: ([^\n]+)`).FindStringSubmatch(b[2]); m != nil {
			want = m[1]
		}
		switch {
		case want == "" && err != nil:
			t.Errorf("docs example %s: %v", b[1], err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), strings.Replace(want, b[1], path, 1))):
			t.Errorf("docs example %s: error %v, want %s", b[1], err, want)
		}
	}
}
