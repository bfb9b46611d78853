// Package redact hides the secrets joulebench is given (API keys, tokens,
// passwords, the user info and query values of URLs) from everything it
// writes or prints: run.json, requests.jsonl, the logs, stdout and stderr.
//
// Two layers work together. A Redactor knows the secret values of this
// process and replaces each of them in every encoding joulebench sends it
// in or a server may echo it in (as is, query-, path- and
// percent-escaped, JSON-escaped, base64 of user:password for HTTP Basic,
// and base64 of the value alone or inside a longer base64 text, at any
// byte alignment: Encodings); its Writer hides one cut across writes. Patterns then hide what looks secret
// whoever sent it: the user info and query values of URLs, Authorization
// headers, and the values of secret-looking names in NAME=VALUE and
// "NAME": "VALUE" (a server that echoes the request in an error body).
//
// A nil *Redactor applies the patterns only.
package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf16"
)

// Mark replaces a secret.
const Mark = "[redacted]"

// MinLiteral is the shortest secret value replaced wherever it appears.
// A shorter one (a password "pw") would turn ordinary words into marks; it
// is hidden where the patterns find it (URL, header, NAME=VALUE).
const MinLiteral = 4

// secretName matches normalized names (lower case, '-' for '_' and '.')
// that hold secrets anywhere in the name. A token is judged by
// tokenSecret: most names with "token" in them are measurements.
var secretName = regexp.MustCompile(`api-?key|secret|passw(or)?d|passphrase|pwd|credential|auth|private-?key|access-?key`)

// measuredToken are the words before a last segment "token" that make the
// name a measurement rather than a credential (j_per_token,
// steady_j_per_token, j_per_answer_token, first_token).
var measuredToken = []string{"per", "first", "last", "next", "answer", "output", "input", "prompt", "reasoning", "cached", "good", "bos", "eos", "pad"}

// secretSegments are '-'-separated parts of a name that mark it as secret
// on their own (OPENAI_KEY, DB_PASS).
var secretSegments = []string{"key", "pass", "apikey", "pw"}

// IsSecretName reports whether a flag, environment variable or JSON member
// name looks like it holds a secret: one with key, token, secret,
// passw(or)d, pass, pwd, credential or auth in it. Token counts and
// tokenizers are not secrets (max_tokens, tokenizer, bos_token_id), nor
// are names of names (--secret-name).
func IsSecretName(name string) bool { return (*Redactor)(nil).IsSecretName(name) }

func normName(name string) string {
	n := strings.ToLower(strings.TrimLeft(strings.TrimSpace(name), "-"))
	return strings.NewReplacer("_", "-", ".", "-").Replace(n)
}

// tokenSecret reports whether a name's "token" marks a credential: a last
// segment "token" not after a measurement word (HF_TOKEN, --hf-token,
// access_token, token), or "token" inside a segment (GITHUBTOKEN,
// hftoken). "token" before other segments names a property of generated
// tokens (token_times, token_counts, first_token_at), and after "per",
// "first", "answer", ... a measurement (j_per_token).
func tokenSecret(segs []string) bool {
	last := len(segs) - 1
	for i, seg := range segs {
		switch {
		case seg == "token" && i == last:
			return i == 0 || !slices.Contains(measuredToken, segs[i-1])
		case seg != "token" && strings.Contains(seg, "token"):
			return true
		}
	}
	return false
}

func builtinSecretName(n string) bool {
	if n == "" || strings.Contains(n, "tokeniz") || strings.Contains(n, "tokens") || strings.Contains(n, "token-count") ||
		strings.HasSuffix(n, "token-id") || strings.HasSuffix(n, "-name") || strings.HasSuffix(n, "-names") {
		return false
	}
	if secretName.MatchString(n) {
		return true
	}
	segs := strings.Split(n, "-")
	if tokenSecret(segs) {
		return true
	}
	for _, seg := range segs {
		if slices.Contains(secretSegments, seg) {
			return true
		}
	}
	return false
}

// Redactor hides a fixed set of secret values and the values of secret
// names. It is immutable: the With methods return a new one, so one can be
// shared by goroutines.
type Redactor struct {
	// names are extra secret names (normalized), matched as substrings.
	names []string
	// values are the secret values in every encoding, longest first.
	values []string
	rep    *strings.Replacer
}

// New returns a Redactor that also treats the given names as secret
// (--secret-name: a variable called MY_SESSION, say).
func New(names ...string) *Redactor {
	r := &Redactor{}
	for _, n := range names {
		if n = normName(n); n != "" && !slices.Contains(r.names, n) {
			r.names = append(r.names, n)
		}
	}
	return r
}

// IsSecretName reports whether name is secret by the built-in rule or by
// one of r's extra names.
func (r *Redactor) IsSecretName(name string) bool {
	n := normName(name)
	if builtinSecretName(n) {
		return true
	}
	if r == nil || n == "" {
		return false
	}
	for _, extra := range r.names {
		if strings.Contains(n, extra) {
			return true
		}
	}
	return false
}

// With returns a Redactor that also hides the given values, in every
// encoding (see Encodings). Empty values are ignored.
func (r *Redactor) With(values ...string) *Redactor {
	out := &Redactor{}
	if r != nil {
		out.names = r.names
		out.values = slices.Clone(r.values)
	}
	for _, v := range values {
		for _, e := range Encodings(v) {
			if len(e) >= MinLiteral && !slices.Contains(out.values, e) {
				out.values = append(out.values, e)
			}
		}
	}
	// Longest first, so that a secret containing another is replaced whole.
	slices.SortStableFunc(out.values, func(a, b string) int { return len(b) - len(a) })
	if len(out.values) > 0 {
		pairs := make([]string, 0, 2*len(out.values))
		for _, v := range out.values {
			pairs = append(pairs, v, Mark)
		}
		out.rep = strings.NewReplacer(pairs...)
	}
	return out
}

// WithURL returns a Redactor that also hides what the URL carries as
// secrets: its password, its user name when there is no password (a
// token), user:password in base64 (HTTP Basic), and its query values.
// Text that does not parse as a URL is taken as a secret whole.
func (r *Redactor) WithURL(raw string) *Redactor {
	if raw == "" {
		return r.With()
	}
	u, err := url.Parse(raw)
	if err != nil {
		return r.With(raw)
	}
	var vals []string
	if u.User != nil {
		name := u.User.Username()
		if pw, ok := u.User.Password(); ok {
			vals = append(vals, pw, base64.StdEncoding.EncodeToString([]byte(name+":"+pw)))
		} else {
			vals = append(vals, name)
		}
	}
	for _, vs := range u.Query() {
		vals = append(vals, vs...)
	}
	// As written (its escaping may differ from QueryEscape's).
	for _, kv := range strings.Split(u.RawQuery, "&") {
		if _, v, ok := strings.Cut(kv, "="); ok {
			vals = append(vals, v)
		}
	}
	return r.With(vals...)
}

// WithArgv returns a Redactor that also hides the values of secret flags
// in argv (--api-key K, --api-key=K) and the secrets of URLs in it.
func (r *Redactor) WithArgv(argv []string) *Redactor {
	out := r.With()
	for i, a := range argv {
		if strings.HasPrefix(a, "-") {
			name, val, hasValue := strings.Cut(a, "=")
			if out.IsSecretName(name) {
				if hasValue {
					out = out.With(val)
				} else if i+1 < len(argv) {
					out = out.With(argv[i+1])
				}
				continue
			}
			if hasValue {
				a = val
			}
		}
		// A value that is itself NAME=VALUE (--engine-env K=V, in either
		// form) hides VALUE when NAME looks secret.
		if k, v, ok := strings.Cut(a, "="); ok && !strings.HasPrefix(a, "-") && out.IsSecretName(k) {
			out = out.With(v)
		}
		if strings.Contains(a, "://") {
			out = out.WithURL(a)
		}
	}
	return out
}

// WithEnv returns a Redactor that also hides the values of secret names
// in env (KEY=VALUE pairs) and the secrets of URLs in the values.
func (r *Redactor) WithEnv(kvs map[string]string) *Redactor {
	out := r.With()
	for k, v := range kvs {
		switch {
		case out.IsSecretName(k):
			out = out.With(v)
		case strings.Contains(v, "://"):
			out = out.WithURL(v)
		}
	}
	return out
}

// WithValue returns a Redactor that also hides the string values of secret
// members of a decoded JSON document (--extra-body '{"api_key": "K"}').
func (r *Redactor) WithValue(v any) *Redactor {
	out := r.With()
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok && out.IsSecretName(k) {
				out = out.With(s)
			} else {
				out = out.WithValue(val)
			}
		}
	case []any:
		for _, val := range x {
			out = out.WithValue(val)
		}
	case string:
		if strings.Contains(x, "://") {
			out = out.WithURL(x)
		}
	}
	return out
}

// Encodings returns s and the forms in which joulebench may send or write
// it, or a server echo it: query-escaped, path-escaped and fully
// percent-encoded (upper- and lower-case hex), JSON-escaped (with and
// without HTML escaping, with "/" escaped, non-ASCII as \uXXXX), and
// base64 in the standard and URL alphabets, with and without padding,
// whole and inside a longer base64 text (Base64Cores).
func Encodings(s string) []string {
	if s == "" {
		return nil
	}
	forms := []string{s, url.QueryEscape(s), url.PathEscape(s), percentAll(s, false), percentAll(s, true),
		lowerPercent(url.QueryEscape(s)), jsonEscape(s, false), jsonEscape(s, true),
		strings.ReplaceAll(jsonEscape(s, true), "/", `\/`), jsonASCII(s)}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		forms = append(forms, enc.EncodeToString([]byte(s)))
	}
	forms = append(forms, Base64Cores(s)...)
	var out []string
	for _, f := range forms {
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// MinBase64Core is the shortest base64 core (Base64Cores) replaced: a
// shorter run of letters and digits may be ordinary text.
const MinBase64Core = 8

// Base64Cores returns the base64 characters that s alone determines when
// it is encoded inside a longer text (a base64'd "Bearer KEY" or JSON
// document), at each of the three byte alignments s may fall at, in the
// standard and URL alphabets: those of a 3-byte group shared with the
// bytes before s or after it are left out (they differ with those
// bytes). Cores shorter than MinBase64Core are left out.
func Base64Cores(s string) []string {
	var out []string
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for a := range 3 {
			b := make([]byte, a, a+len(s))
			b = append(b, s...)
			e := enc.EncodeToString(b)
			// The characters of the a leading bytes' group that hold any
			// of their bits: 6i < 8a.
			lead := (8*a + 5) / 6
			// The characters wholly within the first len(b) bytes.
			end := 8 * len(b) / 6
			if end-lead >= MinBase64Core {
				out = append(out, e[lead:end])
			}
		}
	}
	return out
}

// percentAll is s with every byte percent-encoded (%XX, hex in upper or
// lower case), as some clients and servers write a value.
func percentAll(s string, lower bool) string {
	const upperHex, lowerHex = "0123456789ABCDEF", "0123456789abcdef"
	hex := upperHex
	if lower {
		hex = lowerHex
	}
	b := make([]byte, 0, 3*len(s))
	for i := range len(s) {
		b = append(b, '%', hex[s[i]>>4], hex[s[i]&15])
	}
	return string(b)
}

// lowerPercent is s with the hex digits of its %XX escapes in lower case.
func lowerPercent(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerHex(b[i+1]), lowerHex(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// jsonASCII is s JSON-escaped with every character outside printable
// ASCII as \uXXXX (UTF-16), as some servers write JSON.
func jsonASCII(s string) string {
	q := jsonEscape(s, true)
	var b strings.Builder
	for _, r := range q {
		switch {
		case r < 0x80:
			b.WriteRune(r)
		case r > 0xFFFF:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func jsonEscape(s string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s) // a string always encodes
	q := strings.TrimSpace(b.String())
	return q[1 : len(q)-1]
}
