package main

import (
	"encoding/json"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/internal/redact"
)

// secretNameFlag registers --secret-name, the names (besides the built-in
// key, token, secret, passw(or)d, pass, pwd, credential, auth) whose values
// are secrets wherever they appear: --engine-env, --extra-body, engine
// arguments, echoed request bodies.
func secretNameFlag(fs *pflag.FlagSet) {
	fs.StringSlice("secret-name", nil, "treat variables, flags and JSON members whose name contains this as secrets, redacted from everything written or printed (repeatable; key, token, secret, password, pass, pwd, credential and auth always are)")
}

// secretEnv are the environment variables joulebench reads secrets or
// secret-bearing URLs from.
var secretEnv = []string{"HF_TOKEN", "HF_ENDPOINT", "JOULEBENCH_API_KEY"}

// buildRedactor collects every secret this process was given: the command
// line, the flags' values from the config file and environment, the
// engine's environment overrides and extra arguments, --extra-body's
// secret members, and the URLs (--engine-url, --dcgm-url, --hf-endpoint,
// --prometheus-url).
func (a *app) buildRedactor(args []string) *redact.Redactor {
	v := a.v
	r := redact.New(v.GetStringSlice("secret-name")...).WithArgv(args)
	r = r.With(v.GetString("api-key"))
	urls := []string{v.GetString("engine-url"), v.GetString("hf-endpoint"), v.GetString("prometheus-url")}
	for _, u := range append(urls, v.GetStringSlice("dcgm-url")...) {
		r = r.WithURL(u)
	}
	for _, k := range secretEnv {
		if val := os.Getenv(k); val != "" {
			if strings.Contains(val, "://") {
				r = r.WithURL(val)
			} else {
				r = r.With(val)
			}
		}
	}
	env := map[string]string{}
	for _, kv := range v.GetStringSlice("engine-env") {
		if k, val, ok := strings.Cut(kv, "="); ok {
			env[k] = val
		}
	}
	r = r.WithEnv(env).WithArgv(v.GetStringSlice("engine-arg"))
	var body any
	if s := strings.TrimSpace(v.GetString("extra-body")); s != "" && json.Unmarshal([]byte(s), &body) == nil {
		r = r.WithValue(body)
	}
	return r
}

// redactedError shows its error's text with the secrets hidden; errors.As
// and errors.Is still see the error itself (its exit code).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactError hides the process's secrets in err's text.
func (a *app) redactError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := a.redact.String(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}
