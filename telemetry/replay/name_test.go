package replay

import (
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// Readers of archives (report, plot) tell replayed power by the source
// name run.json records: the one this source writes.
func TestNameIsTheArchivedReplaySource(t *testing.T) {
	if Name != record.ReplayedSource {
		t.Fatalf("source %q, archives say %q", Name, record.ReplayedSource)
	}
}
