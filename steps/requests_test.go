package steps

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/workflow"
)

func ptr[T any](v T) *T { return &v }

func formalConfig() *RequestsConfig {
	return &RequestsConfig{Mode: "unlimited", Repeat: 1, Dataset: "chat", Count: 3, Seed: 1}
}

func TestRequests(t *testing.T) {
	rc := newRC(t)
	cl := &testClient{clock: rc.Clock.Now, tokens: 5}
	d := &Deps{Engine: newTestEngine("http://x"), Client: cl, Model: "m", Chat: true}
	rc.StageStart("startup", rc.Clock.Now())
	cfg := formalConfig()
	cfg.Repeat, cfg.Temperature = 2, ptr(0.7)
	if err := runRequests(context.Background(), rc, d, cfg); err != nil {
		t.Fatal(err)
	}
	// 3 prompts × repeat 2 = 6 requests, each id suffixed with its round.
	sent := cl.sent()
	if len(sent) != 6 {
		t.Fatalf("sent %d requests, want 6", len(sent))
	}
	rounds := map[string]int{}
	for _, r := range sent {
		if r.Phase != "formal" || r.Model != "m" || !r.Chat || r.Temperature != 0.7 {
			t.Errorf("request %+v: want phase formal, model m, chat, temperature 0.7", r)
		}
		rounds[r.ID[strings.LastIndex(r.ID, "-"):]]++
	}
	if rounds["-r1"] != 3 || rounds["-r2"] != 3 {
		t.Errorf("ids by round %v, want 3 of -r1 and 3 of -r2", rounds)
	}
	run := reload(t, rc)
	if len(run.Requests) != 6 {
		t.Errorf("archived %d requests, want 6", len(run.Requests))
	}
	rs := run.Meta.RequestSet
	if rs.Count != 6 || rs.SHA256 == "" || rs.Source == "" {
		t.Errorf("request set %+v", rs)
	}
	// startup ends where formal begins; formal ends at the last done_at.
	su, ok1 := run.Meta.StageByName("startup")
	fo, ok2 := run.Meta.StageByName("formal")
	if !ok1 || !ok2 || su.End != fo.Start {
		t.Fatalf("stages %+v", run.Meta.Stages)
	}
	var last float64
	for _, r := range run.Requests {
		last = max(last, r.DoneAt)
	}
	if fo.End != last {
		t.Errorf("formal ends at %v, want the last done_at %v", fo.End, last)
	}
}

func TestRequestsMaxRequests(t *testing.T) {
	rc := newRC(t)
	cl := &testClient{clock: rc.Clock.Now, tokens: 1}
	cfg := formalConfig()
	cfg.MaxRequests = 2
	if err := runRequests(context.Background(), rc, &Deps{Engine: newTestEngine("http://x"), Client: cl}, cfg); err != nil {
		t.Fatal(err)
	}
	if n := len(cl.sent()); n != 2 {
		t.Errorf("max_requests 2 sent %d", n)
	}
}

func TestRequestsEngineExits(t *testing.T) {
	for _, c := range []struct {
		name    string
		exitErr func() error
		want    string
	}{
		{"plain", nil, "engine test exited on its own during formal"},
		{"with its exit status", func() error { return errBoom }, "during formal: boom"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := newRC(t)
			eng := newTestEngine("http://x")
			// The engine dies with the first request, which fails.
			cl := &testClient{clock: rc.Clock.Now, onDo: func(openai.Request) bool { eng.exit(); return false }}
			err := runRequests(context.Background(), rc, &Deps{Engine: eng, Client: cl, ExitError: c.exitErr}, formalConfig())
			if err == nil || err.Error() != c.want {
				t.Errorf("err = %v, want %q", err, c.want)
			}
			// The formal stage was recorded when it began, and stays open.
			m := rc.Out.Meta()
			if fo, ok := m.StageByName("formal"); ok && !fo.Open {
				t.Error("a formal stage was closed for a run whose engine died")
			}
		})
	}
	rc := newRC(t)
	err := runRequests(context.Background(), rc, &Deps{Engine: newTestEngine("http://x")}, formalConfig())
	if err == nil || !strings.Contains(err.Error(), "no client") {
		t.Errorf("no client: %v", err)
	}
}

func TestWarmup(t *testing.T) {
	t.Run("fixed prompt", func(t *testing.T) {
		rc := newRC(t)
		cl := &testClient{clock: rc.Clock.Now, tokens: 2}
		d := &Deps{Engine: newTestEngine("http://x"), Client: cl, Model: "m"}
		cfg := &WarmupConfig{Requests: 3, Prompt: "Hello", MaxTokens: 4, Concurrency: 1, Temperature: ptr(0.0)}
		if err := runWarmup(context.Background(), rc, d, cfg); err != nil {
			t.Fatal(err)
		}
		sent := cl.sent()
		if len(sent) != 3 {
			t.Fatalf("sent %d, want 3", len(sent))
		}
		for _, r := range sent {
			if r.Phase != "warmup" || r.Prompt != "Hello" || r.MaxTokens != 4 || r.Model != "m" {
				t.Errorf("warm-up request %+v", r)
			}
		}
		run := reload(t, rc)
		if got := strings.Join(stageNames(run.Meta), ","); got != "warmup" {
			t.Errorf("stages %s, want warmup", got)
		}
		for _, r := range run.Requests {
			if r.Phase != "warmup" {
				t.Errorf("archived %s in phase %s", r.ID, r.Phase)
			}
		}
	})
	t.Run("prompts from the chat set, frozen by Prepare", func(t *testing.T) {
		rc := newRC(t)
		cl := &testClient{clock: rc.Clock.Now, tokens: 2}
		d := &Deps{Engine: newTestEngine("http://x"), Client: cl}
		cfg := &WarmupConfig{Requests: 2}
		rc.Loaded = &workflow.Loaded{Steps: []workflow.Step{{Index: 1, Kind: "warmup", Config: cfg}}}
		if err := d.Prepare(rc.Loaded); err != nil {
			t.Fatal(err)
		}
		if d.run.sets[cfg] == nil {
			t.Fatal("Prepare froze no set for the warm-up step")
		}
		if err := runWarmup(context.Background(), rc, d, cfg); err != nil {
			t.Fatal(err)
		}
		for _, r := range cl.sent() {
			if r.Prompt == "" && len(r.Messages) == 0 || r.PromptID == "warmup" {
				t.Errorf("request %s has no prompt from the set: %+v", r.ID, r)
			}
		}
	})
	t.Run("zero requests sends nothing", func(t *testing.T) {
		rc := newRC(t)
		cl := &testClient{clock: rc.Clock.Now}
		if err := runWarmup(context.Background(), rc, &Deps{Client: cl}, &WarmupConfig{}); err != nil || len(cl.sent()) != 0 {
			t.Errorf("err %v, sent %d", err, len(cl.sent()))
		}
		if len(rc.Out.Meta().Stages) != 0 {
			t.Error("a warm-up of zero requests recorded a stage")
		}
	})
}

func TestPrepareReportsABadDatasetByStep(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := &workflow.Loaded{Steps: []workflow.Step{
		{Index: 1, Kind: "preflight", Config: &PreflightConfig{}},
		{Index: 2, Kind: "requests", Config: formalConfig()},
	}}
	d := &Deps{Dataset: bad}
	err := d.Prepare(l)
	if err == nil || !strings.HasPrefix(err.Error(), "step 2 (requests): request set: ") || !strings.Contains(err.Error(), "bad.jsonl") {
		t.Errorf("err = %v", err)
	}
	// Without the override the profile's own dataset loads.
	d = &Deps{}
	if err := d.Prepare(l); err != nil || len(d.run.sets) != 1 {
		t.Errorf("Prepare: %v, %d sets", err, len(d.run.sets))
	}
}

// TestRequestsShapeValidate: the step refuses a load it could not run as
// written, naming the parameter.
func TestRequestsShapeValidate(t *testing.T) {
	for _, tc := range []struct {
		set  func(*RequestsConfig)
		want string
	}{
		{func(c *RequestsConfig) { c.Mode = "burst" }, `unknown mode "burst" (valid: unlimited, concurrency, constant, poisson, gamma, ramp)`},
		{func(c *RequestsConfig) { c.Mode, c.Rate = "poisson", math.Inf(1) }, "rate +Inf: must be a finite number"},
		{func(c *RequestsConfig) { c.Mode, c.Rate, c.Burstiness = "gamma", 2, -1 }, "burstiness -1: must be > 0"},
		{func(c *RequestsConfig) { c.Concurrency = 16 }, "concurrency 16 with mode unlimited: set mode concurrency"},
		{func(c *RequestsConfig) { c.Mode, c.RampStartRate = "ramp", math.NaN() }, "ramp_start_rate NaN: must be a finite number"},
		{func(c *RequestsConfig) { c.Mode, c.Rate = "ramp", 2 }, "rate 2 applies to modes constant, poisson and gamma, not ramp"},
	} {
		c := formalConfig()
		tc.set(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", c, err, tc.want)
		}
	}
	c := formalConfig()
	c.Mode, c.Rate, c.Burstiness, c.MaxConcurrency = "gamma", 4, 0.5, 8
	if err := c.Validate(); err != nil {
		t.Errorf("gamma at 4/s, burstiness 0.5, capped at 8: %v", err)
	}
}

// TestConversationsInFlight: multi-turn conversations run as many at a
// time as the closed load shape keeps in flight, read from the shape, so
// that unlimited capped by max_concurrency (run as concurrency N) runs N
// at a time rather than all at once; an open shape's schedule does not
// apply.
func TestConversationsInFlight(t *testing.T) {
	for _, tc := range []struct {
		c  RequestsConfig
		n  int
		ok bool
	}{
		{RequestsConfig{Mode: "unlimited"}, 0, true},
		{RequestsConfig{Mode: "unlimited", MaxConcurrency: 4}, 4, true},
		{RequestsConfig{Mode: "concurrency", Concurrency: 3}, 3, true},
		{RequestsConfig{Mode: "poisson", Rate: 2}, 0, false},
		{RequestsConfig{Mode: "ramp", RampEndRate: 2, MaxConcurrency: 5}, 0, false},
		{RequestsConfig{Mode: "nonesuch"}, 0, false},
	} {
		if n, ok := conversationsInFlight(tc.c.load()); n != tc.n || ok != tc.ok {
			t.Errorf("%s: %d at a time (%v), want %d (%v)", tc.c.Mode, n, ok, tc.n, tc.ok)
		}
	}
}
