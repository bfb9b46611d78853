package workload

import (
	"strings"
	"testing"
)

func TestParseRandomSpec(t *testing.T) {
	tests := []struct {
		in   string
		want RandomSpec
		bad  bool
	}{
		{in: "random", want: RandomSpec{InputLen: 1024, OutputLen: 128}},
		{in: "random:input_len=32,output_len=8,range_ratio=0.5", want: RandomSpec{InputLen: 32, OutputLen: 8, RangeRatio: 0.5}},
		{in: "random:output_len=64", want: RandomSpec{InputLen: 1024, OutputLen: 64}},
		{in: "random:range_ratio=1", bad: true},
		{in: "random:input_len=0", bad: true},
		{in: "random:colour=red", bad: true},
		{in: "random:input_len", bad: true},
		{in: "randomly", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseRandomSpec(tt.in)
		if (err != nil) != tt.bad || (!tt.bad && got != tt.want) {
			t.Errorf("%s: %+v, %v", tt.in, got, err)
		}
		if !tt.bad {
			back, err := ParseRandomSpec(got.String())
			if err != nil || back != got {
				t.Errorf("%s: String() %q does not read back", tt.in, got.String())
			}
		}
	}
}

func TestRandom(t *testing.T) {
	spec := RandomSpec{InputLen: 20, OutputLen: 10, RangeRatio: 0.5}
	set, err := Random(spec, Options{Count: 300, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Prompts) != 300 || set.Unique != 300 || set.Options.Seed != 7 {
		t.Fatalf("%d prompts, unique %d, seed %d", len(set.Prompts), set.Unique, set.Options.Seed)
	}
	// input in [20·0.5, 20·1.5] = [10, 30] words, output in [5, 15]; over
	// 300 draws every end of both ranges is hit (the chance that one of 21
	// values is never drawn is 21·(20/21)^300 ≈ 1e-5).
	seenIn, seenOut := map[int]bool{}, map[int]bool{}
	ids := map[string]bool{}
	for _, p := range set.Prompts {
		n := len(strings.Fields(p.Prompt))
		if n < 10 || n > 30 || p.MaxTokens < 5 || p.MaxTokens > 15 {
			t.Fatalf("%s: %d words, max_tokens %d", p.ID, n, p.MaxTokens)
		}
		seenIn[n], seenOut[p.MaxTokens] = true, true
		ids[p.ID] = true
	}
	if !seenIn[10] || !seenIn[30] || !seenOut[5] || !seenOut[15] || len(ids) != 300 {
		t.Errorf("range ends not all drawn or ids repeat: in %v out %v ids %d", seenIn, seenOut, len(ids))
	}
	again, _ := Random(spec, Options{Count: 300, Seed: 7})
	other, _ := Random(spec, Options{Count: 300, Seed: 8})
	if again.SHA256 != set.SHA256 || other.SHA256 == set.SHA256 {
		t.Error("the seed does not decide the set")
	}
	// Range ratio 0: every prompt has exactly the lengths asked for.
	fixed, err := Random(RandomSpec{InputLen: 12, OutputLen: 3}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fixed.Prompts) != DefaultRandomCount {
		t.Errorf("count 0 gave %d prompts", len(fixed.Prompts))
	}
	for _, p := range fixed.Prompts[:5] {
		if len(strings.Fields(p.Prompt)) != 12 || p.MaxTokens != 3 {
			t.Errorf("%s: %q max %d", p.ID, p.Prompt, p.MaxTokens)
		}
	}
	// A fixed max_tokens still overrides the drawn output length.
	over, _ := Random(spec, Options{Count: 3, MaxTokens: 99})
	if over.Prompts[0].MaxTokens != 99 {
		t.Errorf("max_tokens %d", over.Prompts[0].MaxTokens)
	}
	if _, err := Open("random:input_len=4,output_len=2", Options{Count: 2}); err != nil {
		t.Error(err)
	}
}

func TestSamplingRecorded(t *testing.T) {
	set, err := Open("chat", Options{Count: 100, Shuffle: true, Seed: 3, Repeat: true})
	if err != nil {
		t.Fatal(err)
	}
	// 41 prompts, 100 requests: ⌈100/41⌉ = 3 rounds.
	want := "100 requests from 41 prompts in a seeded shuffle (PCG, seed 3), the order repeated 3 times (round k ≥ 2 appends ~k to the id)"
	if set.Sampling != want || set.Unique != 41 {
		t.Errorf("sampling %q, unique %d", set.Sampling, set.Unique)
	}
	ids := map[string]bool{}
	for _, p := range set.Prompts {
		if ids[p.ID] {
			t.Fatalf("id %s twice", p.ID)
		}
		ids[p.ID] = true
	}
	if !ids[set.Prompts[0].ID+"~3"] && set.Prompts[82].ID != set.Prompts[0].ID+"~3" {
		t.Errorf("third round id %s", set.Prompts[82].ID)
	}
	plain, _ := Open("code", Options{})
	if plain.Sampling != "20 of 20 prompts in file order" {
		t.Errorf("sampling %q", plain.Sampling)
	}
	if _, err := Open("sharegpt", Options{}); err == nil || !strings.Contains(err.Error(), "downloaded") {
		t.Errorf("Open(sharegpt): %v", err)
	}
}
