package campaign

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/engines"
)

// The campaign asks the registry it was given (the run command's) which
// kinds exist and which take --tp, not a registry of its own: a kind only
// the injected registry knows is valid and gets --tp when it takes it.
func TestInjectedRegistry(t *testing.T) {
	reg := engines.NewRegistry()
	start := func(engines.Options) (engines.Engine, error) { return nil, nil }
	for _, d := range []engines.Descriptor{
		{Kind: "sim", API: engines.APIOpenAI, Simulated: true, Start: start},
		{Kind: "tgi", API: engines.APIOpenAI, Start: start, Flags: []string{"model", "tp"}},
		{Kind: "vllm", API: engines.APIOpenAI, Start: start, Flags: []string{"model"}},
	} {
		if err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	src := `name: t
profile: benchmark-1.5
out: out
matrix:
  engine: [{kind: tgi}, {kind: vllm}]
  model: [{id: org/big, params: 70e9, tp: 4}]
`
	path := filepath.Join(t.TempDir(), "c.yaml")
	if _, err := Load([]byte(src), path); err == nil || !strings.Contains(err.Error(), `unknown engine kind "tgi"`) {
		t.Fatalf("the built-in registry knows no tgi: %v", err)
	}
	c, err := Loader{Engines: reg}.Load([]byte(src), path)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Expand()
	if len(p.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(p.Runs))
	}
	for _, r := range p.Runs {
		// This registry's vllm takes no --tp; its tgi does.
		hasTP := strings.Contains(strings.Join(r.Args("D"), " "), "--tp 4")
		if want := r.Axes["engine"] == "tgi"; hasTP != want {
			t.Errorf("engine %s: --tp 4 present = %v, want %v", r.Axes["engine"], hasTP, want)
		}
	}
}
