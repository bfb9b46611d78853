package archive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// sampleCopy copies the sample run into a new directory and returns it.
func sampleCopy(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{RunFile, PowerFile, RequestsFile, EngineMetricsFile} {
		copyFile(t, filepath.Join(sampleRun, f), filepath.Join(dir, f))
	}
	return dir
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks: %v", err)
	}
}

// A link that stays in the archive is followed; one that leads out of it,
// relative or absolute, is refused without reading the target, so that its
// content (here a secret in what would be the header) never reaches an error.
func TestLoadSymlinks(t *testing.T) {
	dir := sampleCopy(t)
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, PowerFile), filepath.Join(dir, "data", PowerFile)); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join("data", PowerFile), filepath.Join(dir, PowerFile))
	run, err := Load(dir)
	if err != nil {
		t.Fatalf("a link inside the archive: %v", err)
	}
	if len(run.Power) != 62 { // 31 samples × 2 devices (testdata/README.md)
		t.Errorf("power rows through the link: %d, want 62", len(run.Power))
	}

	secret := filepath.Join(filepath.Dir(dir), "secret.csv")
	if err := os.WriteFile(secret, []byte("root:SECRET-PASSWORD-HASH:0:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{filepath.Join("..", "secret.csv"), secret} {
		for _, file := range []string{PowerFile, RequestsFile, RunFile} {
			d := sampleCopy(t)
			symlink(t, target, filepath.Join(d, file))
			_, err := Load(d)
			if err == nil {
				t.Fatalf("%s -> %s: loaded", file, target)
			}
			if !strings.Contains(err.Error(), "leads outside the run directory") {
				t.Errorf("%s -> %s: %v", file, target, err)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("%s -> %s: the target's content is in the error: %v", file, target, err)
			}
		}
	}
}

// endless is an input without a newline that never ends, as /dev/zero.
type endless struct{ read int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.read += int64(len(p))
	return len(p), nil
}

// A line without end stops at MaxLineBytes with an error that says so,
// instead of growing until the kernel kills the process.
func TestLineLengthCap(t *testing.T) {
	for _, tc := range []struct {
		name string
		read func(io.Reader) error
	}{
		{PowerFile, func(r io.Reader) error { _, err := ReadPowerCSV(r, ""); return err }},
		{RequestsFile, func(r io.Reader) error { _, err := ReadRequests(r, ""); return err }},
		{EngineMetricsFile, func(r io.Reader) error { _, err := ReadEngineMetrics(r, ""); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &endless{}
			err := tc.read(src)
			lineErr(t, err, 1, tc.name+":1: line longer than 64 MiB")
			// The reader stops within a buffer of the cap.
			if src.read > MaxLineBytes+1<<20 {
				t.Errorf("read %d bytes, want about %d", src.read, MaxLineBytes)
			}
		})
	}

	// A small cap, to see the line number of a long line after short ones.
	lr := newLineReader(strings.NewReader("ab\ncd\n" + strings.Repeat("z", 10) + "\nok\n"))
	lr.max = 8
	for range 2 {
		if _, _, err := lr.next(); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := lr.next()
	lineErr(t, err, 3, "line longer than 8 bytes")
}

// Duplicates in the data files are refused with the line of the second
// and the line of the first.
func TestDuplicatedLines(t *testing.T) {
	const (
		q1 = `{"id":"a","phase":"formal","sent_at":1,"first_token_at":2,"done_at":3,"output_tokens":2,"ok":true}`
		q2 = `{"id":"b","phase":"formal","sent_at":1,"first_token_at":2,"done_at":3,"output_tokens":2,"ok":true}`
		m1 = `{"t":1,"name":"running","labels":{"a":"1","b":"2"},"value":2}`
		m2 = `{"t":1,"name":"running","labels":{"b":"2","a":"1"},"value":3}` // same series, labels in another order
	)
	_, err := ReadRequests(strings.NewReader(q1+"\n"+q2+"\n\n"+q1+"\n"), "")
	lineErr(t, err, 4, `requests.jsonl:4: duplicate request id "a" (first on line 1)`)

	_, err = ReadEngineMetrics(strings.NewReader(m1+"\n"+strings.Replace(m1, `"t":1`, `"t":2`, 1)+"\n"+m2+"\n"), "")
	lineErr(t, err, 3, "engine_metrics.jsonl:3: duplicate sample of running at t=1 (same name and labels) (first on line 1)")

	_, err = ReadPowerCSV(strings.NewReader(hdr+"1,gpu0,60,,\n1,gpu1,50,,\n2,gpu0,61,,\n1,gpu1,50,,\n"), "")
	lineErr(t, err, 5, "power.csv:5: duplicated line: the same sample of device gpu1 at t=1 as line 3")
	// A second, different sample of one device at one time is refused
	// with the line of the first (the blank line 4 counted).
	_, err = ReadPowerCSV(strings.NewReader(hdr+"1,gpu0,60,,\n2,gpu0,61,,\n\n2,gpu0,62,,\n"), "")
	lineErr(t, err, 5, "power.csv:5: device gpu0 has a second sample at t=2 (line 3)")
	// A time that does not increase makes the rows checked whole from
	// then on: a repeat of an earlier row is named by its line.
	_, err = ReadPowerCSV(strings.NewReader(hdr+"1,gpu0,60,,\n2,gpu0,61,,\n3,gpu0,62,,\n2,gpu0,61,,\n"), "")
	lineErr(t, err, 5, "power.csv:5: duplicated line: the same sample of device gpu0 at t=2 as line 3")

	// Samples of different devices that share a time are not duplicates.
	if _, err := ReadPowerCSV(strings.NewReader(hdr+"1,gpu0,60,,\n1,gpu1,60,,\n2,gpu2,1,,\n2,gpu0,1,,\n"), ""); err != nil {
		t.Errorf("distinct samples: %v", err)
	}
}

// Two stages with one name in run.json are refused at the second name's
// line and column.
func TestDuplicateStageNames(t *testing.T) {
	dir := sampleCopy(t)
	path := filepath.Join(dir, RunFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Line 104 of the sample's run.json is the formal stage (line 101 the
	// baseline): `    {"name": "formal", ...}`; its value starts at
	// column 15 (4 spaces, `{"name": ` is 10 bytes).
	const formal = `{"name": "formal", "start": 1717405210, "end": 1717405220}`
	if !bytes.Contains(b, []byte(formal)) {
		t.Fatal("fixture changed: no formal stage line")
	}
	b = bytes.Replace(b, []byte(`{"name": "warmup"`), []byte(`{"name": "formal"`), 1) // line 103
	b = bytes.Replace(b, []byte(formal), []byte(`{"end": 1717405220, "name": "formal", "start": 1717405210}`), 1)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(dir)
	// Line 104 now reads `    {"end": 1717405220, "name": "formal", ...`:
	// 4 spaces + `{"end": 1717405220, "name": ` (28 bytes) puts the
	// value at column 33.
	want := path + `:104:33: duplicate stage name "formal" (first on line 103)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// failAfter returns its data and then err.
type failAfter struct {
	data []byte
	err  error
}

func (f *failAfter) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// requests.jsonl is read in blocks of whole lines: whatever sizes the
// reads come in, lines longer than a block, CRLF endings, blank lines and
// a last line without newline give the same records and line numbers.
func TestReadRequestsBlocks(t *testing.T) {
	// sent_at 6.5 s before done_at: the 30,000 tokens of the long line
	// arrive within the reader's 10,000 a second (+ 64).
	line := func(id string, times int) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"id":%q,"phase":"formal","sent_at":1717405255.5,"first_token_at":1717405261,"done_at":1717405262,"output_tokens":%d,"max_tokens":%[2]d,"ok":true`, id, max(times, 1))
		if times > 0 {
			b.WriteString(`,"token_times":[`)
			for i := range times {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "1717405261.%07d", i)
			}
			b.WriteByte(']')
		}
		b.WriteByte('}')
		return b.String()
	}
	// A 30,000-token line (~570 KB) is longer than a block (256 KiB).
	text := line("a", 3) + "\r\n\n   \n" + line("long", 30_000) + "\n" + line("b", 0) + "\r\n" + line("c", 2)
	wantIDs := []string{"a", "long", "b", "c"}
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(text) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(text)) },
		"half":     func() io.Reader { return iotest.HalfReader(strings.NewReader(text)) },
	} {
		reqs, err := ReadRequests(r(), "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var ids []string
		for _, q := range reqs {
			ids = append(ids, q.ID)
		}
		if !slices.Equal(ids, wantIDs) || len(reqs[1].TokenTimes) != 30_000 || reqs[1].TokenTimes[29_999] != 1717405261.0029999 {
			t.Errorf("%s: ids %v (want %v), long line with %d times", name, ids, wantIDs, len(reqs[1].TokenTimes))
		}
	}
	// A bad line after the long one is named by its number (5: the blank
	// lines 2 and 3 counted).
	_, err := ReadRequests(iotest.HalfReader(strings.NewReader(line("a", 3)+"\n\n\n"+line("long", 30_000)+"\n{\"id\":1}\n")), "")
	lineErr(t, err, 5, "requests.jsonl:5:")
	// A read error is reported at the line it cut, after the lines read.
	_, err = ReadRequests(&failAfter{data: []byte(line("a", 1) + "\n" + line("b", 1) + "\n{\"id\":"), err: errors.New("disk gone")}, "")
	lineErr(t, err, 3, "requests.jsonl:3: read error: disk gone")
}
