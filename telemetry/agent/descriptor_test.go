package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/telemetry"
)

// flags parses args against a registry holding the agent source (the
// environment given by env) and returns it with the values and the
// sources named.
func flags(t *testing.T, env map[string]string, args ...string) (*telemetry.Registry, telemetry.Values, []string) {
	t.Helper()
	r := telemetry.NewRegistry("")
	if err := r.Register(DescriptorWith(func(k string) string { return env[k] })); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(telemetry.NoneDescriptor()); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	r.Flags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	given, _ := fs.GetStringArray(telemetry.SelectFlag)
	return r, telemetry.FlagValues(fs), given
}

func TestDescriptorChecks(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--telemetry", "agent"}, "--telemetry agent needs --agent"},
		{[]string{"--telemetry", "none", "--agent", "http://h:1"}, "--agent and --agent-token-file are for --telemetry agent"},
		{[]string{"--telemetry", "agent", "--agent", "h:1"}, "want http://HOST:PORT"},
		{[]string{"--telemetry", "agent", "--agent", "n1=http://h:1", "--agent", "http://h:2"}, ""},
	} {
		r, v, given := flags(t, nil, c.args...)
		_, err := r.Check(given, v)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// The token comes from the file, else the environment; with neither,
// opening says where to give it.
func TestDescriptorToken(t *testing.T) {
	var clk offsetClock
	url, _, _ := startAgent(t, "node1", &clk)
	r, v, given := flags(t, map[string]string{TokenEnv: testToken}, "--telemetry", "agent", "--agent", url)
	sel, err := r.Check(given, v)
	if err != nil {
		t.Fatal(err)
	}
	src, info, err := r.Open(context.Background(), sel, v, telemetry.Env{})
	if err != nil {
		t.Fatal(err)
	}
	src.Close()
	if info.Source != Name || len(info.ClockSync) != 1 || info.ClockSync[0].Host != "node1" || !strings.Contains(info.Note, "joulebench agents "+url+" (host node1, clock offset") {
		t.Errorf("info %+v", info)
	}
	r, v, given = flags(t, nil, "--telemetry", "agent", "--agent", url)
	sel, _ = r.Check(given, v)
	if _, _, err := r.Open(context.Background(), sel, v, telemetry.Env{}); err == nil || !strings.Contains(err.Error(), "--agent-token-file FILE or the environment variable "+TokenEnv) {
		t.Errorf("open without a token: %v", err)
	}
}
