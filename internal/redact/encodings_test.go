package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// base64Leak reports whether text holds secret base64-encoded at any
// byte alignment, in either alphabet: every run of base64 characters is
// decoded from each of its four character offsets (a run cut anywhere) and
// searched for secret. It is written apart from Base64Cores.
func base64Leak(text, secret string) bool {
	isB64 := func(c byte) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("+/-_", c) >= 0
	}
	for i := 0; i < len(text); {
		if !isB64(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isB64(text[j]) {
			j++
		}
		run := text[i:j]
		for off := 0; off < 4 && off < len(run); off++ {
			s := run[off:]
			s = s[:len(s)/4*4]
			for _, alpha := range []*strings.Replacer{strings.NewReplacer("-", "+", "_", "/"), strings.NewReplacer()} {
				if b, err := base64.StdEncoding.DecodeString(alpha.Replace(s)); err == nil && bytes.Contains(b, []byte(secret)) {
					return true
				}
			}
		}
		i = j
	}
	return false
}

// everyByte is s with each byte written with format (%XX).
func everyByte(s, format string) string {
	var b strings.Builder
	for i := range len(s) {
		fmt.Fprintf(&b, format, s[i])
	}
	return b.String()
}

// A server may echo the key in any of these encodings; each is hidden.
// The base64 forms are the key alone (both alphabets, with and without
// padding) and inside a longer base64 text at each of the three byte
// alignments: "Bearer KEY" (7 bytes before the key: alignment 1), a JSON
// document ({"api_key":" is 12 bytes: alignment 0) and "ab" + KEY
// (alignment 2), followed by 0, 1 or 2 more bytes.
func TestEncodingsEchoed(t *testing.T) {
	const key = "sk-EcHo+k3y/<v4l&ue>=Zq9é"
	r := New().With(key)
	std, urlB64 := base64.StdEncoding, base64.URLEncoding
	jsonOf := func(s string, html bool) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(s)
		return strings.TrimSpace(b.String())
	}
	cases := []struct{ name, echo string }{
		{"raw", key},
		{"base64 std", std.EncodeToString([]byte(key))},
		{"base64 std unpadded", base64.RawStdEncoding.EncodeToString([]byte(key))},
		{"base64 url", urlB64.EncodeToString([]byte(key))},
		{"base64 url unpadded", base64.RawURLEncoding.EncodeToString([]byte(key))},
		{"base64 Bearer KEY (alignment 1)", std.EncodeToString([]byte("Bearer " + key))},
		{"base64 JSON (alignment 0)", std.EncodeToString([]byte(`{"api_key":"` + key + `"}`))},
		{"base64 url JSON (alignment 0)", base64.RawURLEncoding.EncodeToString([]byte(`{"api_key":"` + key + `","n":1}`))},
		{"base64 alignment 2", std.EncodeToString([]byte("ab" + key + "c"))},
		{"base64 url alignment 2, 2 after", urlB64.EncodeToString([]byte("ab" + key + "cd"))},
		{"base64 alignment 1, 1 after", std.EncodeToString([]byte("a" + key + "z"))},
		{"query-escaped", url.QueryEscape(key)},
		{"path-escaped", url.PathEscape(key)},
		{"query-escaped lower-case hex", regexp.MustCompile(`%[0-9A-F]{2}`).ReplaceAllStringFunc(url.QueryEscape(key), strings.ToLower)},
		{"every byte percent-encoded", everyByte(key, "%%%02X")},
		{"every byte percent-encoded lower", everyByte(key, "%%%02x")},
		{"json", jsonOf(key, false)},
		{"json html-escaped", jsonOf(key, true)},
		{`json with \/`, strings.ReplaceAll(jsonOf(key, true), "/", `\/`)},
		{`json \u non-ASCII`, strings.ReplaceAll(jsonOf(key, true), "é", `\u00e9`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := `{"error":{"message":"invalid credentials ` + c.echo + ` (echoed)"}}`
			got := r.String(text)
			if strings.Contains(got, c.echo) || strings.Contains(got, key) || base64Leak(got, key) {
				t.Errorf("String(%q) = %q: the key is still there", text, got)
			}
			if !strings.Contains(got, Mark) {
				t.Errorf("String(%q) = %q: no %s mark", text, got, Mark)
			}
		})
	}
}

// A short secret's base64 cores inside a longer text are left alone
// (shorter than MinBase64Core: they may be ordinary words); text without
// the secret is unchanged.
func TestBase64CoresLength(t *testing.T) {
	// "abcd" at alignment 2: 6 bytes, 8 characters, the first 3 shared:
	// 5 < 8, no core; alignment 0: 5 characters (4·8/6), no core.
	if c := Base64Cores("abcd"); len(c) != 0 {
		t.Errorf("Base64Cores(abcd) = %q, want none", c)
	}
	// 12 bytes at alignment 0 are 16 characters, all the key's own.
	if c := Base64Cores("abcdefghijkl"); c[0] != base64.RawStdEncoding.EncodeToString([]byte("abcdefghijkl")) {
		t.Errorf("Base64Cores(abcdefghijkl)[0] = %q", c[0])
	}
	r := New().With("sk-EcHo+k3y/<v4l&ue>=Zq9")
	for _, s := range []string{"http 500: internal error", "model llama3.1-8b, 1200 tokens", "YWJjZGVm", "sk-echo+k3y/<v4l&ue>=zq9"} {
		if got := r.String(s); got != s {
			t.Errorf("String(%q) = %q, want it unchanged", s, got)
		}
	}
}

// A secret cut in two by the Write calls is still hidden: every cut of a
// text holding the key (raw and base64'd), written in two and in three
// writes, reaches the underlying writer without the key, and all of the
// rest of the text reaches it once Close flushes.
func TestWriterSplitSecret(t *testing.T) {
	const key = "sk-SpLiT-k3y-0123"
	r := New().With(key)
	text := "error: key " + key + " refused; b64 " + base64.StdEncoding.EncodeToString([]byte("Bearer "+key)) + " end s"
	want := r.String(text)
	for i := 0; i <= len(text); i++ {
		for _, j := range []int{i, min(i+5, len(text))} {
			var out bytes.Buffer
			w := r.Writer(&out)
			for _, part := range []string{text[:i], text[i:j], text[j:]} {
				if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			if strings.Contains(out.String(), key) || base64Leak(out.String(), key) {
				t.Fatalf("cut at %d, %d: before Close the output shows the key: %q", i, j, out.String())
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if out.String() != want {
				t.Fatalf("cut at %d, %d: wrote %q, want %q", i, j, out.String(), want)
			}
		}
	}
}

// Whole lines are never held back: what a logger writes appears at once.
func TestWriterHoldsNoLine(t *testing.T) {
	r := New().With("sk-SpLiT-k3y-0123")
	var out bytes.Buffer
	w := r.Writer(&out)
	for _, line := range []string{"starting sk-\n", "sk-SpLiT-k3y-0123 refused\n", "s\n"} {
		_, _ = w.Write([]byte(line))
	}
	if want := "starting sk-\n[redacted] refused\ns\n"; out.String() != want {
		t.Errorf("wrote %q, want %q", out.String(), want)
	}
	// A tail that may begin the key waits for the next write, and Flush
	// writes it when none comes.
	_, _ = w.Write([]byte("done: sk-SpL"))
	if want := "starting sk-\n[redacted] refused\ns\ndone: "; out.String() != want {
		t.Errorf("wrote %q, want %q (the tail held back)", out.String(), want)
	}
	if err := Flush(w); err != nil || !strings.HasSuffix(out.String(), "done: sk-SpL") {
		t.Errorf("Flush: %v, wrote %q", err, out.String())
	}
}
