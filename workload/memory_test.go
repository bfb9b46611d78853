package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// A request count far beyond memory is refused before the prompts are
// allocated (100 million prompts would take tens of GB: the kernel would
// kill the process with no message), and with a message that says why.
func TestRequestSetBoundedByMemory(t *testing.T) {
	const gib = 1 << 30
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := LoadBuiltin("chat", Options{Count: 100_000_000, Repeat: true, MemoryAvailable: gib})
	if err == nil || !strings.Contains(err.Error(), "100000000 requests need an estimated") || !strings.Contains(err.Error(), "more than the limit of 1.0 GiB available") {
		t.Fatalf("got %v, want a refusal naming the count and the memory", err)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
		t.Errorf("allocated %d MiB before refusing", grown>>20)
	}
	// The same set within the bound is fine.
	if _, err := LoadBuiltin("chat", Options{Count: 1000, Repeat: true, MemoryAvailable: gib}); err != nil {
		t.Errorf("1000 requests in 1 GiB: %v", err)
	}
	// Negative: no check.
	if err := checkMemory([]Prompt{{ID: "a"}}, 1<<40, "x", -1); err != nil {
		t.Errorf("check off: %v", err)
	}
}

// The estimate per prompt, by hand: a prompt with id "ab" (2 bytes), text
// of 100 bytes and one message of role "user" (4) and content of 10 bytes
// counts 2+100+64 + 4+10+32 = 212 bytes of text; with the struct and 16
// bytes of id suffix that is unsafe.Sizeof(Prompt{})+16+212, and the run's
// record adds perRequestRunBytes (512). 1000 such requests fit in exactly
// 1000 times that, and not in one byte less.
func TestRequestSetMemoryEstimate(t *testing.T) {
	p := Prompt{ID: "ab", Prompt: strings.Repeat("x", 100), Messages: []Message{{Role: "user", Content: strings.Repeat("y", 10)}}}
	per := int64(unsafe.Sizeof(Prompt{})) + 16 + 212 + 512
	if got := promptBytes([]Prompt{p}) + perRequestRunBytes; got != per {
		t.Fatalf("per request %d, want %d", got, per)
	}
	if err := checkMemory([]Prompt{p}, 1000, "x", 1000*per); err != nil {
		t.Errorf("exact fit: %v", err)
	}
	if err := checkMemory([]Prompt{p}, 1000, "x", 1000*per-1); err == nil {
		t.Error("one byte short: accepted")
	}
}

// A dataset that is not a regular file is refused: /dev/zero would be read
// until memory runs out. So is a file larger than half the memory.
func TestLoadRefusesNonRegularAndHugeFiles(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err := Load("/dev/zero", Options{})
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("/dev/zero: %v", err)
		}
	}
	path := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(path, []byte(`{"prompt":"hello"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// 19 bytes of file (18 + newline) against 32 bytes of memory: more
	// than half (16), refused.
	if _, err := Load(path, Options{MemoryAvailable: 32}); err == nil || !strings.Contains(err.Error(), "more than half") {
		t.Errorf("file over half the memory: %v", err)
	}
	if _, err := Load(path, Options{MemoryAvailable: -1}); err != nil {
		t.Errorf("no bound: %v", err)
	}
}

// A random set is bounded before its prompts are generated: 10⁸ prompts
// need at least 10⁸ × 512 B (the run's share alone) = 51.2 GB, more than
// the 1 GiB given; 10 prompts of 128 words (under 2 KB each) fit.
func TestRandomSetMemoryBound(t *testing.T) {
	spec := RandomSpec{InputLen: 128, OutputLen: 16, RangeRatio: 0}
	_, err := Random(spec, Options{Count: 100_000_000, MemoryAvailable: 1 << 30})
	if err == nil || !strings.Contains(err.Error(), "more than the limit of 1.0 GiB available") {
		t.Fatalf("err = %v, want a refusal naming the 1.0 GiB available", err)
	}
	set, err := Random(spec, Options{Count: 10, MemoryAvailable: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Prompts) != 10 {
		t.Fatalf("got %d prompts, want 10", len(set.Prompts))
	}
}

// Freezing many requests of a repeated prompt hashes the canonical JSON
// prompt by prompt: 2 prompts of 16 KiB drawn 4,000 times make 4,000 ×
// 16 KiB = 62.5 MiB of canonical JSON, which json.Marshal held whole (and
// grew by doubling: 20,000 requests of a 1 MiB prompt took 14 GB before
// the run began). Freezing now allocates far less than that.
func TestFreezeDoesNotHoldCanonicalJSON(t *testing.T) {
	p := filepath.Join(t.TempDir(), "two.jsonl")
	line := jsonlPrompt(16 << 10)
	if err := os.WriteFile(p, []byte(line+"\n"+line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	set, err := Load(p, Options{Count: 4000, Repeat: true, MemoryAvailable: 1 << 30})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 16<<20 && !raceDetector {
		t.Errorf("freezing allocated %d MiB, want under 16 (the canonical JSON is 62.5 MiB)", grown>>20)
	}
	// The streamed hash is the hash of what json.Marshal writes.
	want, err := json.Marshal(canonicalForm{Version: canonicalVersion, Options: set.Options, Prompts: set.Prompts})
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(want); set.SHA256 != hex.EncodeToString(sum[:]) {
		t.Error("streamed sha256 differs from the sha256 of json.Marshal's canonical JSON")
	}
	if got := set.Canonical(); !bytes.Equal(got, want) {
		t.Errorf("Canonical differs from json.Marshal:\n%.200s\n%.200s", got, want)
	}
	empty := &RequestSet{}
	if want, _ := json.Marshal(canonicalForm{Version: canonicalVersion}); !bytes.Equal(empty.Canonical(), want) {
		t.Errorf("no prompts: %s, want %s", empty.Canonical(), want)
	}
}

// The estimate counts a prompt's JSON, not its text: 100 bytes of '<'
// are 600 bytes of JSON (\u003c each), a quote or a newline two, a
// control character six. By hand: id "i" (1) + 64, and
// 100×6 = 600 for "<"×100; 10×2 = 20 for `"`×10; 2 for "\n"; 6 for "\x01";
// 3 for "abc".
func TestMemoryEstimateCountsJSONEscapes(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		{strings.Repeat("<", 100), 600},
		{strings.Repeat(`"`, 10), 20},
		{"\n", 2},
		{"\x01", 6},
		{"\b\f", 4},
		{"abc", 3},
		{"é", 2},
	} {
		if got := jsonLen(tc.text); got != tc.want {
			t.Errorf("jsonLen(%q) = %d, want %d", tc.text, got, tc.want)
		}
		b, _ := json.Marshal(tc.text)
		if got := len(b) - 2; got != tc.want {
			t.Errorf("json.Marshal(%q) has %d bytes inside its quotes, the table says %d", tc.text, got, tc.want)
		}
	}
	// 1,000 requests of a 1 MiB prompt of '<': 6 MiB of JSON each, about
	// 5.9 GiB in all, refused against 4 GiB (the text alone, 1 GiB, fit).
	p := Prompt{ID: "i", Prompt: strings.Repeat("<", 1<<20)}
	err := checkMemory([]Prompt{p}, 1000, "x", 4<<30)
	if err == nil || !strings.Contains(err.Error(), "need an estimated 5.9 GiB") {
		t.Fatalf("got %v, want a refusal estimating 5.9 GiB", err)
	}
}
