//go:build !race

package workload

// raceDetector is false without -race (see race_on_test.go).
const raceDetector = false
