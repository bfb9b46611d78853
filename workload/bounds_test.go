package workload

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// jsonlPrompt is one JSONL record {"prompt":"xxx…"} of exactly n bytes
// (the 13 bytes of {"prompt":""} plus n-13 x's).
func jsonlPrompt(n int) string {
	return `{"prompt":"` + strings.Repeat("x", n-13) + `"}`
}

// Records and files are bounded by size, whatever their shape: a record
// at MaxRecordBytes is read, one byte more is refused at its line, in
// JSONL and in a JSON array alike; a 30 MiB prompt (which took 3.6 GB
// in a run) is refused; a file over MaxDatasetBytes is refused before it
// is read.
func TestDatasetSizeCaps(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	huge := filepath.Join(dir, "huge.jsonl")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxDatasetBytes + 1); err != nil { // sparse: no disk
		t.Skipf("sparse file: %v", err)
	}
	f.Close()
	small := jsonlPrompt(20)
	for _, tc := range []struct {
		name, path string
		want       string // "" accepted
	}{
		{"small records", write("small.jsonl", small+"\n"+small+"\n"), ""},
		{"record at the cap", write("atcap.jsonl", small+"\n"+jsonlPrompt(MaxRecordBytes)+"\n"), ""},
		{"record one byte over", write("over.jsonl", small+"\n"+jsonlPrompt(MaxRecordBytes+1)+"\n"), "over.jsonl:2:1: record of 4194305 bytes, more than the 4194304 (4.0 MiB)"},
		{"30 MiB prompt", write("big.jsonl", jsonlPrompt(30<<20)), "big.jsonl:1:1: record of 31457280 bytes"},
		{"array element over", write("over.json", "[\n"+small+",\n  "+jsonlPrompt(MaxRecordBytes+1)+"\n]"), "over.json:3:3: record of 4194305 bytes"},
		{"file over the cap", huge, "huge.jsonl: 2.0 GiB, more than the 2.0 GiB a dataset file may have"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.path, Options{MemoryAvailable: -1})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// A dataset path that is no regular file is refused by kind before it is
// read: a device, a symbolic link to one, a FIFO (a read would block for
// a writer), a directory.
func TestDatasetFileKinds(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix files")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "zero.jsonl")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/dev/zero", link, fifo, dir} {
		t.Run(filepath.Base(p), func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := Load(p, Options{}); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-t.Context().Done():
				t.Fatal("Load blocked")
			}
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("error %v", err)
			}
		})
	}
}

// The memory estimate covers the requests a file dataset is sent as, with
// repeats: one prompt of 1 MiB sent 20,000 times needs about
// 20,000 × (1 MiB + 512 B + the struct) ≈ 19.5 GiB, refused against 4 GiB;
// 2,000 times (about 2 GiB) fits (and so do 20 prompts: freezing 2,000
// would hash 2 GiB of canonical JSON, too slow for a unit test).
func TestFileDatasetRequestsBoundedByMemory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "one.jsonl")
	if err := os.WriteFile(p, []byte(jsonlPrompt(1<<20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		count    int // Options.Count (repeat on)
		requests int // CheckRequests
		want     string
	}{
		{"20,000 prompts", 20_000, 0, "20000 requests need an estimated 19.5 GiB"},
		{"1 prompt sent 20,000 times", 1, 20_000, "20000 requests need an estimated 19.5 GiB"},
		{"20 prompts", 20, 0, ""},
		{"1 prompt sent 2,000 times", 1, 2_000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := Load(p, Options{Count: tc.count, Repeat: true, MemoryAvailable: 4 << 30})
			if err == nil && tc.requests > 0 {
				err = set.CheckRequests(tc.requests)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "more than the limit of 4.0 GiB available") {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
