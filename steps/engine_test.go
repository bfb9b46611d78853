package steps

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workflow"
)

func TestStartEngine(t *testing.T) {
	t.Run("managed", func(t *testing.T) {
		rc := newRC(t)
		eng := newTestEngine("http://127.0.0.1:1")
		var clientFor string
		d := &Deps{Engine: eng, NewClient: func(u string) loadgen.Doer { clientFor = u; return &testClient{} }}
		var stages []string
		d.Progress = func(p Progress) { stages = append(stages, p.Stage) }
		cfg := &StartEngineConfig{ReadyTimeout: workflow.Duration(3 * time.Second)}
		if err := runStartEngine(context.Background(), rc, d, cfg); err != nil {
			t.Fatal(err)
		}
		if !eng.started || eng.readyTimeout != 3*time.Second {
			t.Errorf("started %v, ready_timeout passed %v; want true, 3s", eng.started, eng.readyTimeout)
		}
		if clientFor != eng.url || d.Client == nil {
			t.Errorf("client made for %q, want %q", clientFor, eng.url)
		}
		if _, open := rc.StageOpen("startup"); !open {
			t.Error("stage startup not open")
		}
		m := rc.Out.Meta()
		ev := eventNames(m)
		if !ev["engine_started"] || !ev["engine_ready"] || m.Engine.Kind != "test" {
			t.Errorf("events %v, engine %+v", ev, m.Engine)
		}
		if strings.Join(stages, ",") != "startup" {
			t.Errorf("progress stages %v", stages)
		}
	})
	t.Run("external: no startup stage, no engine_started", func(t *testing.T) {
		rc := newRC(t)
		given := &testClient{}
		d := &Deps{Engine: newTestEngine("http://x"), External: true, Client: given,
			NewClient: func(string) loadgen.Doer { t.Error("a client was given: none should be made"); return nil }}
		if err := runStartEngine(context.Background(), rc, d, &StartEngineConfig{ReadyTimeout: workflow.Duration(time.Second)}); err != nil {
			t.Fatal(err)
		}
		if _, open := rc.StageOpen("startup"); open {
			t.Error("external engine opened a startup stage")
		}
		ev := eventNames(rc.Out.Meta())
		if ev["engine_started"] || !ev["engine_ready"] {
			t.Errorf("events %v", ev)
		}
		if d.Client != given {
			t.Error("the given client was replaced")
		}
	})
	for _, c := range []struct {
		name string
		set  func(*testEngine)
		want string
	}{
		{"start fails", func(e *testEngine) { e.startErr = errBoom }, "start test: boom"},
		{"never ready", func(e *testEngine) { e.readyErr = errBoom }, "test not ready: boom"},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := newTestEngine("http://x")
			c.set(eng)
			err := runStartEngine(context.Background(), newRC(t), &Deps{Engine: eng}, &StartEngineConfig{ReadyTimeout: workflow.Duration(time.Second)})
			if !errors.Is(err, errBoom) || err.Error() != c.want {
				t.Errorf("err = %v, want %q wrapping boom", err, c.want)
			}
		})
	}
	if err := runStartEngine(context.Background(), newRC(t), &Deps{}, &StartEngineConfig{}); err == nil || err.Error() != "no engine" {
		t.Errorf("no engine: %v", err)
	}
}

func TestVerifyEngine(t *testing.T) {
	served := engines.Identity{Model: "m", Revision: "abc", EngineVersion: "0.9", ContextLength: 4096, TensorParallel: 2}
	all := []string{"model", "revision", "engine_version", "context_length", "parallel"}
	cases := []struct {
		name   string
		model  string
		expect engines.Identity
		check  []string
		want   []string // fragments of the error; none: passes
	}{
		{"all match", "m", engines.Identity{Revision: "abc", EngineVersion: "0.9", ContextLength: 4096, TensorParallel: 2}, all, nil},
		{"nothing expected", "", engines.Identity{}, all, nil},
		{"every field differs", "other", engines.Identity{Revision: "def", EngineVersion: "1.0", ContextLength: 8192, TensorParallel: 4}, all, []string{
			`model: requested "other", served "m"`, `revision: requested "def", served "abc"`,
			`engine version: requested "1.0", running "0.9"`, "context length: requested 8192, served 4096",
			"tensor parallel: requested 4, running 2"}},
		{"a field not checked is not compared", "other", engines.Identity{TensorParallel: 4}, []string{"parallel"}, []string{"tensor parallel: requested 4"}},
		{"expected model wins over the requested one", "x", engines.Identity{Model: "m"}, []string{"model"}, nil},
	}
	// Ollama's OpenAI API lists --model tiny as tiny:latest (its implicit
	// tag): the same model, not a mismatch; another tag is one.
	for _, c := range []struct {
		model, served string
		want          []string
	}{
		{"tiny", "tiny:latest", nil},
		{"tiny:latest", "tiny", nil},
		{"library/tiny", "library/tiny:latest", nil},
		{"tiny:q8", "tiny:latest", []string{`model: requested "tiny:q8", served "tiny:latest"`}},
		{"tiny", "tiny:q8", []string{`model: requested "tiny", served "tiny:q8"`}},
	} {
		t.Run("ollama tag "+c.model+" "+c.served, func(t *testing.T) {
			eng := newTestEngine("http://x")
			eng.id = engines.Identity{Model: c.served}
			err := runVerifyEngine(context.Background(), newRC(t), &Deps{Engine: eng, Model: c.model}, &VerifyEngineConfig{Check: []string{"model"}})
			if len(c.want) == 0 && err != nil {
				t.Fatalf("unexpected: %v", err)
			}
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want …%s…", err, w)
				}
			}
		})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := newRC(t)
			eng := newTestEngine("http://x")
			eng.id = served
			err := runVerifyEngine(context.Background(), rc, &Deps{Engine: eng, Model: c.model, Expect: c.expect}, &VerifyEngineConfig{Check: c.check})
			if len(c.want) == 0 && err != nil {
				t.Fatalf("unexpected: %v", err)
			}
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want …%s…", err, w)
				}
			}
			// What was served is archived either way.
			m := rc.Out.Meta()
			if m.Engine.ServedModel != "m" || m.Engine.Revision != "abc" || m.Engine.Version != "0.9" || m.Engine.ContextLength != 4096 || m.Engine.TensorParallel != 2 {
				t.Errorf("engine meta %+v", m.Engine)
			}
		})
	}
	eng := newTestEngine("http://x")
	eng.idErr = errBoom
	if err := runVerifyEngine(context.Background(), newRC(t), &Deps{Engine: eng}, &VerifyEngineConfig{}); !errors.Is(err, errBoom) {
		t.Errorf("identity error: %v", err)
	}
}
