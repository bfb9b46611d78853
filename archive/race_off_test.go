//go:build !race

package archive

// raceOn: the race detector is on (race_on_test.go).
const raceOn = false
