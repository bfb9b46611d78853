package main

import (
	"strings"
	"testing"
)

// measure refuses what it cannot run before anything is created: no
// server, no load, both loads, a command not after --, a result file
// without a command (exit 2, saying what to give).
func TestMeasureRefusals(t *testing.T) {
	out := t.TempDir() + "/run"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"measure", "--out", out, "--", "true"}, "--engine-url URL is required"},
		{[]string{"measure", "--out", out, "--engine-url", "http://127.0.0.1:1"}, "give the command that sends the load after --"},
		{[]string{"measure", "--out", out, "--engine-url", "http://127.0.0.1:1", "--duration", "1s", "--", "true"}, "not both"},
		{[]string{"measure", "--out", out, "--engine-url", "http://127.0.0.1:1", "true"}, "put the command that sends the load after --"},
		{[]string{"measure", "--out", out, "--engine-url", "http://127.0.0.1:1", "--duration", "1s", "--results", "r.json"}, "--results FILE is the result file of the command"},
		{[]string{"measure", "--out", out, "--engine-url", "http://127.0.0.1:1", "--", "true"}, "the server's metrics at http://127.0.0.1:1/metrics"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		if code != exitInvalid || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args[1:], code, stderr, exitInvalid, tc.want)
		}
	}
}
