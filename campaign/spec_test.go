package campaign

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/runner/runflags"
	telall "github.com/joulebench/joulebench/telemetry/all"
)

// A run's settings are built at plan time from its run flags; its process
// is given them in a file beside its log, readable by the user alone,
// that holds none of the campaign's secrets (they go through the
// environment: TestSweepChildArgvHoldsNoSecret).
func TestSpecFileHoldsNoSecret(t *testing.T) {
	c := load(t, secretCampaign)
	r := c.Expand().Runs[0]
	if r.SpecErr != nil {
		t.Fatal(r.SpecErr)
	}
	if r.Spec.APIKey != secretKey || !slices.Contains(r.Spec.EngineEnv, "HF_TOKEN="+secretEnv) {
		t.Fatalf("the plan's settings lack the secrets: %+v", r.Spec)
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	// /bin/true stands for joulebench.
	if err := c.runLocal(context.Background(), r, Options{Binary: "/bin/true", Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.Dir, "logs", r.ID+".spec.json")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("spec file mode %v, want 0600", fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secretKey, secretPass, secretBody, secretEnv, secretArg} {
		if strings.Contains(string(b), s) {
			t.Errorf("the spec file holds %q:\n%s", s, b)
		}
	}
	got, err := runflags.Decode(bytes.NewReader(b), path, runflags.Registries{Engines: all.Registry(), Telemetry: telall.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Engines, []string{"vllm"}) || !slices.Equal(got.Labels, []string{"campaign=t"}) || got.APIKey != "" || got.EngineURL != "" {
		t.Errorf("spec file read back: %+v", got)
	}
}

// Every flag a spec file leaves out is one the sweep passes to the run
// through its environment.
func TestSpecSecretsPassedThroughEnvironment(t *testing.T) {
	for _, f := range runflags.SecretFlags() {
		if _, ok := secretFlags["--"+f]; !ok && !secretListFlags["--"+f] {
			t.Errorf("--%s: left out of spec files, not passed through the environment", f)
		}
	}
}

// Flags that no run could take are refused when the campaign loads, at
// the matrix, before anything runs (the run command's checker, when the
// loader has one, says which list: cmd/joulebench's TestCampaignValidateRefuses).
func TestLoadRefusesRunsWithoutSettings(t *testing.T) {
	_, err := Load([]byte("name: t\nprofile: benchmark-1.5\nout: out\nmatrix:\n  engine: [{kind: sim, args: [--bogus]}]\n"), "c.yaml")
	if err == nil || !strings.Contains(err.Error(), "c.yaml:5:3: matrix: run sim-r1-") || !strings.Contains(err.Error(), "unknown flag: --bogus") {
		t.Fatalf("error %v", err)
	}
}

// The settings a campaign builds are those of its run flags; a point
// against a running server gets its idle level typed, as given.
func TestRunSettings(t *testing.T) {
	c := load(t, "name: t\nprofile: benchmark-1.5\nout: out\nmatrix:\n  engine: [{kind: sim, args: [--sim-preset, small-batch, --tp, '1']}]\n  set: {window: ['5']}\n")
	r := c.Expand().Runs[0]
	s, err := c.runSettings(r)
	if err != nil {
		t.Fatal(err)
	}
	want, err := runflags.Parse("benchmark-1.5", r.Config.Args, runflags.Registries{Engines: all.Registry(), Telemetry: telall.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	if s.EngineSettings["sim-preset"] != "small-batch" || !slices.Equal(s.Sets, []string{"window=5"}) || !slices.Contains(s.Changed, "tp") {
		t.Errorf("settings %+v", s)
	}
	if !equalJSON(t, s, want) {
		t.Error("the run's settings differ from its flags' (runflags.Parse)")
	}
	r.SpecErr = os.ErrInvalid
	if _, err := c.runSettings(r); err == nil || !strings.Contains(err.Error(), "run "+r.ID) {
		t.Errorf("a run without settings: %v", err)
	}
}

func equalJSON(t *testing.T, a, b runflags.Settings) bool {
	t.Helper()
	x, err := runflags.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := runflags.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}
