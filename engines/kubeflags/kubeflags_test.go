package kubeflags

import (
	"errors"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/engines"
)

// The kind without the client registers with its flags, and refuses to
// validate or start, saying how to get joulebench-kube.
func TestUnavailableRefusesWithHowToBuild(t *testing.T) {
	d := Unavailable()
	r := engines.NewRegistry()
	if err := r.Register(d); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{FlagPod, FlagKubeconfig, FlagNamespace, FlagSimulated} {
		if !d.Accepts(f) {
			t.Errorf("flag --%s not declared", f)
		}
	}
	o := engines.Options{Settings: engines.Settings{FlagPod: "pod.yaml"}}
	err := d.Validate(o)
	if !errors.Is(err, ErrNotBuiltIn) || !strings.HasPrefix(err.Error(), "--engine kubernetes: ") ||
		!strings.Contains(err.Error(), "go build -tags kubernetes -o joulebench-kube ./cmd/joulebench") {
		t.Errorf("Validate: %v", err)
	}
	if e, err := d.Start(o); e != nil || !errors.Is(err, ErrNotBuiltIn) {
		t.Errorf("Start: %v, %v", e, err)
	}
}
