package sim

import (
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// Readers of archives (report, plot) tell the simulator by the engine kind
// run.json records: the one this engine writes.
func TestKindIsTheArchivedSimulator(t *testing.T) {
	if Kind != record.SimulatorEngine {
		t.Fatalf("kind %q, archives say %q", Kind, record.SimulatorEngine)
	}
}
