// Package runprogress holds what a run tells its progress display: a
// snapshot of the stage in progress. The steps produce it and the display
// (internal/progress) draws it; neither imports the other, and this
// package imports nothing of the module.
package runprogress

// Snapshot is where a run stands, for the progress display.
type Snapshot struct {
	Stage      string
	Done, Sent int
	Total      int
	Failed     int
	Tokens     int
	PowerW     float64
	HasPower   bool
}
