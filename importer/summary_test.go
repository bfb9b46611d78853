package importer

import (
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

func TestSummaryAndBeyondWarning(t *testing.T) {
	// gpu0 has samples over t0 + [10, 40] s, gpu1 over t0 + [20, 50] s:
	// every device has samples over t0 + [20, 40] s. t0 is
	// 2025-10-19T12:00:00Z; times in messages are ISO 8601 with the zone.
	samples := []record.PowerSample{{T: t0 + 10, Device: "gpu0"}, {T: t0 + 40, Device: "gpu0"}, {T: t0 + 20, Device: "gpu1"}, {T: t0 + 50, Device: "gpu1"}}
	const head = "imported spl.txt (4 samples, 1 failed readings left out as gaps) into out/run\n"
	for _, c := range []struct {
		name         string
		format       string
		tokens       int
		from         string
		model        string
		ranging      bool
		begin, end   float64
		summary, why string
	}{
		{name: "inside, with tokens", tokens: 300, from: "given with --output-tokens", begin: t0 + 20, end: t0 + 40, summary: head},
		{name: "beyond, without tokens", begin: t0 + 15, end: t0 + 40,
			summary: head + "no --output-tokens: energy and power only; J/token, throughput and the request checks are not applicable (n/a, exit 0)\n",
			why:     "the window [2025-10-19T12:00:15Z, 2025-10-19T12:00:40Z] reaches beyond the samples every device has [2025-10-19T12:00:20Z, 2025-10-19T12:00:40Z]: the power audit (power_devices_present) will exclude the run"},
		{name: "beyond the end", tokens: 1, begin: t0 + 20, end: t0 + 45.5, summary: head,
			why: "the window [2025-10-19T12:00:20Z, 2025-10-19T12:00:45.5Z] reaches beyond the samples every device has [2025-10-19T12:00:20Z, 2025-10-19T12:00:40Z]: the power audit (power_devices_present) will exclude the run"},
		{name: "loadgen tokens, no model, ranging", format: "ptdaemon", tokens: 5000, from: "worked out from the loadgen", ranging: true, begin: t0 + 20, end: t0 + 40,
			summary: head + "output tokens: 5000, worked out from the loadgen; --output-tokens overrides\n" +
				"model: not named by the logs or their directory (results/SYSTEM/MODEL/SCENARIO/performance/run_1/); give --model\n" +
				"RANGING run (the power analyzer's range-finding pass, not MLPerf's measured run_1): marked engine kind imported-ranging, label mlperf_run=ranging\n"},
		{name: "ptdaemon with a model", format: "ptdaemon", model: "llama2-70b-99", tokens: 1, from: "given with --output-tokens", begin: t0 + 20, end: t0 + 40, summary: head},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := Request{File: "spl.txt", Out: "out/run"}
			rec := &Recording{Format: c.format, Samples: samples, FailedSamples: 1, Begin: c.begin, End: c.end,
				OutputTokens: c.tokens, TokensFrom: c.from, Model: c.model, Ranging: c.ranging}
			if got := q.Summary(rec); got != c.summary {
				t.Errorf("summary %q, want %q", got, c.summary)
			}
			if got := rec.BeyondWarning(); got != c.why {
				t.Errorf("warning %q, want %q", got, c.why)
			}
		})
	}
}
