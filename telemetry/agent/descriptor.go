package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// The source's flags.
const (
	flagAgent     = "agent"
	flagTokenFile = "agent-token-file"
)

// Descriptor is the agent source, the token read from --agent-token-file
// or the process's environment.
func Descriptor() telemetry.Descriptor { return DescriptorWith(os.Getenv) }

// DescriptorWith is Descriptor with the environment read by getenv.
func DescriptorWith(getenv func(string) string) telemetry.Descriptor {
	return telemetry.Descriptor{
		Name: Name,
		Flags: func(f *pflag.FlagSet) {
			f.StringArray(flagAgent, nil, "a joulebench agent's address, URL or NAME=URL, e.g. node1=http://10.0.0.5:7070 (repeatable: one per node; --telemetry agent)")
			f.String(flagTokenFile, "", "file holding the agents' per-run token (else the environment variable "+TokenEnv+"; --telemetry agent)")
		},
		Check: func(v telemetry.Values, sel telemetry.Selection) error {
			agents := agentsOf(v)
			if (len(agents) > 0 || strings.TrimSpace(v.GetString(flagTokenFile)) != "") && !sel.Has(Name) {
				return fmt.Errorf("--agent and --agent-token-file are for --telemetry agent, not %s", sel)
			}
			if !sel.Has(Name) {
				return nil
			}
			if len(agents) == 0 {
				return errors.New("--telemetry agent needs --agent http://HOST:PORT, one per node (started there with joulebench agent --listen HOST:PORT --token-file FILE)")
			}
			for _, a := range agents {
				if _, err := ParseEndpoint(a); err != nil {
					return err
				}
			}
			return nil
		},
		Open: func(ctx context.Context, v telemetry.Values, env telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
			return open(ctx, v, env, getenv)
		},
	}
}

// agentsOf are the --agent values given, trimmed, without empty ones.
func agentsOf(v telemetry.Values) []string {
	var out []string
	for _, a := range v.GetStringSlice(flagAgent) {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func open(ctx context.Context, v telemetry.Values, env telemetry.Env, getenv func(string) string) (telemetry.Source, record.TelemetryInfo, error) {
	var eps []Endpoint
	for _, a := range agentsOf(v) {
		ep, err := ParseEndpoint(a)
		if err != nil {
			return nil, record.TelemetryInfo{}, err
		}
		eps = append(eps, ep)
	}
	token, err := tokenOf(v.GetString(flagTokenFile), getenv)
	if err != nil {
		return nil, record.TelemetryInfo{}, err
	}
	src, err := Open(ctx, Options{Agents: eps, Token: token, Clock: env.Clock})
	if err != nil {
		return nil, record.TelemetryInfo{}, err
	}
	devs, _ := src.Devices(ctx)
	clocks, _ := src.ClockSync(ctx, false)
	var shown []string
	for _, c := range clocks {
		shown = append(shown, fmt.Sprintf("%s (host %s, clock offset %+.6f s ± %.6f s)", strings.TrimPrefix(c.Source, "agent "), c.Host, c.StartOffsetS, c.StartRTTS/2))
	}
	return src, record.TelemetryInfo{Source: Name, ClockSync: clocks,
		Note: fmt.Sprintf("joulebench agents %s; samples stamped by each agent's clock, placed on the run clock with the offset measured at the start, then again at the end with the offset interpolated between the start and the end (both in clock_sync); %s",
			strings.Join(shown, ", "), telemetry.DeviceSummary(devs))}, nil
}

// tokenOf reads the token from file, else from the environment.
func tokenOf(file string, getenv func(string) string) (string, error) {
	if file = strings.TrimSpace(file); file != "" {
		b, err := ReadTokenFile(file)
		return string(b), err
	}
	if t := strings.TrimSpace(getenv(TokenEnv)); t != "" {
		return t, nil
	}
	return "", fmt.Errorf("--telemetry agent needs the agents' token: --agent-token-file FILE or the environment variable %s", TokenEnv)
}

// ReadTokenFile reads a token file: its content without surrounding
// white space, refused when empty or when the file is open to its group
// or others (a per-run secret stays its owner's: chmod 600).
func ReadTokenFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("token file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("token file %s is open to others (mode %04o): chmod 600 %s", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return nil, fmt.Errorf("token file %s is empty", path)
	}
	if strings.ContainsAny(tok, " \t\r\n") {
		return nil, fmt.Errorf("token file %s holds more than one word: the token is one line without spaces", path)
	}
	return []byte(tok), nil
}
