// Package layers holds the test that keeps joulebench's import graph
// pointing down: the load generator and request types below the engine
// clients, the engine kinds independent of each other, telemetry unaware
// of engines. It has no code.
package layers
