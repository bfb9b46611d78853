//go:build race

package loadgen_test

// sendBound is how far from its scheduled time a replayed request may be
// sent. The race detector slows every goroutine switch several times, so
// under -race the bound is 50 ms; the 5 ms of the trace-replay requirement
// is checked without it (.ci/run runs TestReplayAzureOnTime so as well).
const sendBound = 0.050
