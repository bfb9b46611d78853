package chunkset

import (
	"fmt"
	"testing"
)

func TestCounter(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   int
	}{
		{"too few chunks to say", []string{"a", "a", "a"}, 0},
		{"one token repeated", []string{" the", " the", " the", " the", " the", " the", " the", " the"}, 1},
		// A first chunk that differs, then one token repeated: 2.
		{"first differs", []string{"The", " the", " the", " the", " the", " the", " the", " the", " the"}, 2},
		{"varied text", []string{"Once", " upon", " a", " time", ",", " there", " was", " a", " fox"}, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Counter
			for _, s := range tt.chunks {
				c.Add(MixString(Seed, s))
			}
			if got := c.Distinct(); got != tt.want {
				t.Errorf("Distinct() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCounterSaturates(t *testing.T) {
	var c Counter
	for i := 0; i < 3*Max; i++ {
		c.Add(MixString(Seed, fmt.Sprint(i)))
	}
	if got := c.Distinct(); got != Max {
		t.Errorf("Distinct() = %d, want the cap %d", got, Max)
	}
}

func TestMixMatchesMixString(t *testing.T) {
	// FNV-1a 64 of "a": (offset ^ 0x61) * prime = 0xaf63dc4c8601ec8c
	// (the published test vector).
	if got := Mix(Seed, []byte("a")); got != 0xaf63dc4c8601ec8c {
		t.Errorf("Mix(a) = %#x", got)
	}
	if Mix(Seed, []byte("hello")) != MixString(Seed, "hello") {
		t.Error("Mix and MixString differ")
	}
}
