package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README says how to install the command, with the module path of
// go.mod, for the default and the Kubernetes build, before any example
// calls `joulebench` bare (a code span or a command line starting with
// joulebench).
func TestReadmeInstall(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod names no module")
	}
	text := string(readme)
	install := "go install " + string(m[1]) + "/cmd/joulebench@latest"
	kube := "go install -tags kubernetes " + string(m[1]) + "/cmd/joulebench@latest"
	at := strings.Index(text, install)
	if at < 0 || !strings.Contains(text, kube) {
		t.Fatalf("README.md lacks %q or %q", install, kube)
	}
	if where, what := firstBareCall(text); where >= 0 && where < at {
		t.Errorf("README.md calls joulebench bare (%q, byte %d) before it says how to install it (byte %d)", what, where, at)
	}
}

// firstBareCall is the byte offset of the first bare call of joulebench in
// a Markdown page, and the call: a code span `joulebench CMD`, or a line
// of a fenced block starting with joulebench or $ joulebench; -1 if none.
func firstBareCall(page string) (int, string) {
	span := regexp.MustCompile("`joulebench [a-z]+")
	off, fenced := 0, false
	for _, l := range strings.SplitAfter(page, "\n") {
		trim := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(trim, "```"):
			fenced = !fenced
		case fenced && (strings.HasPrefix(trim, "joulebench ") || strings.HasPrefix(trim, "$ joulebench ")):
			return off, trim
		case !fenced:
			if m := span.FindStringIndex(l); m != nil {
				return off + m[0], l[m[0]:m[1]]
			}
		}
		off += len(l)
	}
	return -1, ""
}

func TestFirstBareCall(t *testing.T) {
	for _, c := range []struct {
		page string
		at   int
	}{
		{"joulebench measures\n```sh\ngo run ./cmd/joulebench run x\n```\n", -1}, // prose and go run are not bare calls
		{"ab `joulebench estimate` x\n", 3},
		{"a\n```text\n$ joulebench compare runs\n```\n", 10}, // "a\n" 2 bytes + "```text\n" 8
		{"```sh\n`joulebench x` inside a block\n```\n", -1},
	} {
		if got, what := firstBareCall(c.page); got != c.at {
			t.Errorf("%q: %d (%q), want %d", c.page, got, what, c.at)
		}
	}
}
