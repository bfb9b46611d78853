package process

import "github.com/joulebench/joulebench/internal/redact"

// Redacted replaces a secret in what is written to run.json.
const Redacted = redact.Mark

// IsSecretName reports whether a flag or environment variable name looks
// like it holds a secret (see redact.IsSecretName).
func IsSecretName(name string) bool { return redact.IsSecretName(name) }

// Redact returns argv with the values of secret flags (--api-key K,
// --api-key=K, --hf-token K, ...) and the secrets of URLs replaced.
func Redact(argv []string) []string { return (*redact.Redactor)(nil).Argv(argv) }

// RedactEnv returns a copy of env with secret values replaced (by name,
// and the secrets of URLs).
func RedactEnv(env map[string]string) map[string]string { return (*redact.Redactor)(nil).Env(env) }

// RedactValue hides the secret members of a decoded JSON document, recursively.
func RedactValue(v any) any { return (*redact.Redactor)(nil).Value(v) }

// RedactURL hides what a URL may carry as secrets (see redact.URL).
func RedactURL(s string) string { return redact.URL(s) }
