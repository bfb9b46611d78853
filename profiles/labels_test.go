package profiles_test

import (
	"testing"

	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// Every headline metric of a built-in profile (summary: true or
// applicable) has a label: the summary, tables, cards and plots show it
// rather than the identifier.
func TestHeadlineMetricsLabelled(t *testing.T) {
	for _, n := range profiles.Names() {
		src, err := profiles.Read(n)
		if err != nil {
			t.Fatal(err)
		}
		l, err := workflow.Load(src, n, workflow.Options{Registry: steps.Registry()})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range l.Profile.Metrics {
			if (m.Summary == workflow.SummaryAlways || m.Summary == workflow.SummaryApplicable) && m.Label == "" {
				t.Errorf("%s: headline metric %s has no label", n, m.Name)
			}
		}
	}
}
