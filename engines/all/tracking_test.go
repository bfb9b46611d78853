//go:build unix

package all_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/engines/process"
)

// sleeper is a managed engine that runs `sleep 60` and serves nothing.
type sleeper struct{ *process.Managed }

func (s sleeper) Identity(context.Context) (engines.Identity, error) { return engines.Identity{}, nil }
func (s sleeper) Info() record.EngineInfo                            { return s.BaseInfo() }

// A managed engine built by New is tracked: a pid file in the spec's
// PidDir while it runs (a later run reports it if joulebench is killed),
// removed once the stop found it gone.
func TestManagedEngineTracked(t *testing.T) {
	reg := all.Registry()
	d := engines.Descriptor{Kind: "sleeper", API: engines.APIOpenAI, Processes: []string{"sleep"},
		Start: func(o engines.Options) (engines.Engine, error) {
			return sleeper{process.NewManaged(process.ManagedSpec{Kind: "sleeper", Name: "sleep", API: engines.APIOpenAI,
				Argv: []string{"sleep", "60"}, Port: 1, RunDir: o.RunDir})}, nil
		}}
	if err := reg.Register(d); err != nil {
		t.Fatal(err)
	}
	pidDir := filepath.Join(t.TempDir(), "pids")
	e, err := all.New(all.Spec{Kind: "sleeper", Engines: reg, RunDir: t.TempDir(), PidDir: pidDir})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.Stop(context.Background(), time.Second) })
	files, _ := filepath.Glob(filepath.Join(pidDir, "sleep-*.json"))
	if len(files) != 1 {
		t.Fatalf("pid files %v, want one for the running engine", files)
	}
	if _, err := e.Stop(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(pidDir, "*")); len(files) != 0 {
		t.Errorf("pid files after the stop: %v", files)
	}
}
