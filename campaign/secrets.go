package campaign

import (
	"os"
	"strings"
)

// secretFlags are the `run` flags whose values may hold a secret (an API
// key, credentials in a URL, a token in a request body), each with the
// environment variable the run command reads it from when the flag is not
// given (viper's JOULEBENCH_* binding). A child's command line is visible
// to every local user (ps, /proc/PID/cmdline); its environment is not, so
// a sweep passes these through the environment.
var secretFlags = map[string]string{
	"--api-key":     "JOULEBENCH_API_KEY",
	"--engine-url":  "JOULEBENCH_ENGINE_URL",
	"--extra-body":  "JOULEBENCH_EXTRA_BODY",
	"--hf-endpoint": "JOULEBENCH_HF_ENDPOINT",
}

// splitSecrets moves the secret flags out of a run's arguments: argv is
// args without them, env their values as NAME=VALUE (the last of a flag
// given twice, as the flag parser takes it), in the order first given.
// The values are passed as given, so the run sees the same options.
func splitSecrets(args []string) (argv, env []string) {
	vals := map[string]string{}
	var order []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			argv = append(argv, args[i:]...)
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
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
	return argv, env
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
