package process

import (
	"net/url"
	"regexp"
	"strings"
)

// Redacted replaces a secret in what is written to run.json.
const Redacted = "[redacted]"

// secretName matches flag and variable names (lower case, '_' as '-')
// that hold secrets.
var secretName = regexp.MustCompile(`(api-?key|token|secret|passw(or)?d|credential|auth|private-?key|access-?key)`)

// IsSecretName reports whether a flag or environment variable name looks
// like it holds a secret (API keys, tokens, passwords, credentials).
// Token counts and tokenizers are not secrets.
func IsSecretName(name string) bool {
	n := strings.ReplaceAll(strings.ToLower(strings.TrimLeft(name, "-")), "_", "-")
	switch {
	case strings.Contains(n, "tokeniz"), strings.Contains(n, "tokens"), strings.HasSuffix(n, "token-id"):
		return false
	}
	return secretName.MatchString(n)
}

// Redact returns argv with the values of secret flags (--api-key K,
// --api-key=K, --hf-token K, ...) and the passwords of URLs replaced.
func Redact(argv []string) []string {
	out := make([]string, len(argv))
	hideNext := false
	for i, a := range argv {
		switch {
		case hideNext:
			out[i] = Redacted
			hideNext = false
			continue
		case strings.HasPrefix(a, "-"):
			name, _, hasValue := strings.Cut(a, "=")
			if IsSecretName(name) {
				if hasValue {
					out[i] = name + "=" + Redacted
				} else {
					out[i] = a
					hideNext = true
				}
				continue
			}
		}
		out[i] = redactURL(a)
	}
	return out
}

// RedactEnv returns a copy of env with secret values replaced (by name,
// and passwords inside URLs).
func RedactEnv(env map[string]string) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if IsSecretName(k) {
			out[k] = Redacted
		} else {
			out[k] = redactURL(v)
		}
	}
	return out
}

// RedactValue hides a secret found in a decoded JSON document (an engine's
// server_info lists its arguments, API key included): members with secret
// names are replaced, recursively.
func RedactValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if _, isStr := val.(string); isStr && IsSecretName(k) && val != "" {
				out[k] = Redacted
			} else {
				out[k] = RedactValue(val)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = RedactValue(val)
		}
		return out
	case string:
		return redactURL(x)
	}
	return v
}

func redactURL(s string) string {
	if !strings.Contains(s, "://") || !strings.ContainsAny(s, "@?") {
		return s
	}
	return RedactURL(s)
}

// RedactURL hides what a URL may carry as secrets: the password
// ("user:[redacted]@"), a user name alone (a token: "[redacted]@") and
// every query value ("?key=[redacted]"). Scheme, host, path and query keys
// stay, so the URL still says where it points. Text that does not parse
// as a URL with a host is returned as is.
func RedactURL(s string) string {
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
		var parts []string
		for _, kv := range strings.Split(u.RawQuery, "&") {
			k, _, _ := strings.Cut(kv, "=")
			parts = append(parts, k+"="+mark)
		}
		u.RawQuery = strings.Join(parts, "&")
		changed = true
	}
	if !changed {
		return s
	}
	return strings.ReplaceAll(u.String(), mark, Redacted)
}
