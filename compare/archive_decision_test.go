package compare_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/analysis"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/profiles"
)

// archiveCopy copies archive/testdata/sample-run-ok to root/name with
// profile.yaml as its profile (run.json's profile.sha256 updated) and
// edit applied to run.json; its run ID gets the suffix -name.
func archiveCopy(t *testing.T, root, name string, profile []byte, edit func(meta map[string]any)) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.CopyFS(dir, os.DirFS("../archive/testdata/sample-run-ok")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "profile.yaml"), profile, 0o644); err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err == nil {
		err = json.Unmarshal(b, &meta)
	}
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(profile)
	meta["profile"].(map[string]any)["sha256"] = hex.EncodeToString(sum[:])
	meta["run_id"] = meta["run_id"].(string) + "-" + name
	if edit != nil {
		edit(meta)
	}
	if b, err = json.MarshalIndent(meta, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func builtinProfile(t *testing.T) []byte {
	t.Helper()
	b, err := profiles.Read("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func compareDirs(t *testing.T, sets []string, dirs ...string) *compare.Report {
	t.Helper()
	c, err := analysis.Profiles{}.Compare(context.Background(), dirs, "", "", sets, compare.FrontierOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Report
}

// Two copies of sample-run-ok evaluated with today's built-in
// benchmark-1.5, recorded with slo_tpot_ms 17 and 1000 (their requests'
// TPOT is about 20 ms: tpot_p50_ms 20.08). They are decided per SLO: the
// 1000 ms decision chooses s1000; s1000 is not a choice under 17 ms (it
// was never measured against it). compare --set slo_tpot_ms=1000 holds
// both to 1000 ms, the user's explicit choice: one decision, under
// "TPOT ≤ 1000 ms", whose point pools the two (now the same
// configuration and load: two repetitions).
func TestArchivesDecidedPerSLO(t *testing.T) {
	root, prof := t.TempDir(), builtinProfile(t)
	slo := func(v float64) func(map[string]any) {
		return func(m map[string]any) { m["parameters"].(map[string]any)["slo_tpot_ms"] = v }
	}
	a := archiveCopy(t, root, "s17", prof, slo(17))
	b := archiveCopy(t, root, "s1000", prof, slo(1000))
	rep := compareDirs(t, nil, a, b)
	if rep.Decision.Chosen || len(rep.Decisions) != 2 {
		t.Fatalf("decision chosen %v (%s), %d decisions; want none and 2", rep.Decision.Chosen, rep.Decision.Run, len(rep.Decisions))
	}
	tight, loose := rep.Decisions[0], rep.Decisions[1]
	if tight.SLO == nil || tight.SLO.TPOTMs != 17 || strings.HasSuffix(tight.Run, "-s1000") {
		t.Errorf("17 ms decision: SLO %+v, run %q", tight.SLO, tight.Run)
	}
	if loose.SLO == nil || loose.SLO.TPOTMs != 1000 || !loose.Chosen || !strings.HasSuffix(loose.Run, "-s1000") {
		t.Errorf("1000 ms decision: SLO %+v, chosen %v %q", loose.SLO, loose.Chosen, loose.Run)
	}

	one := compareDirs(t, []string{"slo_tpot_ms=1000"}, a, b)
	d := one.Decision
	if len(one.Decisions) != 1 || !d.Chosen || d.SLO == nil || d.SLO.TPOTMs != 1000 || d.Runs != 2 ||
		!strings.HasPrefix(d.SLOText, "TPOT ≤ 1000 ms for 99 % of requests") {
		t.Errorf("--set slo_tpot_ms=1000: %d decisions, chosen %v %q (%d runs), SLO %+v %q", len(one.Decisions), d.Chosen, d.Run, d.Runs, d.SLO, d.SLOText)
	}
}

// Two copies of sample-run-ok, one with today's built-in benchmark-1.5,
// the other with a copy whose formal_j_per_token formula was edited to
// halve it (sha256 updated, still named benchmark-1.5). By hand: the
// built-in gives 3.3606 J/token (formal; sample-run-ok's analyze
// golden), the edited copy 3.3606 / 2 = 1.6803. They are two methods:
// the edited run is flagged profile_edited, and each method has its own
// decision; the decision itself chooses neither.
func TestArchivesDecidedPerMethod(t *testing.T) {
	root, prof := t.TempDir(), builtinProfile(t)
	const formula = "expr: e_formal / formal_tokens, when: formal_tokens > 0"
	if !strings.Contains(string(prof), formula) {
		t.Fatalf("built-in benchmark-1.5 has no %q to edit", formula)
	}
	edited := []byte(strings.Replace(string(prof), formula, "expr: e_formal / formal_tokens / 2, when: formal_tokens > 0", 1))
	a := archiveCopy(t, root, "builtin", prof, nil)
	b := archiveCopy(t, root, "edited", edited, nil)
	rep := compareDirs(t, nil, a, b)
	if rep.Decision.Chosen || len(rep.Decisions) != 2 || !strings.Contains(rep.Decision.Note, "2 methods (profiles)") {
		t.Fatalf("decision chosen %v (%s), %d decisions, note %q", rep.Decision.Chosen, rep.Decision.Run, len(rep.Decisions), rep.Decision.Note)
	}
	near := func(v *float64, want float64) bool { return v != nil && *v > want-5e-5 && *v < want+5e-5 }
	for i, w := range []struct {
		suffix, method string
		j              float64
	}{{"-builtin", "benchmark-1.5 (built-in", 3.3606}, {"-edited", "benchmark-1.5 (sha256 ", 1.6803}} {
		g := rep.Decisions[i]
		if !g.Chosen || !strings.HasSuffix(g.Run, w.suffix) || g.Runs != 1 || !near(g.JPerToken, w.j) || !strings.HasPrefix(g.Method, w.method) {
			t.Errorf("decision %d: %q (%d runs) at %v, method %q; want *%s at %v under %q", i, g.Run, g.Runs, g.JPerToken, g.Method, w.suffix, w.j, w.method)
		}
	}
	if !strings.Contains(rep.Decisions[1].Method, "profile edited: differs from built-in benchmark-1.5") {
		t.Errorf("edited method %q", rep.Decisions[1].Method)
	}
	for _, r := range rep.Runs {
		edited := false
		for _, f := range r.Flags {
			edited = edited || f.Name == compare.FlagProfileEdited
		}
		if edited != strings.HasSuffix(r.RunID, "-edited") {
			t.Errorf("run %s: profile_edited %v", r.RunID, edited)
		}
	}
}
