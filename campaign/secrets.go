package campaign

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// SecretArgsEnv is the environment variable through which a sweep hands a
// child run its repeatable flags that may hold secrets (--engine-env
// values such as HF_TOKEN, --engine-arg values such as an engine's own
// --api-key, --dcgm-url credentials): a JSON array of "--flag=value"
// arguments that the child puts back after its subcommand (see
// cmd/joulebench's main). A list does not survive viper's whitespace
// splitting of a plain variable, hence JSON.
const SecretArgsEnv = "JOULEBENCH_SECRET_ARGS"

// secretListFlags are the repeatable `run` flags passed through
// SecretArgsEnv.
var secretListFlags = map[string]bool{
	"--engine-env": true,
	"--engine-arg": true,
	"--dcgm-url":   true,
	"--ipmi-arg":   true,
}

// secretFlags are the `run` flags whose values may hold a secret (an API
// key, credentials in a URL, a token in a request body), each with the
// environment variable the run command reads it from when the flag is not
// given (viper's JOULEBENCH_* binding). A child's command line is visible
// to every local user (ps, /proc/PID/cmdline); its environment is not, so
// a sweep passes these through the environment.
var secretFlags = map[string]string{
	"--api-key":        "JOULEBENCH_API_KEY",
	"--engine-url":     "JOULEBENCH_ENGINE_URL",
	"--extra-body":     "JOULEBENCH_EXTRA_BODY",
	"--hf-endpoint":    "JOULEBENCH_HF_ENDPOINT",
	"--prometheus-url": "JOULEBENCH_PROMETHEUS_URL",
	"--redfish-url":    "JOULEBENCH_REDFISH_URL",
}

// splitSecrets moves the secret flags out of a run's arguments: argv is
// args without them, env their values as NAME=VALUE (the last of a flag
// given twice, as the flag parser takes it), in the order first given.
// The values are passed as given, so the run sees the same options.
func splitSecrets(args []string) (argv, env []string) {
	vals := map[string]string{}
	var order, lists []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			argv = append(argv, args[i:]...)
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		if secretListFlags[name] && (hasVal || i+1 < len(args)) {
			if !hasVal {
				i++
				val = args[i]
			}
			lists = append(lists, name+"="+val)
			continue
		}
		envName, ok := secretFlags[name]
		if !ok {
			argv = append(argv, a)
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				// A flag without its value: the run refuses it.
				argv = append(argv, a)
				continue
			}
			i++
			val = args[i]
		}
		if val == "" {
			// Nothing secret, and an empty variable reads as unset: the
			// run must see the flag given empty (and refuse it).
			argv = append(argv, name+"=")
			continue
		}
		if _, seen := vals[envName]; !seen {
			order = append(order, envName)
		}
		vals[envName] = val
	}
	for _, n := range order {
		env = append(env, n+"="+vals[n])
	}
	if len(lists) > 0 {
		// Marshalling a []string cannot fail.
		j, _ := json.Marshal(lists)
		env = append(env, SecretArgsEnv+"="+string(j))
	}
	return argv, env
}

// RestoreSecretArgs puts the arguments a sweep passed through
// SecretArgsEnv (value, "" when unset) back into a child's arguments,
// right after the subcommand (args[0]), where the flag parser takes them
// as if given there. A value that is not a JSON array of strings is an error.
func RestoreSecretArgs(args []string, value string) ([]string, error) {
	if value == "" || len(args) == 0 {
		return args, nil
	}
	var extra []string
	if err := json.Unmarshal([]byte(value), &extra); err != nil {
		// The parser's message may quote the value: it is not repeated.
		return nil, fmt.Errorf("%s: not a JSON array of arguments", SecretArgsEnv)
	}
	out := make([]string, 0, len(args)+len(extra))
	out = append(out, args[0])
	out = append(out, extra...)
	return append(out, args[1:]...), nil
}

// childEnv is the environment of a run's process: base (nil: this
// process's) with the run's secrets added last, so that they win.
func childEnv(base, secrets []string) []string {
	if len(secrets) == 0 {
		return base
	}
	if base == nil {
		base = os.Environ()
	}
	return append(base[:len(base):len(base)], secrets...)
}
