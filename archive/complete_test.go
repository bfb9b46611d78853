package archive

import (
	"fmt"
	"github.com/joulebench/joulebench/archive/record"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A complete run must hold what it measured. The sample run is complete
// with request_set.count 7 (7 formal lines, f3 failed) and two counter
// devices, gpu0 and gpu1 (testdata/README.md).
func TestLoadCompleteRunHoldsItsData(t *testing.T) {
	keepLines := func(n int) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			path := filepath.Join(dir, RequestsFile)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(string(b), "\n")
			if err := os.WriteFile(path, []byte(strings.Join(lines[:n], "")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	writePower := func(content string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, PowerFile), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		edit   func(t *testing.T, dir string)
		status string // run.json's status (the sample's "complete" when empty)
		msg    string // "" when Load must read it
	}{
		// Lines 1-2 are warm-up, 3-9 the 7 formal requests.
		{"half the lines cut at a line boundary", keepLines(5), "", "request_set.count is 7 but %s has 3 formal requests; a complete run records every formal request it sent (failed ones too), so 4 missing"},
		{"the last formal line cut", keepLines(8), "", "request_set.count is 7 but %s has 6 formal requests"},
		{"requests.jsonl deleted", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, RequestsFile)) }, "", "has 0 formal requests"},
		{"all there", keepLines(9), "", ""},
		{"power.csv deleted", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, PowerFile)) }, "",
			"power.csv: missing, but %s lists 2 measured devices (gpu0, gpu1) in a complete run; missing power data is an error, not an absence"},
		{"power.csv header only", writePower(hdr), "", `power.csv: no sample of device "gpu0"`},
		{"one device's rows gone", writePower(hdr + "1717405200,gpu0,60,1000000,536870912\n1717405201,gpu0,60,1000060,536870912\n"), "", `power.csv: no sample of device "gpu1"`},
		// A run that did not complete keeps what it has: nothing is
		// missing from it.
		{"interrupted run, lines cut", keepLines(5), record.StatusInterrupted, ""},
		{"failed run without power", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, PowerFile)) }, record.StatusFailed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := sampleCopy(t)
			tc.edit(t, dir)
			if tc.status != "" {
				editArchive(t, dir, RunFile, `"status": "complete"`, fmt.Sprintf("%q: %q", "status", tc.status))
			}
			_, err := Load(dir)
			if tc.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			msg := tc.msg
			if strings.Contains(msg, "%s") {
				other := filepath.Join(dir, RequestsFile)
				if strings.HasPrefix(tc.name, "power") {
					other = filepath.Join(dir, RunFile)
				}
				msg = fmt.Sprintf(msg, other)
			}
			if err == nil || !strings.Contains(err.Error(), msg) {
				t.Errorf("error %v\nwant %q", err, msg)
			}
		})
	}
}

// A run.json with a million parameters is refused before they are decoded,
// with little memory; up to MaxParameters are read.
func TestParameterCountBoundedBeforeDecoding(t *testing.T) {
	sample, err := os.ReadFile(filepath.Join(sampleRun, RunFile))
	if err != nil {
		t.Fatal(err)
	}
	withParams := func(n int) []byte {
		var b strings.Builder
		b.WriteString(`"parameters": {`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"p%d": %d`, i, i)
		}
		b.WriteString(`, "s": "a,b}{[\"]", "o": {"x": [1, 2]}},` + "\n" + `  "old_parameters": {`)
		return []byte(strings.Replace(string(sample), `"parameters": {`, b.String(), 1))
	}
	for _, tc := range []struct {
		n   int // parameters besides "s" and "o"
		msg string
	}{
		{MaxParameters - 2, ""},
		{MaxParameters - 1, fmt.Sprintf("parameters has %d entries, more than the %d a run archive may have", MaxParameters+1, MaxParameters)},
		{1000000, "parameters has 1000002 entries"},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			dir := t.TempDir()
			doc := withParams(tc.n)
			if err := os.WriteFile(filepath.Join(dir, RunFile), doc, 0o644); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			m, err := ReadMeta(filepath.Join(dir, RunFile))
			runtime.ReadMemStats(&after)
			if tc.msg == "" {
				if err != nil || len(m.Parameters) != tc.n+2 {
					t.Fatalf("%d parameters: %v", len(m.Parameters), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %q", err, tc.msg)
			}
			// Reading the document and copying the parameters' bytes once
			// each: a few times its size, not a map of a million entries
			// (about 100 bytes each).
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*uint64(len(doc)) {
				t.Errorf("refusing %d parameters allocated %d bytes for a %d-byte document", tc.n, alloc, len(doc))
			} else {
				t.Logf("refusing %d parameters allocated %d bytes for a %d-byte document", tc.n, alloc, len(doc))
			}
		})
	}
}

// countMembers counts an object's members, whatever its strings and
// nested values hold.
func TestCountMembers(t *testing.T) {
	for in, want := range map[string]int{
		`{}`: 0, ` { } `: 0, `{"a":1}`: 1, `{"a":1,"b":"x,y"}`: 2, `{"a":{"b":1,"c":[1,2,3]},"d":"\"}"}`: 2,
		`{"a\\":"b","c":[{},{}]}`: 2, "{\n \"a\" : [ ] ,\n \"b\" : { } }": 2,
	} {
		if got := countMembers([]byte(in)); got != want {
			t.Errorf("countMembers(%s) = %d, want %d", in, got, want)
		}
	}
}
