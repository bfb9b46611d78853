//go:build race

package archive

// raceOn: the race detector is on; it allocates beside the program, so
// tests that count what the reader allocates or holds are skipped.
const raceOn = true
