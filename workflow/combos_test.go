package workflow_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// A profile that starts an engine must stop it: start_engine without a
// later release step is a load error at the start_engine step's kind.
func TestStartEngineNeedsRelease(t *testing.T) {
	path := filepath.Join("testdata", "no-release.bad.yaml")
	_, err := load(t, path, nil)
	list, ok := err.(workflow.ErrorList)
	if !ok || len(list) != 1 {
		t.Fatalf("want one error, got %T %v", err, err)
	}
	// "  - {kind: start_engine}" on line 4: the value starts at column 12.
	want := path + ":4:12: steps[1] (start_engine): a start_engine step needs a later release step"
	if got := list[0].Error(); !strings.HasPrefix(got, want) {
		t.Errorf("error\n%s\nwant prefix\n%s", got, want)
	}

	// A release before the start does not stop it either.
	src := strings.Replace(mustRead(t, path), "  - {kind: monitor}\n", "  - {kind: monitor}\n  - {kind: release}\n", 1)
	if _, err := workflow.Load([]byte(src), "x.yaml", workflow.Options{Registry: stepsRegistry()}); err == nil || !strings.Contains(err.Error(), "needs a later release step") {
		t.Errorf("release before start_engine: %v", err)
	}
	// With a release after it, the profile loads.
	src = strings.Replace(mustRead(t, path), "  - {kind: archive}\n", "  - {kind: release}\n  - {kind: archive}\n", 1)
	if _, err := workflow.Load([]byte(src), "x.yaml", workflow.Options{Registry: stepsRegistry()}); err != nil {
		t.Errorf("with release: %v", err)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func stepsRegistry() *workflow.Registry[*steps.Deps] { return steps.Registry() }
