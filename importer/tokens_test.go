package importer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
)

// importOffline imports the fixture submission's Offline run_1 as the
// help says and returns the run directory: two synthetic requests of
// 2,500,000 output tokens (250,000 tokens/s × the 20 s window; see
// TestImportMLPerfSubmission), import.output_tokens 5,000,000.
func importOffline(t *testing.T) string {
	t.Helper()
	dir := mlperfRun("Offline", "run_1")
	q := Request{Format: "ptdaemon", File: filepath.Join(dir, "spl.txt"), Loadgen: filepath.Join(dir, "mlperf_log_detail.txt"),
		Out: filepath.Join(t.TempDir(), "run"), Profile: "benchmark-1.0"}
	if _, err := Import(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	return q.Out
}

// rewrite replaces the whole of file in dir with what edit makes of it.
func rewrite(t *testing.T, dir, file string, edit func(string) string) {
	t.Helper()
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	after := edit(string(b))
	if after == string(b) {
		t.Fatalf("the edit changed nothing in %s", file)
	}
	if err := os.WriteFile(p, []byte(after), 0o644); err != nil {
		t.Fatal(err)
	}
}

// synthLine is a synthetic request line of the Offline import's window
// (12:00:01.5 .. 12:00:21.5 on 2025-10-19) with id and tokens.
func synthLine(id string, tokens int) string {
	return fmt.Sprintf(`{"id":%q,"phase":"formal","sent_at":1760875201.5,"first_token_at":1760875201.5,"done_at":1760875221.5,"output_tokens":%d,"tokens_source":"user","ok":true,"synthetic":true}`+"\n", id, tokens)
}

// An imported run's synthetic requests carry exactly the output tokens
// the import recorded (run.json import.output_tokens), and an imported
// run's requests are synthetic, standing for the formal window. The
// third attack raised the synthetic requests' tokens 100-fold (node
// J/token 0.02 → 0.0002) and set synthetic false (TTFT 0.0 ms from the
// window's times), both read with exit 0; each edit is now refused with
// the file, the line (run.json: line and column) and the field.
func TestImportedRequestsHeldToTheImport(t *testing.T) {
	const tokens = `"output_tokens":2500000,`
	// 100 × 5,000,000 tokens: the two requests and 118 lines of
	// 4,194,304 (2 × 2,500,000 + 118 × 4,194,304 = 499,927,872); the sum
	// passes 5,000,000 on line 3: 5,000,000 + 4,194,304 = 9,194,304.
	var extra strings.Builder
	for i := range 118 {
		extra.WriteString(synthLine(fmt.Sprintf("extra-%d", i), 4194304))
	}
	for _, tc := range []struct {
		name string
		edit func(string) string
		file string // where the error is
		line int    // 0: run.json, at import.output_tokens
		msg  string
	}{
		{"the attack: 100 times the tokens", func(s string) string { return s + extra.String() }, archive.RequestsFile, 3,
			`request "extra-0": output_tokens: the synthetic requests' output_tokens add up to 9194304 by this line, above run.json's import.output_tokens 5000000`},
		// 2,500,000 + 4,194,304 = 6,694,304 on line 2.
		{"a request's tokens raised", func(s string) string {
			i := strings.LastIndex(s, tokens)
			return s[:i] + `"output_tokens":4194304,` + s[i+len(tokens):]
		}, archive.RequestsFile, 2, `request "imported-window-2": output_tokens: the synthetic requests' output_tokens add up to 6694304 by this line`},
		{"a request's tokens lowered", func(s string) string { return strings.Replace(s, tokens, `"output_tokens":1000000,`, 1) }, archive.RunFile, 0,
			`import.output_tokens is 5000000 but the synthetic requests of`},
		{"a request deleted", func(s string) string { return s[strings.Index(s, "\n")+1:] }, archive.RunFile, 0,
			`carry 2500000; an import's requests carry exactly the tokens it recorded`},
		// Not synthetic, 2,500,000 tokens have no evidence of their own
		// either (no text, and 20 s hold at most 10,000 × 20 + 64); with
		// fewer, the import refuses it.
		{"synthetic false", func(s string) string { return strings.Replace(s, `,"synthetic":true`, ``, 1) }, archive.RequestsFile, 1,
			`request "imported-window-1": output_tokens 2500000 has no evidence`},
		{"synthetic false, few tokens", func(s string) string {
			return strings.Replace(strings.Replace(s, `,"synthetic":true`, ``, 1), tokens, `"output_tokens":20000,`, 1)
		}, archive.RequestsFile, 1, `request "imported-window-1": synthetic is false in an imported run`},
		{"moved off the window", func(s string) string {
			return strings.Replace(s, `"done_at":1760875221.5`, `"done_at":1760875211.5`, 1)
		}, archive.RequestsFile, 1,
			`request "imported-window-1": sent_at 1760875201.5, first_token_at 1760875201.5, done_at 1760875211.5: a synthetic request stands for the formal window`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := importOffline(t)
			rewrite(t, dir, archive.RequestsFile, tc.edit)
			_, err := archive.LoadData(dir)
			where := filepath.Join(dir, tc.file) + ":"
			if tc.line > 0 {
				where = fmt.Sprintf("%s:%d: ", filepath.Join(dir, tc.file), tc.line)
			}
			if err == nil || !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v\nwant %q and %q", err, where, tc.msg)
			}
		})
	}
}

// The engine kinds the reader knows an imported run by are the
// importer's.
func TestImportedKindsAreTheReaders(t *testing.T) {
	for _, kind := range []string{EngineKind, EngineKindRanging} {
		dir := importOffline(t)
		rewrite(t, dir, archive.RunFile, func(s string) string {
			var m map[string]any
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				t.Fatal(err)
			}
			delete(m, "import")
			m["engine"].(map[string]any)["kind"] = kind
			b, err := json.MarshalIndent(m, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		})
		_, err := archive.LoadData(dir)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf(`engine.kind %q is an imported run's, but run.json has no import object`, kind)) {
			t.Errorf("%s without import: %v", kind, err)
		}
	}
}
