package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/telemetry"
)

// Run refuses what the command was given wrong before opening anything
// (exit code Invalid), and a source that cannot open is a failure.
func TestRunRefuses(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "t")
	if err := os.WriteFile(tok, []byte(testToken), 0o600); err != nil {
		t.Fatal(err)
	}
	opened := false
	open := func(context.Context) (telemetry.Source, record.TelemetryInfo, error) {
		opened = true
		return nil, record.TelemetryInfo{}, errors.New("no GPU")
	}
	ok := RunConfig{Listen: "127.0.0.1:0", TokenFile: tok, Interval: time.Second, Open: open}
	cases := []struct {
		name string
		edit func(*RunConfig)
		code int
		want string
	}{
		{"no listen", func(c *RunConfig) { c.Listen = " " }, 2, "--listen is required"},
		{"no token", func(c *RunConfig) { c.TokenFile = "" }, 2, "--token-file is required"},
		{"interval", func(c *RunConfig) { c.Interval = 0 }, 2, "--interval 0s"},
		{"agent of agents", func(c *RunConfig) { c.SelectsAgent = true }, 2, "--telemetry agent reads other agents"},
		{"source fails", func(*RunConfig) {}, 1, "agent: no GPU"},
	}
	for _, tc := range cases {
		opened = false
		c := ok
		tc.edit(&c)
		err := Run(context.Background(), c)
		if err == nil || exitcode.Of(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (exit %d), want exit %d and %q", tc.name, err, exitcode.Of(err), tc.code, tc.want)
		}
		if opened != (tc.code == 1) {
			t.Errorf("%s: source opened %v", tc.name, opened)
		}
	}
}
