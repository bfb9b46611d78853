package loadresults

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gzipped is b compressed with gzip.
func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A gzip-compressed result file of each tool reads as the file itself
// does: the same format, counts and tokens as TestReadFormats (2
// completed, 1 failed, 64 input and 12 output tokens, SOURCES.md). The
// compressed file is found by its first two bytes, so one named without
// .gz reads the same.
func TestReadGzip(t *testing.T) {
	for _, tt := range []struct {
		file   string
		format Format
	}{
		{"vllm_detailed.json", VLLMBenchServe},
		{"vllm_summary.json", VLLMBenchServe},
		{"guidellm_benchmarks.json", GuideLLM},
		{"aiperf_profile_export.jsonl", AIPerf},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		z := gzipped(t, b)
		for _, name := range []string{tt.file + ".gz", tt.file} {
			t.Run(name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), name)
				if err := os.WriteFile(path, z, 0o644); err != nil {
					t.Fatal(err)
				}
				r, err := Read(path)
				if err != nil {
					t.Fatal(err)
				}
				if r.Format != tt.format || r.Path != path {
					t.Errorf("format %q path %q, want %q %q", r.Format, r.Path, tt.format, path)
				}
				a := r.Aggregates
				if a.Completed != 2 || a.Failed != 1 || a.InputTokens != 64 || a.OutputTokens != 12 {
					t.Errorf("counts %d/%d, tokens %d/%d; want 2/1, 64/12", a.Completed, a.Failed, a.InputTokens, a.OutputTokens)
				}
			})
		}
	}
}

// A corrupt gzip file is refused with an error naming the file and
// saying it is a gzip fault, never read as JSON; so is one whose content
// is over the cap (a zip bomb), before more than the cap is held.
func TestReadGzipRefusesBadInput(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "vllm_summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	z := gzipped(t, b)
	crc := append([]byte(nil), z...)
	crc[len(crc)-8] ^= 0xff // the CRC-32 of the trailer
	for _, tt := range []struct {
		name    string
		content []byte
		want    string
	}{
		{"magic only", []byte{0x1f, 0x8b}, "gzip"},
		{"bad header", append([]byte{0x1f, 0x8b, 0x09}, bytes.Repeat([]byte{0}, 20)...), "gzip"},
		{"truncated", z[:len(z)/2], "gzip"},
		{"checksum", crc, "gzip"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "result.json.gz")
			if err := os.WriteFile(path, tt.content, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Read(path)
			if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %s: ... %s", err, path, tt.want)
			}
		})
	}
	t.Run("over the cap", func(t *testing.T) {
		_, err := gunzipCapped("big.json.gz", gzipped(t, bytes.Repeat([]byte(" "), 1001)), 1000)
		if err == nil || !strings.Contains(err.Error(), "big.json.gz: decompresses to more than 1000 bytes") {
			t.Errorf("error %v, want big.json.gz: decompresses to more than 1000 bytes", err)
		}
		if _, err := gunzipCapped("ok.json.gz", gzipped(t, bytes.Repeat([]byte(" "), 1000)), 1000); err != nil {
			t.Errorf("1000 bytes under a cap of 1000: %v", err)
		}
	})
}
