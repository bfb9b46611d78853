package steps

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/internal/runprogress"
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
		d.Progress = func(p runprogress.Snapshot) { stages = append(stages, p.Stage) }
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

// The precision asked for (the engine's options, the GGUF file,
// --precision) against the one served: spellings of one dtype agree, a
// different one fails with both and where each was read; an unknown side
// is not compared. What is served (else what was asked) goes to run.json.
func TestVerifyEnginePrecision(t *testing.T) {
	bf16Config := engines.Precision{DType: "bf16", Format: "safetensors", From: "config.json"}
	for _, c := range []struct {
		name       string
		want, got  engines.Precision
		err        string
		recorded   string
		quant, fmt string
	}{
		{"same dtype, two spellings", engines.Precision{DType: engines.NormalizePrecision("bfloat16"), From: "engine arguments"}, bf16Config, "", "bf16", "bf16", "safetensors"},
		{"fp8 asked, bf16 served", engines.Precision{Quant: "fp8", From: "--precision"}, bf16Config,
			`precision: requested "fp8" (--precision), served "bf16" (config.json)`, "bf16", "bf16", "safetensors"},
		{"GGUF file type differs", engines.Precision{Quant: "Q8_0", Name: "Q8_0", Format: "gguf", From: "GGUF header"}, engines.OllamaPrecision("Q4_K_M", "gguf"),
			`precision: requested "q8_0" (GGUF header), served "q4_k_m" (Ollama quantization_level)`, "q4_k_m", "Q4_K_M", "gguf"},
		{"nothing asked", engines.Precision{}, bf16Config, "", "bf16", "bf16", "safetensors"},
		{"served unknown: the asked one is recorded", engines.Precision{DType: "fp16", From: "engine arguments"}, engines.Precision{}, "", "fp16", "fp16", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := newRC(t)
			eng := newTestEngine("http://x")
			eng.id = engines.Identity{Model: "m", Precision: c.got}
			err := runVerifyEngine(context.Background(), rc, &Deps{Engine: eng, Model: "m", Expect: engines.Identity{Precision: c.want}}, &VerifyEngineConfig{Check: []string{"model", "precision"}})
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("unexpected: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("err = %v, want …%s…", err, c.err)
			}
			if m := rc.Out.Meta().Engine; m.Precision != c.recorded || m.Quantization != c.quant || m.ModelFormat != c.fmt {
				t.Errorf("run.json engine precision %q quantization %q format %q, want %q %q %q", m.Precision, m.Quantization, m.ModelFormat, c.recorded, c.quant, c.fmt)
			}
		})
	}
	// A precision check is not made unless asked.
	eng := newTestEngine("http://x")
	eng.id = engines.Identity{Model: "m", Precision: bf16Config}
	if err := runVerifyEngine(context.Background(), newRC(t), &Deps{Engine: eng, Model: "m", Expect: engines.Identity{Precision: engines.Precision{Quant: "fp8"}}},
		&VerifyEngineConfig{Check: []string{"model"}}); err != nil {
		t.Errorf("precision compared without the check: %v", err)
	}
}
