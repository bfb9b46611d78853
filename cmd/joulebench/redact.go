package main

import (
	"os"

	"github.com/joulebench/joulebench/internal/redact"
)

// buildRedactor collects every secret this process was given: the command
// line, the flags' values from the config file and environment, the
// engine's environment overrides and extra arguments, --extra-body's
// secret members, and the URLs (--engine-url, --dcgm-url, --hf-endpoint,
// --prometheus-url).
func (a *app) buildRedactor(args []string) *redact.Redactor {
	v := a.v
	return redact.FromInputs(redact.Inputs{Names: v.GetStringSlice("secret-name"), Argv: args, Values: []string{v.GetString("api-key")},
		URLs:   append([]string{v.GetString("engine-url"), v.GetString("hf-endpoint"), v.GetString("prometheus-url")}, v.GetStringSlice("dcgm-url")...),
		Getenv: os.Getenv, EngineEnv: v.GetStringSlice("engine-env"), EngineArgs: v.GetStringSlice("engine-arg"), ExtraBody: v.GetString("extra-body")})
}

// redactError hides the process's secrets in err's text.
func (a *app) redactError(err error) error { return a.redact.Error(err) }
