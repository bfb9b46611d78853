package campaign

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/internal/redact"
)

func TestSetsOf(t *testing.T) {
	for _, tc := range []struct{ args, want []string }{
		{nil, nil},
		{[]string{"--set", "a=1", "--engine", "sim", "--set=b=2"}, []string{"a=1", "b=2"}},
		{[]string{"--engine", "sim", "--set"}, nil}, // --set without a value
	} {
		if got := SetsOf(tc.args); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("SetsOf(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestCheckExecutor(t *testing.T) {
	for _, e := range []string{"local", "slurm"} {
		if err := CheckExecutor(e); err != nil {
			t.Errorf("%s: %v", e, err)
		}
	}
	if err := CheckExecutor("k8s"); err == nil || err.Error() != `--executor "k8s": valid are local, slurm` || exitcode.Of(err) != int(exitcode.Invalid) {
		t.Errorf("k8s: %v", err)
	}
}

// The points of a search checked before it starts, and those a dry run
// shows: a sweep search's synchronous, throughput and one rate point
// (checked) or its first two (shown); an slo search's bounds.
func TestSearchPoints(t *testing.T) {
	sweep := load(t, "name: s\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: sim}]}\nsearch: {kind: sweep}\n")
	slo := load(t, "name: s\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: sim}]}\n"+
		"search: {kind: slo, low: 1, high: 32, slo: {tpot_ms: 20.5}}\n")
	plain := load(t, good)
	names := func(p Plan) string {
		var out []string
		for _, r := range p.Runs {
			out = append(out, SetsOf(r.Config.Args)...)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		name    string
		c       *Campaign
		checked int
		first   string
	}{
		{"sweep", sweep, 3, "concurrency"},
		{"slo", slo, 2, "concurrency=32"},
	} {
		plan := tc.c.Expand()
		if got := len(tc.c.CheckedPlan(plan).Runs); got != tc.checked*len(plan.Runs) {
			t.Errorf("%s: %d checked points, want %d", tc.name, got, tc.checked*len(plan.Runs))
		}
		first := tc.c.FirstPoints(plan)
		if len(first.Runs) != 2*len(plan.Runs) || !strings.Contains(names(first), tc.first) {
			t.Errorf("%s: first points %q", tc.name, names(first))
		}
	}
	if p := plain.Expand(); len(plain.CheckedPlan(p).Runs) != len(p.Runs) {
		t.Error("a campaign without search checks its plan as it is")
	}
}

func writeCampaign(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Checker checks each distinct (profile, --set) once, before anything
// runs, and names the run whose profile refuses its values.
func TestChecker(t *testing.T) {
	var checked []string
	k := Checker{CheckProfile: func(profile string, sets []string) error {
		checked = append(checked, profile+" "+strings.Join(sets, ","))
		if strings.Contains(strings.Join(sets, ","), "warmup_requests=8") {
			return errors.New("warmup_requests: too many")
		}
		return nil
	}}
	path := writeCampaign(t, good)
	_, _, err := k.Open(path)
	if err == nil || !strings.HasPrefix(err.Error(), "run ") || !strings.Contains(err.Error(), "warmup_requests: too many") || exitcode.Of(err) != int(exitcode.Invalid) {
		t.Fatalf("Open: %v", err)
	}
	k.CheckProfile = func(string, []string) error { return nil }
	c, plan, err := k.Open(path)
	// 2 engines × 2 models × 2 warmup values × 2 repetitions, sglang×big
	// excluded: (4 - 1) × 2 × 2 = 12 runs, 4 excluded.
	if err != nil || len(plan.Runs) != 12 || plan.Excluded != 4 || c.Name != "t" {
		t.Fatalf("Open: %d runs, %d excluded, %v", len(plan.Runs), plan.Excluded, err)
	}
	summary, ok, err := k.Validate(path)
	if !ok || err != nil || summary != path+": campaign t is valid: 12 runs (4 excluded), profile benchmark-1.5" {
		t.Errorf("Validate = %q, %v, %v", summary, ok, err)
	}
	if _, ok, _ := k.Validate(writeCampaign(t, "name: p\nsteps: []\n")); ok {
		t.Error("a profile was taken for a campaign")
	}
	bad := writeCampaign(t, "name: t\nprofile: p\nout: o\nmatrix: {}\nbogus: 1\n")
	if _, ok, err := k.Validate(bad); !ok || err == nil || !strings.HasPrefix(err.Error(), "invalid campaign:") {
		t.Errorf("bad campaign: %v, %v", ok, err)
	}
	if _, _, err := k.Open(bad); err == nil || exitcode.Of(err) != int(exitcode.Invalid) {
		t.Errorf("Open of a bad campaign: %v", err)
	}
	none := writeCampaign(t, "name: t\nprofile: p\nout: o\nmatrix: {engine: [{kind: sim}]}\nexclude: [{engine: sim}]\n")
	if _, _, err := k.Open(none); err == nil || !strings.Contains(err.Error(), "every combination is excluded") {
		t.Errorf("all excluded: %v", err)
	}
}

// A dry run shows each run's command line with its secrets hidden, and
// of a slurm campaign the sbatch script.
func TestDryRun(t *testing.T) {
	src := strings.Replace(good, "scenario: [{name: chat, dataset: chat}]", "scenario: [{name: chat, dataset: chat, args: [--api-key, sk-secret-value-123]}]", 1)
	c := load(t, src)
	plan := c.Expand()
	var b strings.Builder
	if err := c.DryRun(&b, plan, "/bin/jb", "local", redact.New()); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	if !strings.HasPrefix(s, "campaign t: 12 runs (4 excluded by the exclude list), executor local\n") ||
		strings.Contains(s, "sk-secret-value-123") || !strings.Contains(s, "--api-key") || strings.Count(s, "/bin/jb run benchmark-1.5 --out ") != 12 {
		t.Errorf("dry run:\n%s", s)
	}
	b.Reset()
	if err := c.DryRun(&b, plan, "/bin/jb", "slurm", redact.New()); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); strings.Count(s, "sbatch script:") != 12 || strings.Contains(s, "sk-secret-value-123") || !strings.Contains(s, "       #!") {
		t.Errorf("slurm dry run:\n%s", s)
	}
	if got := strings.Join(quoteArgs([]string{"a", "", "b c", "it's"}), " "); got != `a '' 'b c' 'it'\''s'` {
		t.Errorf("quoteArgs = %s", got)
	}
}

func TestOutcome(t *testing.T) {
	c := load(t, good)
	search := load(t, "name: s\nprofile: benchmark-1.5\nout: out\nmatrix: {engine: [{kind: sim}]}\nsearch: {kind: sweep}\n")
	plan := c.Expand()
	for _, tc := range []struct {
		name string
		c    *Campaign
		res  Result
		want string
	}{
		{"all complete", c, Result{}, ""},
		{"failed", c, Result{Failed: []string{"x: exit 1"}}, "sweep c.yaml: 1 of 12 runs failed (--retry-failed runs them again)"},
		{"left", c, Result{Summary: Summary{Left: 2}}, "sweep c.yaml: 2 runs have no complete archive"},
		{"a search's failed point", search, Result{Failed: []string{"x"}, Summary: Summary{Left: 1}}, ""},
	} {
		err := tc.c.Outcome("c.yaml", plan, tc.res)
		if got := ""; err != nil {
			got = err.Error()
			if exitcode.Of(err) != int(exitcode.Failure) {
				t.Errorf("%s: exit %d", tc.name, exitcode.Of(err))
			}
			if got != tc.want {
				t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("%s: no error, want %q", tc.name, tc.want)
		}
	}
}
