package archive

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// sampleOKCopy copies testdata/sample-run-ok (the sample run without its
// failed request) into a new directory and returns it.
func sampleOKCopy(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{RunFile, PowerFile, RequestsFile, EngineMetricsFile} {
		copyFile(t, filepath.Join("testdata", "sample-run-ok", f), filepath.Join(dir, f))
	}
	return dir
}

// f2 of sample-run-ok (requests.jsonl line 4): 100 output tokens from
// usage, 420 characters, max_tokens 512, three chunks of 1 + 50 + 49
// tokens.
const (
	f2Tokens = `"output_tokens":100,`
	f2Chars  = `"output_chars":420,`
	f2Counts = `,"token_counts":[1,50,49]`
	f2Limit  = `,"max_tokens":512,"engine":"sim"}
{"id":"f6"`
	f2NoLimit = `,"engine":"sim"}
{"id":"f6"`
)

// tokenEdit is one or more edits of sample-run-ok's requests.jsonl (old →
// new, in order) and the error Load must give on f2's line ("" when the
// archive keeps to the rules).
type tokenEdit struct {
	name  string
	edits [][2]string
	msg   string
}

// A request's output tokens are bounded by its own evidence
// (docs/archive-v1.md, requests.jsonl "Evidence of output tokens"). The
// third attack removed max_tokens and token_times from a line and set
// output_tokens to 4,194,304 (the per-request cap): 57.9 M tok/s with
// exit 0. Without max_tokens the request's text bounds it: f2's 420
// characters hold at most 4 × 420 + 64 = 1744 tokens; without any text
// either, its time (10,000 tokens/s from sent_at to done_at). An estimate (tokens_source estimate) is at
// most max(1, 420/4) = 105.
func TestOutputTokensNeedEvidence(t *testing.T) {
	noLimit := [2]string{f2Limit, f2NoLimit}
	noTimes := [2]string{"," + f2Times + f2Counts, ""}
	noChars := [2]string{f2Chars, ""}
	tokens := func(n int) [2]string { return [2]string{f2Tokens, fmt.Sprintf(`"output_tokens":%d,`, n)} }
	estimate := [2]string{`"tokens_source":"usage","output_chars":420`, `"tokens_source":"estimate","output_chars":420`}
	for _, tc := range []tokenEdit{
		{"the attack: no max_tokens, no token_times, 4194304 tokens", [][2]string{noLimit, noTimes, tokens(4194304)},
			`request "f2": output_tokens 4194304 has no evidence: the request has no max_tokens, and its 420 characters of text (output_chars) hold at most 1744 tokens`},
		{"no max_tokens, one token above the text's bound", [][2]string{noLimit, noTimes, tokens(1745)}, "output_tokens 1745 has no evidence"},
		{"no max_tokens, at the text's bound", [][2]string{noLimit, noTimes, tokens(1744)}, ""},
		{"no max_tokens, token_counts kept, above the text's bound", [][2]string{noLimit, [2]string{f2Counts, `,"token_counts":[1,50,2000]`}, tokens(2051)},
			"output_tokens 2051 has no evidence"},
		// Without text either, its time: f2 took 12.25 − 10.002 = 2.248 s,
		// in which at most 10,000 × 2.248 + 64 = 22544 tokens arrive
		// (22543.999… in float64: 1717405210.002 is not exact).
		{"the attack without text", [][2]string{noLimit, noTimes, noChars, tokens(4194304)},
			`request "f2": output_tokens 4194304 has no evidence: the request has no max_tokens and no output_chars, and in its 2.248 s from sent_at to done_at at most 22543 tokens arrive`},
		{"no max_tokens and no text, above the time's bound", [][2]string{noLimit, noTimes, noChars, tokens(22545)}, "output_tokens 22545 has no evidence"},
		{"no max_tokens and no text, within the time's bound", [][2]string{noLimit, noTimes, noChars, tokens(22543)}, ""},
		{"max_tokens bounds it, not the text", [][2]string{noTimes, noChars, tokens(512)}, ""},
		// The attack again with max_tokens raised to the cap instead of
		// removed (57.9 M tok/s, exit 0, before the time bound held every
		// request): f2's time bounds it as above, 22543 tokens in its
		// 2.248 s, whatever its max_tokens and text.
		{"the attack with max_tokens raised to the cap", [][2]string{{f2Limit, strings.Replace(f2Limit, "512", "4194304", 1)}, noTimes, tokens(4194304)},
			`request "f2": output_tokens 4194304 has no evidence: in its 2.248 s from sent_at to done_at at most 22543 tokens arrive`},
		{"within max_tokens, above the time's bound", [][2]string{{f2Limit, strings.Replace(f2Limit, "512", "30000", 1)}, noTimes, tokens(22545)},
			"output_tokens 22545 has no evidence: in its 2.248 s"},
		{"within max_tokens, at the time's bound", [][2]string{{f2Limit, strings.Replace(f2Limit, "512", "30000", 1)}, noTimes, noChars, tokens(22543)}, ""},
		{"estimate above its text", [][2]string{estimate, noTimes, tokens(106)},
			`request "f2": output_tokens 106 is above the estimate of its text: tokens_source estimate is max(1, output_chars/4) = 105 for 420 characters`},
		{"estimate of its text", [][2]string{estimate, noTimes, tokens(105)}, ""},
		{"estimate without text", [][2]string{estimate, noTimes, noChars, tokens(2)}, "max(1, output_chars/4) = 1 for 0 characters"},
		// As the live writer records a stream (token_times, no
		// token_counts) with the server's count above the chunks: several
		// tokens in a chunk, within max_tokens.
		{"more tokens than chunks, within max_tokens", [][2]string{[2]string{f2Counts, ""}, tokens(512)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := sampleOKCopy(t)
			line := 0
			for _, e := range tc.edits {
				line = editArchive(t, dir, RequestsFile, e[0], e[1])
			}
			run, err := Load(dir)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				assertBounds(t, run)
				return
			}
			where := fmt.Sprintf("%s:%d:", filepath.Join(dir, RequestsFile), line)
			if err == nil || !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v\nwant %q and %q", err, where, tc.msg)
			}
		})
	}
}

// Synthetic requests belong to imported runs only, and an imported run's
// requests are synthetic (importer tests hold a real import to the
// same). A measured request marked synthetic would be left out of every
// latency figure; a run claiming the imported engine kind without its
// import object would read as an import.
func TestSyntheticOnlyInImportedRuns(t *testing.T) {
	t.Run("synthetic request in a measured run", func(t *testing.T) {
		dir := sampleOKCopy(t)
		line := editArchive(t, dir, RequestsFile, f2Tokens, f2Tokens+`"synthetic":true,`)
		_, err := Load(dir)
		want := fmt.Sprintf(`%s:%d: request "f2": synthetic is true in a run joulebench measured`, filepath.Join(dir, RequestsFile), line)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant %q", err, want)
		}
	})
	t.Run("imported engine kind without import", func(t *testing.T) {
		dir := sampleOKCopy(t)
		line := editArchive(t, dir, RunFile, `"kind": "sim",`, `"kind": "imported",`)
		_, err := Load(dir)
		want := fmt.Sprintf(`%s:%d:`, filepath.Join(dir, RunFile), line)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `engine.kind "imported" is an imported run's, but run.json has no import object`) {
			t.Errorf("error %v\nwant %q", err, want)
		}
	})
}

// assertTokenEvidence fails t when run holds a request whose output
// tokens break what docs/archive-v1.md (requests.jsonl, "Evidence of
// output tokens") states, written from the document: at most 10,000
// tokens a second from sent_at to done_at + 64; without max_tokens, at
// most 4 × output_chars + 64 too; an estimate at most max(1,
// output_chars/4); single_token_chunks: one token a chunk; synthetic
// requests exactly in an imported run, over its formal window, adding up
// to import.output_tokens.
func assertTokenEvidence(t *testing.T, run *record.Run) {
	t.Helper()
	m := run.Meta
	formal, _ := m.StageByName("formal")
	sum := 0
	for _, q := range run.Requests {
		if q.Synthetic != (m.Import != nil) {
			t.Errorf("accepted request %q synthetic=%v in a run with import %v", q.ID, q.Synthetic, m.Import != nil)
		}
		if q.Synthetic {
			sum += q.OutputTokens
			if q.SentAt != formal.Start || q.FirstTokenAt != formal.Start || q.DoneAt != formal.End {
				t.Errorf("accepted synthetic request %q off the formal window: %+v", q.ID, q)
			}
			continue
		}
		if !q.OK {
			continue
		}
		if float64(q.OutputTokens) > 10000*(q.DoneAt-q.SentAt)+64 {
			t.Errorf("accepted request %q: %d output tokens in %v s", q.ID, q.OutputTokens, q.DoneAt-q.SentAt)
		}
		if q.MaxTokens == 0 && q.OutputChars > 0 && q.OutputTokens > 4*q.OutputChars+64 {
			t.Errorf("accepted request %q: %d output tokens without max_tokens, %d characters", q.ID, q.OutputTokens, q.OutputChars)
		}
		if q.SingleTokenChunks && (q.TokenCounts != nil || q.OutputTokens != len(q.TokenTimes)) {
			t.Errorf("accepted request %q: single_token_chunks with %d tokens, %d chunks, token_counts %v", q.ID, q.OutputTokens, len(q.TokenTimes), q.TokenCounts)
		}
		if q.TokensSource == "estimate" && q.OutputTokens > max(1, q.OutputChars/4) {
			t.Errorf("accepted request %q: estimate %d from %d characters", q.ID, q.OutputTokens, q.OutputChars)
		}
	}
	if m.Import != nil && sum != m.Import.OutputTokens {
		t.Errorf("accepted an import of %d output tokens whose requests carry %d", m.Import.OutputTokens, sum)
	}
	if m.Import == nil && (m.Engine.Kind == "imported" || m.Engine.Kind == "imported-ranging") {
		t.Errorf("accepted engine kind %q without import", m.Engine.Kind)
	}
}

// The third attack's second edit: in a run as the simulator streams it
// (one token a chunk, the server's count equal to the chunks, no
// token_counts), output_tokens raised to max_tokens where the token times
// show fewer (0.197 instead of 0.243 J/token). The writer marks such a
// request single_token_chunks, and the count is then held to its chunks.
// f2 edited to that form: 3 chunks, 3 tokens, max_tokens 512.
func TestSingleTokenChunksHoldTheCount(t *testing.T) {
	asStreamed := [][2]string{{f2Counts, `,"single_token_chunks":true`}, {f2Tokens, `"output_tokens":3,`}}
	for _, tc := range []tokenEdit{
		{"as the writer marks it", asStreamed, ""},
		{"the attack: raised to max_tokens", append(asStreamed, [2]string{`"output_tokens":3,`, `"output_tokens":512,`}),
			`request "f2": output_tokens 512 but its 3 chunks (token_times) held one token each (single_token_chunks`},
		{"lowered", append(asStreamed, [2]string{`"output_tokens":3,`, `"output_tokens":2,`}), "output_tokens 2 but its 3 chunks"},
		{"a chunk removed", append(asStreamed, [2]string{`1717405211.25,`, ``}), "output_tokens 3 but its 2 chunks"},
		{"with token_counts", [][2]string{{f2Counts, f2Counts + `,"single_token_chunks":true`}}, "single_token_chunks on a request that failed or has token_counts"},
		// Without the mark (archives before it, or a server that put
		// several tokens in a chunk), max_tokens is the bound.
		{"unmarked, raised to max_tokens", [][2]string{{f2Counts, ``}, {f2Tokens, `"output_tokens":512,`}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := sampleOKCopy(t)
			line := 0
			for _, e := range tc.edits {
				line = editArchive(t, dir, RequestsFile, e[0], e[1])
			}
			run, err := Load(dir)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				assertBounds(t, run)
				return
			}
			where := fmt.Sprintf("%s:%d:", filepath.Join(dir, RequestsFile), line)
			if err == nil || !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v\nwant %q and %q", err, where, tc.msg)
			}
		})
	}
}
