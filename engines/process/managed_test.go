package process

import (
	"fmt"
	"maps"
	"path/filepath"
	"testing"
)

// The shared setup: the engine's variables, then its caches under
// RunDir/compile-cache, then the user's overrides, which win.
func TestNewManagedEnv(t *testing.T) {
	cases := []struct {
		name     string
		spec     ManagedSpec
		env      map[string]string
		cacheDir string
		health   string
		procName string
	}{
		{"nothing", ManagedSpec{Kind: "k", Port: 7, Health: "/h"}, nil, "", "http://127.0.0.1:7/h", "k"},
		{"caches only with a run dir", ManagedSpec{Kind: "k", Port: 7, CacheEnv: map[string]string{"C": "c"}}, nil, "", "http://127.0.0.1:7", "k"},
		{"merge", ManagedSpec{Kind: "k", Name: "proc", Port: 7, RunDir: "/r", Env: map[string]string{"A": "1", "B": "1"},
			CacheEnv: map[string]string{"C": "c", "D": "d"}, Overrides: map[string]string{"B": "2", "D": "mine"}},
			map[string]string{"A": "1", "B": "2", "C": filepath.Join("/r", CompileCacheDir, "c"), "D": "mine"},
			filepath.Join("/r", CompileCacheDir), "http://127.0.0.1:7", "proc"},
	}
	for _, c := range cases {
		m := NewManaged(c.spec)
		if !maps.Equal(m.Spec.Env, c.env) || (c.env == nil) != (m.Spec.Env == nil) {
			t.Errorf("%s: env %v, want %v", c.name, m.Spec.Env, c.env)
		}
		if m.CacheDir != c.cacheDir || m.Spec.Name != c.procName || m.Kind() != "k" || m.Spec.Dir != c.spec.RunDir {
			t.Errorf("%s: cache %q name %q kind %q dir %q", c.name, m.CacheDir, m.Spec.Name, m.Kind(), m.Spec.Dir)
		}
		if m.HealthURL() != c.health {
			t.Errorf("%s: health %q, want %q", c.name, m.HealthURL(), c.health)
		}
	}
}

func TestResolvePort(t *testing.T) {
	if p, err := ResolvePort("k", 8000); p != 8000 || err != nil {
		t.Errorf("a given port: %d %v", p, err)
	}
	if p, err := ResolvePort("k", 0); p <= 0 || err != nil {
		t.Errorf("a free port: %d %v", p, err)
	}
}

// run.json's engine.env and engine.command (BaseInfo) hide the values of
// --engine-env overrides and engine arguments whose names look secret.
func TestBaseInfoRedactsOverrides(t *testing.T) {
	m := NewManaged(ManagedSpec{Kind: "k", Port: 7, Argv: []string{"srv", "--api-key", "sk-1", "--db-password=pw2", "--port", "7"},
		Overrides: map[string]string{"OPENAI_KEY": "k3", "DB_PASS": "p4", "MYSQL_PWD": "p5", "N_THREADS": "8"}})
	info := m.BaseInfo()
	want := map[string]string{"OPENAI_KEY": Redacted, "DB_PASS": Redacted, "MYSQL_PWD": Redacted, "N_THREADS": "8"}
	if !maps.Equal(info.Env, want) {
		t.Errorf("env %v, want %v", info.Env, want)
	}
	if got := fmt.Sprint(info.Command); got != "[srv --api-key [redacted] --db-password=[redacted] --port 7]" {
		t.Errorf("command %s", got)
	}
}
