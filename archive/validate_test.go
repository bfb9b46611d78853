package archive

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// The reader decodes a file, then validates it; the error reported is
// still the first in the file, whichever phase finds it: a rule broken on
// a line before the line that ended decoding, else that line's decoding
// error. The ids' uniqueness is held only once every line keeps to the
// rules and decodes.
func TestFirstErrorInFileAcrossPhases(t *testing.T) {
	const (
		failedWithTokens = `{"id":"b","phase":"formal","sent_at":1,"output_tokens":3,"ok":false}`
		badJSON          = `{"id":"c",`
	)
	for _, tc := range []struct {
		name  string
		lines []string
		line  int
		msg   string
	}{
		{"rule before a decoding error", []string{okReq, failedWithTokens, badJSON}, 2, `request "b": output_tokens 3 in a failed request`},
		{"decoding error before a rule", []string{okReq, badJSON, failedWithTokens}, 2, "invalid JSON"},
		{"rule after a repeated id", []string{okReq, okReq, failedWithTokens}, 3, `request "b": output_tokens 3 in a failed request`},
		{"repeated id alone", []string{okReq, okReq}, 2, `duplicate request id "a" (first on line 1)`},
	} {
		t.Run("requests/"+tc.name, func(t *testing.T) {
			_, err := ReadRequests(strings.NewReader(strings.Join(tc.lines, "\n")+"\n"), "")
			lineErr(t, err, tc.line, tc.msg)
		})
	}
	for _, tc := range []struct {
		name, in string
		line     int
		msg      string
	}{
		{"rule before a decoding error", hdr + "1,gpu0,-5,,\n1,gpu0,x,,\n", 2, "column power_w: -5 W is negative"},
		{"decoding error before a rule", hdr + "1,gpu0,x,,\n1,gpu0,-5,,\n", 2, `column power_w: invalid number "x"`},
		// Line 3 goes back in time (a rule over the rows before it), line
		// 4 does not decode.
		{"order before a decoding error", hdr + "2,gpu0,5,,\n1,gpu0,5,,\n1,gpu0,,,\n", 3, "column t: time goes back"},
	} {
		t.Run("power/"+tc.name, func(t *testing.T) {
			_, err := ReadPowerCSV(strings.NewReader(tc.in), "")
			lineErr(t, err, tc.line, tc.msg)
		})
	}
}

// In Load, a rule run.json breaks is reported alone, before any data
// file's error (decoding or rule), as when run.json was validated before
// the data files were read.
func TestLoadReportsRunJSONFirst(t *testing.T) {
	dir := sampleCopy(t)
	editArchive(t, dir, RunFile, `"status": "complete",`, `"status": "done",`)
	editArchive(t, dir, RequestsFile, `{"id":"f3",`, `{"id":3,`)
	editArchive(t, dir, PowerFile, "1717405200,gpu0,60,", "1717405200,gpu0,-60,")
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, RunFile)) || !strings.Contains(err.Error(), `status "done" is not a run status`) ||
		strings.Contains(err.Error(), RequestsFile) || strings.Contains(err.Error(), PowerFile) {
		t.Fatalf("error %v; want run.json's status alone", err)
	}
	// With run.json fixed, each data file's first error, joined.
	editArchive(t, dir, RunFile, `"status": "done",`, `"status": "complete",`)
	_, err = Load(dir)
	for _, want := range []string{filepath.Join(dir, PowerFile) + ":2: column power_w: -60 W is negative", filepath.Join(dir, RequestsFile) + ":3:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v; want %q", err, want)
		}
	}
}

// Line numbers survive the batches a JSON-lines file is decoded in (and
// the blank lines skipped): a rule broken, or an id repeated, in a later
// batch names its own line and the first one's.
func TestLinesAcrossBatches(t *testing.T) {
	var sb strings.Builder
	line := 0
	add := func(s string) {
		sb.WriteString(s + "\n")
		line++
	}
	add(okReq)
	for i := range 3 * batchLines {
		if i%1000 == 999 {
			add("")
		}
		add(fmt.Sprintf(`{"id":"r%d","phase":"formal","sent_at":1,"output_tokens":0,"ok":false}`, i))
	}
	add(okReq) // "a" again
	in := sb.String()
	_, err := ReadRequests(strings.NewReader(in), "")
	lineErr(t, err, line, `duplicate request id "a" (first on line 1)`)
	// Line 2*batchLines+10 (a blank line every 1000 lines before it)
	// breaks a rule: reported before the repeated id.
	lines := strings.Split(in, "\n")
	const bad = 2*batchLines + 10
	lines[bad-1] = strings.Replace(lines[bad-1], `"output_tokens":0`, `"output_tokens":3`, 1)
	_, err = ReadRequests(strings.NewReader(strings.Join(lines, "\n")), "")
	lineErr(t, err, bad, "output_tokens 3 in a failed request")
}
