package redact

import (
	"io"
	"net/url"
	"regexp"
	"strings"
	"sync"
)

var (
	// urlRE finds URLs in text; a URL ends at white space, a quote, a
	// backslash (JSON escape) or angle brackets.
	urlRE = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'`<>\\\\]+")
	// authRE finds Authorization headers: the scheme stays, the
	// credentials go.
	authRE = regexp.MustCompile(`(?i)((?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:basic|bearer|token|digest)\s+)?)([^\s"',;]+)`)
	// pairRE finds NAME=VALUE (query strings, environments, flags).
	pairRE = regexp.MustCompile(`([A-Za-z0-9_.-]+)=([^&\s"',;]+)`)
	// jsonPairRE finds "NAME": "VALUE" members of JSON text.
	jsonPairRE = regexp.MustCompile(`"([^"\\]{1,64})"(\s*:\s*)"(?:[^"\\]|\\.)*"`)
)

// String returns s with r's secret values and everything the patterns
// find replaced by Mark.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	if r != nil && r.rep != nil {
		s = r.rep.Replace(s)
	}
	if strings.Contains(s, "://") {
		s = urlRE.ReplaceAllStringFunc(s, r.URL)
	}
	if strings.Contains(s, "=") {
		s = pairRE.ReplaceAllStringFunc(s, func(m string) string {
			k, v, _ := strings.Cut(m, "=")
			if v == Mark || !r.patternName(k) {
				return m
			}
			return k + "=" + Mark
		})
	}
	if strings.Contains(s, ":") {
		s = authRE.ReplaceAllString(s, "${1}"+Mark)
		s = jsonPairRE.ReplaceAllStringFunc(s, func(m string) string {
			sub := jsonPairRE.FindStringSubmatch(m)
			if !r.patternName(sub[1]) {
				return m
			}
			return `"` + sub[1] + `"` + sub[2] + `"` + Mark + `"`
		})
	}
	return s
}

// patternName is IsSecretName for names found in free text, where a bare
// "key" is a word of the message ("want KEY=VALUE", "expected
// key=value"), not a variable.
func (r *Redactor) patternName(name string) bool {
	return normName(name) != "key" && r.IsSecretName(name)
}

// Bytes is String for a byte slice (an encoded document).
func (r *Redactor) Bytes(b []byte) []byte {
	s := string(b)
	if t := r.String(s); t != s {
		return []byte(t)
	}
	return b
}

// URL hides what a URL may carry as secrets: the password
// ("user:[redacted]@"), a user name alone (a token: "[redacted]@") and
// every query value ("?key=[redacted]"). Scheme, host, path and query keys
// stay, so the URL still says where it points. Text that does not parse as
// a URL with a host is returned with r's secret values replaced.
func (r *Redactor) URL(s string) string {
	if r != nil && r.rep != nil {
		s = r.rep.Replace(s)
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return s
	}
	const mark = "xredactedx"
	changed := false
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), mark)
		} else {
			u.User = url.User(mark)
		}
		changed = true
	}
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, kv := range parts {
			k, _, _ := strings.Cut(kv, "=")
			parts[i] = k + "=" + mark
		}
		u.RawQuery = strings.Join(parts, "&")
		changed = true
	}
	if !changed {
		return s
	}
	return strings.ReplaceAll(u.String(), mark, Mark)
}

// URL is (*Redactor)(nil).URL: the URL's own secrets hidden.
func URL(s string) string { return (*Redactor)(nil).URL(s) }

// Argv returns argv with the values of secret flags (--api-key K,
// --api-key=K, --hf-token K, ...) replaced, and every argument redacted
// as text (URLs, r's secret values).
func (r *Redactor) Argv(argv []string) []string {
	if argv == nil {
		return nil
	}
	out := make([]string, len(argv))
	hideNext := false
	for i, a := range argv {
		switch {
		case hideNext:
			out[i] = Mark
			hideNext = false
			continue
		case strings.HasPrefix(a, "-"):
			name, _, hasValue := strings.Cut(a, "=")
			if r.IsSecretName(name) {
				if hasValue {
					out[i] = name + "=" + Mark
				} else {
					out[i] = a
					hideNext = true
				}
				continue
			}
		}
		out[i] = r.String(a)
	}
	return out
}

// Env returns a copy of env with the values of secret names replaced and
// the others redacted as text.
func (r *Redactor) Env(env map[string]string) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if r.IsSecretName(k) && v != "" {
			out[k] = Mark
		} else {
			out[k] = r.String(v)
		}
	}
	return out
}

// Value returns a copy of a decoded JSON document with the string members
// of secret names replaced, recursively, and every other string redacted
// as text (an engine's server_info lists its arguments, API key included).
func (r *Redactor) Value(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if s, isStr := val.(string); isStr && r.IsSecretName(k) && s != "" {
				out[k] = Mark
			} else {
				out[k] = r.Value(val)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = r.Value(val)
		}
		return out
	case string:
		return r.String(x)
	}
	return v
}

// Writer returns a writer that redacts what is written before passing it
// on to w. A secret cut in two by the Write calls (an engine's output read
// from a pipe in chunks) is still hidden: the longest tail of a write that
// may begin one of r's secret values is held back until the next write
// completes or rules it out, or until Flush or Close. Whole lines (a
// logger's, fmt.Fprintln's) are never held back. It is safe for
// concurrent use.
func (r *Redactor) Writer(w io.Writer) *Writer { return &Writer{r: r, w: w} }

// Writer is the redacting writer of Redactor.Writer.
type Writer struct {
	r  *Redactor
	w  io.Writer
	mu sync.Mutex
	// held is the tail of the last write that may begin a secret.
	held []byte
}

// Write redacts p (with what was held back before it) and writes all but
// the tail that may begin a secret.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.r == nil || len(w.r.values) == 0 {
		if _, err := w.w.Write(w.r.Bytes(p)); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	buf := append(w.held, p...)
	cut := w.r.safeCut(buf)
	if cut > 0 {
		if _, err := w.w.Write(w.r.Bytes(buf[:cut])); err != nil {
			w.held = nil
			return 0, err
		}
	}
	w.held = append([]byte(nil), buf[cut:]...)
	return len(p), nil
}

// Flush writes what is held back, redacted.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.held) == 0 {
		return nil
	}
	held := w.held
	w.held = nil
	_, err := w.w.Write(w.r.Bytes(held))
	return err
}

// Close flushes; it does not close the writer it wraps.
func (w *Writer) Close() error { return w.Flush() }

// Flush flushes w when it is a redacting Writer (what is held back of a
// secret's possible beginning); other writers are left alone.
func Flush(w io.Writer) error {
	if rw, ok := w.(*Writer); ok {
		return rw.Flush()
	}
	return nil
}

// safeCut is where buf may be cut so that no secret value crosses the
// cut: before the longest tail of buf that is a proper prefix of a value,
// and before any whole value that would straddle that point.
func (r *Redactor) safeCut(buf []byte) int {
	cut := len(buf)
	for _, v := range r.values {
		for k := min(len(v)-1, len(buf)); k > 0; k-- {
			if len(buf)-k < cut && string(buf[len(buf)-k:]) == v[:k] {
				cut = len(buf) - k
				break
			}
		}
	}
	for moved := true; moved; {
		moved = false
		for _, v := range r.values {
			lo := max(0, cut-len(v)+1)
			if i := strings.Index(string(buf[lo:]), v); i >= 0 && lo+i < cut && lo+i+len(v) > cut {
				cut, moved = lo+i, true
			}
		}
	}
	return cut
}
