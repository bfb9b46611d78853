//go:build !race

package loadgen_test

// sendBound is how far from its scheduled time a replayed request may be
// sent: 5 ms (the trace-replay requirement; see race_on_test.go).
const sendBound = 0.005
