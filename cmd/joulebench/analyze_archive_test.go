package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/analysis"
	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/workflow"
)

// sampleRunOK is the sample archive that passes every check (the README's
// example); sampleRun is the same run with one formal request failed.
const sampleRunOK = "../../archive/testdata/sample-run-ok"

// copyArchive copies the files of the run directory src into a new
// directory and returns it.
func copyArchive(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// replaceIn replaces old (which must be there) with new in dir/name.
func replaceIn(t *testing.T, dir, name, old, new string) {
	t.Helper()
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", name, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The README's sample exits 0; the other sample (one formal request of 7
// failed) exits 3 on the fail check formal_requests_succeeded.
func TestSampleArchivesExit(t *testing.T) {
	out, errOut, code := runCLI(t, "analyze", sampleRunOK, "--format", "csv")
	// Hand-computed (archive/testdata/README.md): the 7 formal requests
	// produced 250+350+100+486+400+200 = 1786 tokens in sample-run plus
	// f3's 50 here = 1836, over the 10 s formal stage: 183.6 tok/s.
	if code != exitOK || !strings.Contains(out, "formal_output_tokens,metric,1836,") || !strings.Contains(out, "output_throughput_tok_s,metric,183.6,") {
		t.Errorf("sample-run-ok: exit %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = runCLI(t, "analyze", sampleRun)
	if code != exitChecks || !strings.Contains(errOut, "formal_requests_succeeded") || !strings.Contains(errOut, "1 of 7 formal requests failed") {
		t.Errorf("sample-run: exit %d, want %d\n%s", code, exitChecks, errOut)
	}
}

// analyze evaluates everything again from the raw data: whatever
// results.json holds (garbage, or values that disagree) neither stops it
// nor shows, in the run nor in its baseline.
func TestAnalyzeIgnoresResultsJSON(t *testing.T) {
	for name, content := range map[string]string{
		"garbage":   "{this is not JSON",
		"version 2": `{"format_version": 2}`,
		"lies":      `{"format_version": 1, "order": ["formal_output_tokens"], "values": {"formal_output_tokens": {"kind": "metric", "value": 999999}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := copyArchive(t, sampleRunOK)
			if err := os.WriteFile(filepath.Join(dir, archive.ResultsFile), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"analyze", dir, "--format", "csv"},
				{"analyze", sampleRunOK, "--baseline", dir, "--format", "csv"},
			} {
				out, errOut, code := runCLI(t, args...)
				if code != exitOK || !strings.Contains(out, "formal_output_tokens,metric,1836,") || strings.Contains(out, "999999") {
					t.Errorf("%v: exit %d\n%s\n%s", args, code, out, errOut)
				}
			}
		})
	}
}

// Without its profile.yaml, a run is evaluated with a built-in only when
// that built-in is byte for byte the profile it ran (run.json's
// profile.sha256); otherwise analyze asks for --profile and names the
// change.
func TestAnalyzeMissingArchivedProfile(t *testing.T) {
	src, err := profiles.Read("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	builtin := hex.EncodeToString(sum[:])
	// sample-run-ok's run.json records the sha256 of its profile.yaml.
	kept, err := os.ReadFile(filepath.Join(sampleRunOK, workflow.ProfileFile))
	if err != nil {
		t.Fatal(err)
	}
	keptSum := sha256.Sum256(kept)
	archived := fmt.Sprintf(`"sha256": %q`, hex.EncodeToString(keptSum[:]))
	other := strings.Repeat("0", 64)
	for _, tc := range []struct {
		name    string
		sha     string // run.json's profile.sha256 after the edit
		keep    bool   // keep profile.yaml
		profile string // --profile
		code    int
		msg     string
	}{
		{name: "deleted, sha changed", sha: other, code: exitInvalid,
			msg: fmt.Sprintf(`has no profile.yaml, and built-in profile "benchmark-1.5" has changed since the run (sha256 %s now, %s in run.json): give --profile benchmark-1.5`, builtin, other)},
		{name: "deleted, no sha", sha: "", code: exitInvalid, msg: "records no profile.sha256, so whether the run used today's built-in \"benchmark-1.5\" cannot be told: give --profile"},
		{name: "deleted, sha of today's built-in", sha: builtin, code: exitOK},
		// The run's own parameters are applied to another profile too
		// (the sample's release_hold of 5 s); --set gives it again.
		{name: "deleted, sha changed, --profile given", sha: other, profile: "benchmark-1.5", code: exitOK},
		{name: "kept but edited", sha: other, keep: true, code: exitInvalid, msg: "the profile was edited after the run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyArchive(t, sampleRunOK)
			replaceIn(t, dir, archive.RunFile, archived, fmt.Sprintf(`"sha256": %q`, tc.sha))
			if !tc.keep {
				if err := os.Remove(filepath.Join(dir, workflow.ProfileFile)); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"analyze", dir}
			if tc.profile != "" {
				args = append(args, "--profile", tc.profile, "--set", "release_hold=5s")
			}
			_, errOut, code := runCLI(t, args...)
			if code != tc.code || !strings.Contains(errOut, tc.msg) {
				t.Errorf("exit %d, want %d and %q\n%s", code, tc.code, tc.msg, errOut)
			}
		})
	}
}

// A run.json with many parameters the profile does not have gives one
// error each, but at most analysis.MaxListedErrors of them are listed; past
// archive.MaxParameters the archive is refused before anything is decoded.
func TestAnalyzeBoundsArchivedParameterErrors(t *testing.T) {
	for _, tc := range []struct {
		n      int
		listed int
		msg    string
	}{
		{3, 3, ""},
		{500, analysis.MaxListedErrors, fmt.Sprintf("… and %d more errors (not listed)", 500-analysis.MaxListedErrors)},
		{100000, 0, "parameters has 100016 entries, more than the 1024 a run archive may have"},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			dir := copyArchive(t, sampleRunOK)
			var b strings.Builder
			b.WriteString(`"parameters": {`)
			for i := range tc.n {
				fmt.Fprintf(&b, `"bogus_%d": %d, `, i, i)
			}
			replaceIn(t, dir, archive.RunFile, `"parameters": {`, b.String())
			_, errOut, code := runCLI(t, "analyze", dir)
			if code != exitInvalid || !strings.Contains(errOut, tc.msg) {
				t.Fatalf("exit %d, want %d and %q\n%.2000s", code, exitInvalid, tc.msg, errOut)
			}
			if got := strings.Count(errOut, "unknown parameter"); got != tc.listed {
				t.Errorf("%d errors listed, want %d\n%.3000s", got, tc.listed, errOut)
			}
		})
	}
}
