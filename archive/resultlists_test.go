package archive

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// results.json stores a list of at most 64 items: a value of 70 numbers
// (a long run's steady windows, whole in memory for compare) is written
// as null with the note "list of 70 items (not stored)", a list of 64 as
// it is; the results written from are not changed.
func TestResultsFileSummarisesLongLists(t *testing.T) {
	list := func(n int) []any {
		l := make([]any, n)
		for i := range l {
			l[i] = 0.2
		}
		return l
	}
	res := record.Results{RunID: "r", Order: []string{"long", "short"}, Values: map[string]record.Result{
		"long": {Kind: "derived", Value: list(70)}, "short": {Kind: "derived", Value: list(64)}}}
	dir := t.TempDir()
	if err := WriteResultsFile(dir, res); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var got record.Results
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if r := got.Values["long"]; r.Value != nil || r.Note != "list of 70 items (not stored)" {
		t.Errorf("long: %v, note %q; want null, list of 70 items (not stored)", r.Value, r.Note)
	}
	if l, ok := got.Values["short"].Value.([]any); !ok || len(l) != 64 {
		t.Errorf("short: %v, want its 64 items", got.Values["short"].Value)
	}
	if l, ok := res.Values["long"].Value.([]any); !ok || len(l) != 70 || res.Values["long"].Note != "" {
		t.Errorf("the results written from changed: %+v", res.Values["long"])
	}
}
