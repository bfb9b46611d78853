package importer

import (
	"testing"

	"github.com/joulebench/joulebench/archive"
)

func TestSummaryAndBeyondWarning(t *testing.T) {
	// gpu0 has samples over [10, 40], gpu1 over [20, 50]: every device has
	// samples over [20, 40].
	samples := []archive.PowerSample{{T: 10, Device: "gpu0"}, {T: 40, Device: "gpu0"}, {T: 20, Device: "gpu1"}, {T: 50, Device: "gpu1"}}
	for _, c := range []struct {
		name         string
		tokens       int
		begin, end   float64
		summary, why string
	}{
		{name: "inside, with tokens", tokens: 300, begin: 20, end: 40,
			summary: "imported spl.txt (4 samples, 1 failed readings left out as gaps) into out/run\n"},
		{name: "beyond, without tokens", begin: 15, end: 40,
			summary: "imported spl.txt (4 samples, 1 failed readings left out as gaps) into out/run\n" +
				"no --output-tokens: energy and power only; J/token is not applicable, and analyze's formal_requests_succeeded fails (no request)\n",
			why: "the window [15, 40] reaches beyond the samples every device has [20, 40]: the power audit (power_devices_present) will exclude the run"},
		{name: "beyond the end", tokens: 1, begin: 20, end: 45,
			summary: "imported spl.txt (4 samples, 1 failed readings left out as gaps) into out/run\n",
			why:     "the window [20, 45] reaches beyond the samples every device has [20, 40]: the power audit (power_devices_present) will exclude the run"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := Request{File: "spl.txt", Out: "out/run", OutputTokens: c.tokens}
			rec := &Recording{Samples: samples, FailedSamples: 1, Begin: c.begin, End: c.end}
			if got := q.Summary(rec); got != c.summary {
				t.Errorf("summary %q, want %q", got, c.summary)
			}
			if got := rec.BeyondWarning(); got != c.why {
				t.Errorf("warning %q, want %q", got, c.why)
			}
		})
	}
}
