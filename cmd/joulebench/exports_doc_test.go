package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/profiles"
)

// Every joulebench figure docs/exports.md maps a field of llm-d's
// Benchmark Report or of the MLPerf energy-reporting proposal to (a
// `snake_case` name in a table's right column) is a value benchmark-1.5
// computes: a metric, a derived value or a stage of its stage_energy
// section (stage_NAME_start, _end, _energy_j), or one of the run.json
// fields named. A renamed metric breaks the page, and this test says which.
func TestExportsDocNames(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "exports.md"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := profiles.Read("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	base, err := profiles.Read("benchmark-1.0")
	if err != nil {
		t.Fatal(err)
	}
	profile := string(src) + string(base)
	runJSON := []string{"run_id", "started_at", "ended_at"}
	name := regexp.MustCompile("`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`")
	stage := regexp.MustCompile(`^stage_([a-z]+)_(start|end|energy_j)$`)
	checked := 0
	for _, line := range strings.Split(string(page), "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 4 {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cells[2], -1) {
			n := m[1]
			checked++
			if s := stage.FindStringSubmatch(n); s != nil {
				n = s[1] // a stage of stage_energy: its name is a stage of the profile
			}
			if slices.Contains(runJSON, n) {
				continue
			}
			if !regexp.MustCompile(`(?m)(^\s+|name: |stage: |\{name: )` + regexp.QuoteMeta(n) + `\b`).MatchString(profile) {
				t.Errorf("docs/exports.md names %s, which benchmark-1.5 does not compute", m[1])
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d names checked: the tables moved", checked)
	}
}
