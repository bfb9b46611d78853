package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

// A context sweep of two sizes on the simulator runs end to end: one
// archive and one row per size, the prompts filled to each size, the
// cooldown recorded in the second run.
func TestAsiaiContextSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator twice")
	}
	parent := filepath.Join(t.TempDir(), "sweep")
	out, errOut, code := runCLI(t, "run", "asiai", "--out", parent, "--no-progress", "--sweep", "context_tokens=1024,2048",
		"--set", "request_count=1", "--set", "runs=2")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && (f[0] == "1024" || f[0] == "2048") && f[1] == "sim" {
			rows = append(rows, l)
		}
	}
	if !strings.Contains(out, "sweep of context_tokens") || len(rows) != 2 {
		t.Fatalf("want one row per size:\n%s", out)
	}
	for i, size := range []string{"1024", "2048"} {
		run, err := archive.Load(filepath.Join(parent, "context_tokens-"+size))
		if err != nil {
			t.Fatal(err)
		}
		l := run.Meta.Labels
		if run.Meta.Status != record.StatusComplete || l["context_tokens_filled"] != size || l["sweep_value"] != size {
			t.Errorf("size %s: status %s labels %v", size, run.Meta.Status, l)
		}
		_, cooled := run.Meta.EventByName("cooldown_ended")
		if cooled != (i == 1) || (i == 1) != (l["cooldown"] != "") {
			t.Errorf("size %s: cooldown event %v label %q, want only before the second run", size, cooled, l["cooldown"])
		}
		if p := run.Meta.Parameters["context_tokens"]; p != float64(mustAtoi(size)) && p != mustAtoi(size) {
			t.Errorf("size %s: parameter context_tokens = %v", size, p)
		}
	}
}

func mustAtoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
