package workload

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func traceFixture(name string) string { return filepath.Join("testdata", "traces", name) }

// Each public format is read, its first gaps are the file's (worked out by
// hand from the fixtures' first lines), and the file's identity is kept.
func TestLoadTraceFormats(t *testing.T) {
	for _, c := range []struct {
		file, format string
		// gaps from the first timestamp of rows 2 and 3
		second, third time.Duration
		in, out       int // the first row's lengths
	}{
		// 18:15:46.8960500 - 18:15:46.6805900 = 0.21546 s
		{"azure-2023.csv", TraceAzure, 215460 * time.Microsecond, 0, 1550, 104},
		// 00:00:00.048164 - 00:00:00.009930 = 0.038234 s; .075816 - .009930 = 0.065886 s
		{"azure-2024.csv", TraceAzure, 38234 * time.Microsecond, 65886 * time.Microsecond, 2384, 322},
		// 5.09 - 5 = 0.09 s
		{"burstgpt.csv", TraceBurstGPT, 90 * time.Millisecond, 0, 1242, 395},
		// timestamps 0, 39, 559 ms
		{"mooncake.jsonl", TraceMooncake, 39 * time.Millisecond, 559 * time.Millisecond, 2238, 150},
	} {
		t.Run(c.file, func(t *testing.T) {
			tr, err := LoadTrace(TraceSpec{Path: traceFixture(c.file)})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Format != c.format || len(tr.Rows) != 300 || tr.Total != 300 || len(tr.SHA256) != 64 {
				t.Fatalf("format %s, %d of %d rows, sha256 %q", tr.Format, len(tr.Rows), tr.Total, tr.SHA256)
			}
			r := tr.Rows
			if r[0].At != 0 || r[0].Input != c.in || r[0].Output != c.out {
				t.Errorf("first row %+v, want at 0 with %d/%d tokens", r[0], c.in, c.out)
			}
			if d := r[1].At - c.second; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("second row at %v, want %v", r[1].At, c.second)
			}
			if c.third != 0 && r[2].At != c.third {
				t.Errorf("third row at %v, want %v", r[2].At, c.third)
			}
		})
	}
}

// sha256sum of the fixture, and a window with a time scale: rows 6 to 9 of
// azure-2023.csv (lines 6-9) are the four whose offsets lie in [1 s, 3 s)
// (counted with a separate script from the file's timestamps), and the
// first of them, 18:15:47.9189840 - 18:15:46.6805900 = 1.238394 s from the
// trace's start, is sent (1.238394 - 1)·0.5 = 0.119197 s into the replay.
func TestTraceWindowAndScale(t *testing.T) {
	spec, err := ParseTraceSpec("trace:" + traceFixture("azure-2023.csv") + ",scale=0.5,start=1s,duration=2")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := LoadTrace(spec)
	if err != nil {
		t.Fatal(err)
	}
	if tr.SHA256 != "147aac3ff7c87e101700df378d46a1a0a20d29afdf46434de689e029540248fe" {
		t.Errorf("sha256 %s", tr.SHA256)
	}
	if len(tr.Rows) != 4 || tr.Rows[0].Line != 6 {
		t.Fatalf("%d rows from line %d, want 4 from line 6", len(tr.Rows), tr.Rows[0].Line)
	}
	if off, err := tr.Offsets(); err != nil || off[0] != 119197*time.Microsecond {
		t.Errorf("first offset %v (%v), want 119.197ms", off, err)
	}
	if d := tr.Describe(); !strings.Contains(d, tr.SHA256) || !strings.Contains(d, "window 1s to 3s") || !strings.Contains(d, "4 of 300") {
		t.Errorf("describe %q", d)
	}
}

// Rows of a Mooncake trace that share leading hash ids share that prefix
// of their prompts; a trace's set asks for each row's output length.
func TestTraceMooncakePrefixes(t *testing.T) {
	tr, err := LoadTrace(TraceSpec{Path: traceFixture("mooncake.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	set, err := tr.RequestSet(Options{})
	if err != nil {
		t.Fatal(err)
	}
	// rows 1 and 2 both start with blocks 20, 21 (2·512 words), then differ
	a, b := strings.Fields(set.Prompts[0].Prompt), strings.Fields(set.Prompts[1].Prompt)
	if len(a) != 2238 || len(b) != 2507 {
		t.Fatalf("prompt words %d, %d, want the input lengths 2238, 2507", len(a), len(b))
	}
	if strings.Join(a[:1024], " ") != strings.Join(b[:1024], " ") {
		t.Error("rows sharing blocks 20, 21 do not share their first 1024 words")
	}
	if strings.Join(a[1024:1100], " ") == strings.Join(b[1024:1100], " ") {
		t.Error("the third blocks (1000 and 22) are the same text")
	}
	if set.Prompts[0].MaxTokens != 150 || !set.Options.IgnoreEOS || set.Sampling != tr.Describe() {
		t.Errorf("max_tokens %d, ignore_eos %v, sampling %q", set.Prompts[0].MaxTokens, set.Options.IgnoreEOS, set.Sampling)
	}
}

// Bad input names the file and line.
func TestTraceErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, body, want string }{
		{"bad-time.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,10,10\nyesterday,10,10\n", "bad-time.csv:3: timestamp \"yesterday\""},
		{"bad-len.csv", "Timestamp,Model,Request tokens,Response tokens\n1,m,10,x\n", "bad-len.csv:2: response tokens \"x\""},
		{"zero.csv", "Timestamp,Model,Request tokens,Response tokens\n1,m,0,4\n", "zero.csv:2: input 0, output 4"},
		{"header.csv", "time,in,out\n1,2,3\n", "header.csv:1: header"},
		{"moon.jsonl", "{\"timestamp\":0,\"input_length\":5,\"output_length\":1}\n{\"timestamp\":1}\n", "moon.jsonl:2: want timestamp"},
		{"empty-window.jsonl", "{\"timestamp\":0,\"input_length\":5,\"output_length\":1}\n", "no request in the window"},
		// A timestamp past 10⁹ s (10¹² ms) is too large, not negative
		// (1e15 s converted to nanoseconds overflowed to the minimum int64).
		{"burst-huge.csv", "Timestamp,Model,Request tokens,Response tokens\n1e15,m,10,4\n", "burst-huge.csv:2: timestamp \"1e15\": too large: at most 1e+09 seconds"},
		{"moon-huge.jsonl", "{\"timestamp\":1e13,\"input_length\":5,\"output_length\":1}\n", "moon-huge.jsonl:1: timestamp 1e+13: too large: at most 1e+12 milliseconds"},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadTrace(TraceSpec{Path: p, Start: time.Hour})
		if c.name != "empty-window.jsonl" {
			_, err = LoadTrace(TraceSpec{Path: p})
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	for _, c := range []struct{ spec, want string }{
		{"trace:", "no file"},
		{"trace:f.csv,scale=0", "scale=0: must be a number > 0 and at most 1000"},
		{"trace:f.csv,scale=1e12", "scale=1e12: must be a number > 0 and at most 1000"},
		{"trace:f.csv,scale=NaN", "must be a number > 0"},
		{"trace:f.csv,start=-1s", "start=-1s: must be >= 0"},
		{"trace:f.csv,start=1e300", "start=1e300: too large: at most 1e+09 seconds"},
		{"trace:f.csv,duration=2e9", "duration=2e9: too large"},
		{"trace:f.csv,start=300000h", "too large"},
		{"trace:f.csv,duration=soon", "want a duration"},
	} {
		if _, err := ParseTraceSpec(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.spec, err, c.want)
		}
	}
	// Send times never overflow: a scale past the bound is refused even on
	// a Trace made by hand; a row 10⁷ s into the trace at scale 1000 would
	// be sent at 10¹⁰ s, past 10⁹ s (time.Duration's longest is about
	// 9.2·10⁹ s): refused; at scale 2, a row at 1000 s goes at 2000 s.
	tr := &Trace{Source: "t", Spec: TraceSpec{Scale: 1e12}, Rows: []TraceRow{{Line: 2}, {Line: 3, At: 1000 * time.Second}}}
	if off, err := tr.Offsets(); err == nil || !strings.Contains(err.Error(), "scale 1e+12") {
		t.Errorf("scale 1e12: %v, %v", off, err)
	}
	tr.Spec.Scale = 2
	if off, err := tr.Offsets(); err != nil || off[1] != 2000*time.Second {
		t.Errorf("scale 2: %v, %v; want 2000s", off, err)
	}
	tr.Spec.Scale, tr.Rows[1].At = 1000, 1e7*time.Second
	if off, err := tr.Offsets(); err == nil || !strings.Contains(err.Error(), "t:3: 2777h46m40s into the window, scaled by 1000, is sent at 1e+10s") {
		t.Errorf("10⁷ s at scale 1000: %v, %v", off, err)
	}
	// Through ParseTrace: the same, from a file's rows.
	csv := "Timestamp,Model,Request tokens,Response tokens\n0,m,10,4\n1e7,m,10,4\n"
	tr2, err := ParseTrace([]byte(csv), TraceSpec{Path: "b.csv", Scale: 1000})
	if err == nil {
		_, err = tr2.RequestSet(Options{})
	}
	if err == nil || !strings.Contains(err.Error(), "b.csv:3:") {
		t.Errorf("replay past the bound: %v", err)
	}
	if s, err := ParseTraceSpec("trace:a,b.csv,scale=2"); err != nil || s.Path != "a,b.csv" || s.Scale != 2 {
		t.Errorf("trace:a,b.csv,scale=2: %+v, %v", s, err)
	}
}

// Requests of the shared-prefix set share their group's prefix and differ
// in their suffix.
func TestSharedPrefix(t *testing.T) {
	spec, err := ParsePrefixSpec("prefix:prefixes=2,prefix_len=100,suffix_len=10,output_len=7")
	if err != nil {
		t.Fatal(err)
	}
	set, err := SharedPrefix(spec, Options{Count: 5, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	w := func(i int) []string { return strings.Fields(set.Prompts[i].Prompt) }
	for i := range 5 {
		if len(w(i)) != 110 || set.Prompts[i].MaxTokens != 7 {
			t.Fatalf("prompt %d: %d words, max_tokens %d; want 110, 7", i, len(w(i)), set.Prompts[i].MaxTokens)
		}
	}
	same := func(a, b []string) bool { return strings.Join(a, " ") == strings.Join(b, " ") }
	// prompts 0, 2, 4 take prefix 1; 1, 3 prefix 2
	if !same(w(0)[:100], w(2)[:100]) || !same(w(1)[:100], w(3)[:100]) || same(w(0)[:100], w(1)[:100]) {
		t.Error("prefixes not shared by group")
	}
	if same(w(0)[100:], w(2)[100:]) {
		t.Error("suffixes repeat")
	}
	for _, bad := range []string{"prefix:prefixes=0", "prefix:len=3", "prefix:output_len=-1", "prefix:prefix_len=0,suffix_len=0"} {
		if _, err := ParsePrefixSpec(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FitRatio regenerates a generated set at the served model's tokens per
// word, keeping shared prefixes shared: a counter of 2 tokens a word halves
// every length (prefix 100 -> 50 words, suffix 10 -> 5; a Mooncake row of
// 2238 tokens -> 1119 words, its shared 2-block prefix 1024 -> 512).
func TestFitRatio(t *testing.T) {
	twoPerWord := func(_ context.Context, s string) (int, error) { return 2 * len(strings.Fields(s)), nil }
	spec, _ := ParsePrefixSpec("prefix:prefixes=2,prefix_len=100,suffix_len=10,output_len=7")
	set, err := SharedPrefix(spec, Options{Count: 4, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	fit, err := FitRatio(context.Background(), set, twoPerWord, LengthTokenize)
	if err != nil {
		t.Fatal(err)
	}
	a, c := strings.Fields(fit.Prompts[0].Prompt), strings.Fields(fit.Prompts[2].Prompt)
	if len(a) != 55 || strings.Join(a[:50], " ") != strings.Join(c[:50], " ") || fit.LengthMethod != LengthTokenize || fit.Source != set.Source {
		t.Errorf("fitted: %d words, method %s, source %s", len(a), fit.LengthMethod, fit.Source)
	}
	tr, err := LoadTrace(TraceSpec{Path: traceFixture("mooncake.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := tr.RequestSet(Options{})
	if err != nil {
		t.Fatal(err)
	}
	fit, err = FitRatio(context.Background(), ts, twoPerWord, LengthCalibrated)
	if err != nil {
		t.Fatal(err)
	}
	a, c = strings.Fields(fit.Prompts[0].Prompt), strings.Fields(fit.Prompts[1].Prompt)
	if len(a) != 1119 || strings.Join(a[:512], " ") != strings.Join(c[:512], " ") || len(fit.Arrivals) != 300 || fit.Trace == nil {
		t.Errorf("fitted trace: %d words, %d arrivals", len(a), len(fit.Arrivals))
	}
	if _, err := FitRatio(context.Background(), &RequestSet{Source: "x", Prompts: []Prompt{{Prompt: "a"}}}, twoPerWord, LengthTokenize); err == nil {
		t.Error("a dataset file was fitted")
	}
}
