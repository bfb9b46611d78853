package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// A list of numbers longer than results.json stores, whole in the
// results in memory (compare reads every steady window), is shown as
// results.json holds it: null, "list of 70 items (not stored)".
func TestResultsShowLongListsAsStored(t *testing.T) {
	l := make([]any, 70)
	for i := range l {
		l[i] = 0.123456
	}
	res := &record.Results{RunID: "r", Order: []string{"steady_window_j_per_token"},
		Values: map[string]record.Result{"steady_window_j_per_token": {Kind: "derived", Value: l}}}
	for _, format := range []string{"table", "json"} {
		var buf bytes.Buffer
		if err := Results(&buf, Run{Meta: record.Meta{RunID: "r"}, Results: res}, format, true); err != nil {
			t.Fatal(err)
		}
		if out := buf.String(); !strings.Contains(out, "list of 70 items (not stored)") || strings.Contains(out, "0.123456") {
			t.Errorf("%s: %s\nwant the list as results.json stores it", format, out)
		}
	}
	if len(res.Values["steady_window_j_per_token"].Value.([]any)) != 70 {
		t.Error("the results shown were changed")
	}
}
