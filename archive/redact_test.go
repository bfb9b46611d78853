package archive

import (
	"encoding/json"
	"github.com/joulebench/joulebench/archive/record"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WithRedact passes run.json, results.json and every request's error
// through the function given, and run.json stays valid JSON even when a
// secret is also JSON syntax (a password "true").
func TestWriterRedacts(t *testing.T) {
	cases := []struct {
		name, secret string
	}{
		{"plain secret", "sk-s3cret"},
		{"secret that is JSON syntax", "true"},
		{"secret that is a number", "0.03"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hide := func(s string) string { return strings.ReplaceAll(s, c.secret, "[redacted]") }
			dir := filepath.Join(t.TempDir(), "run")
			m := testMeta()
			m.Reason = "engine said: bad key " + c.secret
			w, err := Create(dir, m, WithRedact(hide))
			if err != nil {
				t.Fatal(err)
			}
			if err := w.AppendRequest(record.Request{ID: "r1", Phase: "formal", Error: "http 401: key " + c.secret + " refused"}); err != nil {
				t.Fatal(err)
			}
			if err := w.UpdateMeta(func(m *record.Meta) { m.Status, m.Reason = record.StatusFailed, "failed with "+c.secret }); err != nil {
				t.Fatal(err)
			}
			if err := w.WriteResults(record.Results{RunID: "r-001", ExcludeReason: "x " + c.secret}); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{RunFile, RequestsFile, ResultsFile} {
				b, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if f != RequestsFile && !json.Valid(b) {
					t.Errorf("%s is not valid JSON after redaction:\n%s", f, b)
				}
				if strings.Contains(string(b), "key "+c.secret) || strings.Contains(string(b), "with "+c.secret) || strings.Contains(string(b), "x "+c.secret) {
					t.Errorf("%s shows the secret:\n%s", f, b)
				}
			}
			run, err := Load(dir)
			if err != nil {
				t.Fatalf("the redacted archive does not read back: %v", err)
			}
			if run.Meta.Reason != "failed with [redacted]" || run.Requests[0].Error != "http 401: key [redacted] refused" {
				t.Errorf("reason %q, error %q", run.Meta.Reason, run.Requests[0].Error)
			}
		})
	}
}
