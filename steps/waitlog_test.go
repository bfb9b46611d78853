package steps

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workflow"
)

// The "waiting on requests in flight" line gives the oldest request's age
// with its unit (it read oldest_age=29449: zerolog writes a Dur field as a
// bare number of milliseconds).
func TestWaitLogAgeHasUnit(t *testing.T) {
	var buf bytes.Buffer
	rc := &workflow.RunContext{Log: zerolog.New(zerolog.ConsoleWriter{Out: &buf, NoColor: true})}
	var lc loadgen.Config
	limits(rc, &lc, "formal", 0, 0, 0)
	lc.Watch(loadgen.Waiting{InFlight: 3, Oldest: "r7", OldestAge: 29449 * time.Millisecond, OldestTokens: 12, Tokens: 40})
	if got := buf.String(); !strings.Contains(got, "oldest_age=29.449s") {
		t.Errorf("log line: %s", got)
	}
}
