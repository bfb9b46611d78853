//go:build race

package workload

// raceDetector is true under -race, where sync.Pool drops what it holds
// at random: encoding/json then allocates a fresh encoder state for each
// prompt it hashes, so counting the bytes allocated says nothing about
// whether the canonical JSON is held whole (TestFreezeDoesNotHoldCanonicalJSON
// checks it without the race detector; .ci/run runs it so as well).
const raceDetector = true
