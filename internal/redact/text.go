package redact

import (
	"io"
	"net/url"
	"regexp"
	"strings"
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

// Writer returns a writer that redacts each Write before passing it on
// to w. A secret split across two writes is not seen: the writers it
// wraps (loggers, fmt.Fprint*) write whole lines.
func (r *Redactor) Writer(w io.Writer) io.Writer { return &writer{r: r, w: w} }

type writer struct {
	r *Redactor
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := w.w.Write(w.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
