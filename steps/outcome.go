package steps

import (
	"fmt"
	"sort"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
)

// outcome is what a stage's requests came to: the latest done_at, how
// many finished and failed, and the failures' messages.
type outcome struct {
	lastDone      float64
	firstSent     float64 // the earliest sent_at (0: none)
	total, failed int
	// first is the first error message, in completion order.
	first string
	errs  map[string]int
}

// add counts one finished request.
func (o *outcome) add(r record.Request) {
	o.total++
	o.lastDone = max(o.lastDone, r.DoneAt)
	if r.SentAt > 0 && (o.firstSent == 0 || r.SentAt < o.firstSent) {
		o.firstSent = r.SentAt
	}
	if r.OK {
		return
	}
	o.failed++
	msg := errorMessage(r.Error)
	if o.first == "" {
		o.first = msg
	}
	if o.errs == nil {
		o.errs = map[string]int{}
	}
	o.errs[msg]++
}

// maxErrorMessage bounds an error message in a summary (an engine may
// answer a bad request with the whole prompt).
const maxErrorMessage = 300

func errorMessage(e string) string {
	e = strings.Join(strings.Fields(e), " ")
	if e == "" {
		return "(no message)"
	}
	if r := []rune(e); len(r) > maxErrorMessage {
		e = string(r[:maxErrorMessage]) + "..."
	}
	return e
}

// topErrors names the n most frequent error messages with their counts,
// most frequent first (ties in message order): `200× "http 400: ..."`.
func topErrors(errs map[string]int, n int) string {
	msgs := make([]string, 0, len(errs))
	for m := range errs {
		msgs = append(msgs, m)
	}
	sort.Slice(msgs, func(i, j int) bool {
		if errs[msgs[i]] != errs[msgs[j]] {
			return errs[msgs[i]] > errs[msgs[j]]
		}
		return msgs[i] < msgs[j]
	})
	parts := make([]string, 0, n+1)
	for i, m := range msgs {
		if i == n {
			other := "messages"
			if len(msgs)-n == 1 {
				other = "message"
			}
			parts = append(parts, fmt.Sprintf("%d other %s", len(msgs)-n, other))
			break
		}
		parts = append(parts, fmt.Sprintf("%d× %q", errs[m], m))
	}
	return strings.Join(parts, ", ")
}

// failureSummary is "N of M <phase> requests failed: <top errors>", or ""
// when none of reqs' phase failed.
func failureSummary(reqs []record.Request, phase string) string {
	var o outcome
	for _, r := range reqs {
		if r.Phase == phase {
			o.add(r)
		}
	}
	return o.summary(phase)
}

// summary is "N of M <phase> requests failed: <top errors>", "" when none
// failed.
func (o *outcome) summary(phase string) string {
	if o.failed == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d %s requests failed: %s", o.failed, o.total, phase, topErrors(o.errs, 3))
}
