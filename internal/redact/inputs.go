package redact

import (
	"encoding/json"
	"strings"
)

// secretEnv are the environment variables joulebench reads secrets or
// secret-bearing URLs from.
func secretEnv() []string {
	return []string{"HF_TOKEN", "HF_ENDPOINT", "JOULEBENCH_API_KEY", "JOULEBENCH_AGENT_TOKEN"}
}

// Inputs are everything a process was given that may hold secrets.
type Inputs struct {
	// Names are the names, besides the built-in ones, whose values are
	// secrets (--secret-name).
	Names []string
	// Argv is the command line.
	Argv []string
	// Values are secrets as given (--api-key); URLs hold credentials or
	// secret query values (--engine-url, --dcgm-url, ...).
	Values, URLs []string
	// Getenv reads the environment (HF_TOKEN, HF_ENDPOINT and
	// JOULEBENCH_API_KEY); nil reads none.
	Getenv func(string) string
	// EngineEnv are KEY=VALUE overrides; EngineArgs more arguments;
	// ExtraBody a JSON object whose secret members are secrets.
	EngineEnv, EngineArgs []string
	ExtraBody             string
}

// FromInputs is the redactor of every secret in in.
func FromInputs(in Inputs) *Redactor {
	r := New(in.Names...).WithArgv(in.Argv).With(in.Values...)
	for _, u := range in.URLs {
		r = r.WithURL(u)
	}
	for _, k := range secretEnv() {
		if in.Getenv == nil {
			break
		}
		if val := in.Getenv(k); val != "" {
			if strings.Contains(val, "://") {
				r = r.WithURL(val)
			} else {
				r = r.With(val)
			}
		}
	}
	env := map[string]string{}
	for _, kv := range in.EngineEnv {
		if k, val, ok := strings.Cut(kv, "="); ok {
			env[k] = val
		}
	}
	r = r.WithEnv(env).WithArgv(in.EngineArgs)
	var body any
	if s := strings.TrimSpace(in.ExtraBody); s != "" && json.Unmarshal([]byte(s), &body) == nil {
		r = r.WithValue(body)
	}
	return r
}

// Error hides r's secrets in err's text; errors.As and errors.Is still see
// the error itself (its exit code).
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := r.String(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
