package steps

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workflow"
	"github.com/joulebench/joulebench/workload"
)

// RequestsConfig is the `with:` of the formal requests step.
type RequestsConfig struct {
	// Mode is the load shape, one of loadgen.Shapes(); the fields up to
	// RampEndRate are the load parameters, each shape reading its own
	// (Rate in requests/s; Burstiness the shape of gamma-like gaps, as
	// vLLM's bench serve; MaxConcurrency caps the requests in flight, 0:
	// none). A parameter the mode does not use must be left unset (see
	// loadgen.Config.Shape); Burstiness 0 is unset (1).
	Mode           string  `yaml:"mode"`
	Concurrency    int     `yaml:"concurrency"`
	Rate           float64 `yaml:"rate"`
	Burstiness     float64 `yaml:"burstiness"`
	MaxConcurrency int     `yaml:"max_concurrency"`
	RampStartRate  float64 `yaml:"ramp_start_rate"`
	RampEndRate    float64 `yaml:"ramp_end_rate"`
	// Repeat sends each prompt this many times (asiai: runs per prompt).
	Repeat      int               `yaml:"repeat"`
	MaxRequests int               `yaml:"max_requests"`
	MaxDuration workflow.Duration `yaml:"max_duration"`
	// Timeout bounds each request from send to the end of its stream;
	// StallTimeout the wait for its next bytes once its stream started
	// (0: none). A request cut by either is failed with that reason.
	Timeout      workflow.Duration `yaml:"timeout"`
	StallTimeout workflow.Duration `yaml:"stall_timeout"`
	// WaitLog is how often the step logs what it waits on (the requests
	// in flight, the oldest's age and the tokens so far); at most 30 s,
	// 0 means 30 s.
	WaitLog workflow.Duration `yaml:"wait_log"`
	// Dataset is a built-in request set (chat, code, long-context) or a
	// file; --dataset overrides it.
	Dataset string `yaml:"dataset"`
	// Count limits the prompts drawn from the dataset (0 = all).
	Count int `yaml:"count"`
	// MaxTokens fixes max_tokens (0 = from the dataset's reference length).
	MaxTokens int `yaml:"max_tokens"`
	// Temperature, when set, is sent with every request (asiai: 0).
	Temperature *float64 `yaml:"temperature"`
	IgnoreEOS   bool     `yaml:"ignore_eos"`
	Seed        int64    `yaml:"seed"`
	// Shuffle draws the prompts in a seeded random order (Seed) instead of
	// the dataset's order; with Count above the dataset's size the order
	// repeats, each request keeping its own id.
	Shuffle bool `yaml:"shuffle"`
	// ContextTokens, when > 0, replaces each prompt by one generated to
	// fill about this many tokens of context (workload.FillContext),
	// capped by the model's context length when the engine reports it.
	ContextTokens int `yaml:"context_tokens"`
}

// Validate checks the mode and its numbers.
func (c *RequestsConfig) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"rate", c.Rate}, {"burstiness", c.Burstiness}, {"ramp_start_rate", c.RampStartRate}, {"ramp_end_rate", c.RampEndRate}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%s %v: must be a finite number", f.name, f.v)
		}
	}
	if _, err := loadgen.Shapes().Kind(c.Mode); err != nil || c.Mode == "" {
		return fmt.Errorf("unknown mode %q (valid: %s)", c.Mode, strings.Join(loadgen.Shapes().Names(), ", "))
	}
	if c.Burstiness < 0 {
		return fmt.Errorf("burstiness %v: must be > 0 (1 is %s)", c.Burstiness, loadgen.Shapes().Role(loadgen.RoleRate))
	}
	if err := c.load().Validate(); err != nil {
		return err
	}
	if c.Repeat < 1 {
		return fmt.Errorf("repeat must be at least 1")
	}
	if c.Count < 0 || c.MaxTokens < 0 || c.ContextTokens < 0 {
		return fmt.Errorf("count, max_tokens and context_tokens must not be negative")
	}
	if c.Temperature != nil && (*c.Temperature < 0 || *c.Temperature > 2) {
		return fmt.Errorf("temperature must be in [0, 2], got %v", *c.Temperature)
	}
	if c.MaxRequests < 0 {
		return fmt.Errorf("max_requests must not be negative")
	}
	return validateLimits(c.Timeout, c.StallTimeout, c.WaitLog)
}

// load is the load generator's configuration of the step's shape
// (Burstiness 0, unset, reads as 1).
func (c *RequestsConfig) load() loadgen.Config {
	return loadgen.Config{Mode: loadgen.Mode(c.Mode), Concurrency: c.Concurrency, MaxConcurrency: c.MaxConcurrency,
		Rate: c.Rate, Burstiness: c.Burstiness, RampStartRate: c.RampStartRate, RampEndRate: c.RampEndRate,
		Seed: c.Seed, MaxRequests: c.MaxRequests, MaxDuration: c.MaxDuration.D()}
}

// InFlight is the most requests the step's load shape keeps in flight (0:
// no bound, or an invalid shape).
func (c *RequestsConfig) InFlight() int {
	s, err := c.load().Shape()
	if err != nil {
		return 0
	}
	return s.InFlight()
}

// maxWaitLog is the longest silence while requests are in flight.
const maxWaitLog = 30 * time.Second

func validateLimits(timeout, stall, waitLog workflow.Duration) error {
	switch {
	case timeout < 0 || stall < 0:
		return fmt.Errorf("timeout and stall_timeout must not be negative")
	case waitLog < 0 || waitLog.D() > maxWaitLog:
		return fmt.Errorf("wait_log must be in [0, %s] (0: %s), got %s", maxWaitLog, maxWaitLog, waitLog.D())
	}
	return nil
}

// limits turns a step's limits into the load generator's, with the log of
// what the run waits on.
func limits(rc *workflow.RunContext, lc *loadgen.Config, stage string, timeout, stall, waitLog workflow.Duration) {
	lc.Limits = loadgen.Limits{Timeout: timeout.D(), Stall: stall.D()}
	lc.WatchEvery = waitLog.D()
	if waitLog <= 0 {
		lc.WatchEvery = maxWaitLog
	}
	lc.Watch = func(w loadgen.Waiting) {
		rc.Log.Info().Str("stage", stage).Int("in_flight", w.InFlight).Str("oldest", w.Oldest).
			Str("oldest_age", w.OldestAge.Round(time.Millisecond).String()).Int("oldest_tokens", w.OldestTokens).
			Int("tokens_in_flight", w.Tokens).Msg("waiting on requests in flight")
	}
}

var requestsKind = workflow.NewStepKind("requests",
	"send the formal request set (stage formal)",
	func() *RequestsConfig {
		return &RequestsConfig{Mode: string(loadgen.Shapes().Role(loadgen.RoleAllAtOnce)), Burstiness: 1, Repeat: 1, Dataset: "chat", Timeout: workflow.Duration(30 * time.Minute),
			StallTimeout: workflow.Duration(time.Minute), WaitLog: workflow.Duration(maxWaitLog), Seed: 1}
	},
	runRequests)

func runRequests(ctx context.Context, rc *workflow.RunContext, d *Deps, c *RequestsConfig) error {
	set, err := d.requestSet(c, c.Dataset, requestOptions(c))
	if err != nil {
		return fmt.Errorf("request set: %w", err)
	}
	if c.ContextTokens > 0 {
		if set, err = fillContext(rc, set, c); err != nil {
			return err
		}
	} else if set, err = servedLengths(ctx, rc, d, set); err != nil {
		return fmt.Errorf("request set: %w", err)
	}
	base := loadgen.FromSet(set, "formal", d.Model, d.Chat)
	var reqs []workload.Request
	for rep := 0; rep < c.Repeat; rep++ {
		for _, r := range base {
			if c.Repeat > 1 {
				r.ID = fmt.Sprintf("%s-r%d", r.ID, rep+1)
			}
			if c.Temperature != nil {
				r.Temperature = *c.Temperature
			}
			reqs = append(reqs, r)
		}
	}
	// count: the formal requests this run sends (max_requests caps them);
	// the reader holds a complete run to it.
	count := len(reqs)
	if c.MaxRequests > 0 {
		count = min(count, c.MaxRequests)
	}
	lc := c.load()
	if err := lc.Validate(); err != nil {
		return err
	}
	lc = lc.Normalized()
	if err := rc.Out.UpdateMeta(func(m *record.Meta) {
		m.RequestSet = requestSetMeta(set, count)
		m.Load = lc.Load()
	}); err != nil {
		return archiveErr(rc, err)
	}
	limits(rc, &lc, "formal", c.Timeout, c.StallTimeout, c.WaitLog)
	if d.Client == nil {
		return fmt.Errorf("no client: the engine was not started")
	}
	// The burst is made ready (bodies encoded, connections opened) before
	// the stage begins: the formal stage's time and energy are the
	// requests', not the client's preparation (1,000 connections to
	// llama-server took 1.1 s).
	cl, release := prepareBurst(ctx, d.Client, lc, reqs)
	defer release()
	if err := d.sampleNow(ctx); err != nil {
		return err
	}
	t0 := rc.Clock.Now()
	if _, open := rc.StageOpen("startup"); open {
		if err := rc.StageEnd("startup", t0); err != nil {
			return err
		}
	}
	rc.StageStart("formal", t0)
	d.throttled() // start a new throttle window
	o, err := sendFormal(ctx, rc, d, c, cl, lc, set, reqs)
	if sum := o.summary("formal"); sum != "" {
		rc.Log.Warn().Str("stage", "formal").Msg(sum)
	}
	if err := startAtFirstSend(rc, t0, o.firstSent); err != nil {
		return archiveErr(rc, err)
	}
	last := o.lastDone
	if thr, why := d.throttled(); thr {
		rc.Log.Warn().Str("reason", why).Msg("GPU clocks were throttled during the formal requests")
		if e := rc.Event("throttled", rc.Clock.Now()); e != nil {
			return e
		}
		if e := rc.Out.UpdateMeta(func(m *record.Meta) {
			if m.Labels == nil {
				m.Labels = map[string]string{}
			}
			m.Labels["throttled"] = why
		}); e != nil {
			return e
		}
	}
	if last == 0 {
		last = rc.Clock.Now()
	}
	if err != nil {
		return err
	}
	if c.MaxDuration > 0 {
		// The duration limit stopped the sending: the count is what was
		// sent (and recorded).
		if err := rc.Out.UpdateMeta(func(m *record.Meta) { m.RequestSet.Count = rc.Out.FormalRequests() }); err != nil {
			return err
		}
	}
	if err := rc.StageEnd("formal", last); err != nil {
		return archiveErr(rc, err)
	}
	return d.sampleNow(ctx)
}

// prepareBurst prepares the burst at the start of the stage (all of an
// all-at-once stage, the first fill of one with a bound in flight:
// lc.Burst) ahead of the formal stage when the client can
// (loadgen.Preparer), and returns
// the client to send it with: one whose Prepare does nothing (the work is
// done), still a Preparer and a Tracker when d is, so that the load
// generator sends the burst in waves as it would have. release frees what
// was prepared; call it once the requests have finished.
func prepareBurst(ctx context.Context, d loadgen.Doer, lc loadgen.Config, reqs []workload.Request) (loadgen.Doer, func()) {
	p, ok := d.(loadgen.Preparer)
	burst := lc.Burst(reqs) // what loadgen.Run sends first
	if !ok || len(burst) == 0 {
		return d, func() {}
	}
	release := p.Prepare(ctx, burst)
	if release == nil {
		release = func() {}
	}
	if t, ok := d.(loadgen.Tracker); ok {
		return preparedTracker{t}, release
	}
	return preparedDoer{d}, release
}

// preparedDoer and preparedTracker are a client whose burst is prepared
// already: their Prepare does nothing.
type preparedDoer struct{ loadgen.Doer }

func (preparedDoer) Prepare(context.Context, []workload.Request) func() { return nil }

type preparedTracker struct{ loadgen.Tracker }

func (preparedTracker) Prepare(context.Context, []workload.Request) func() { return nil }

var (
	_ loadgen.Preparer = preparedDoer{}
	_ loadgen.Preparer = preparedTracker{}
	_ loadgen.Tracker  = preparedTracker{}
)

// formalStartSlackS is how long after the formal stage's start its first
// request may be sent before the stage is made to start at that request:
// half the archive reader's bound (archive.FormalLeadS), so that a run
// never writes a formal stage its reader refuses. The step sends at once
// after opening the stage, but two synced writes of run.json lie between,
// and on a loaded machine under -race they once took 2.1 s. The time
// between is the client's, not the requests': startup (docs/methodology.md,
// "Startup and release": startup runs to the first formal request sent).
// A replayed trace sends its first request at its own time and is left
// as it is.
const formalStartSlackS = archive.FormalLeadS / 2

// startAtFirstSend moves the formal stage's start (and the startup's end)
// from t0 to the first request's sent_at when that is more than
// formalStartSlackS later, for a run that is not a replayed trace.
func startAtFirstSend(rc *workflow.RunContext, t0, first float64) error {
	if first <= 0 || first-t0 <= formalStartSlackS || rc.Out.Meta().RequestSet.Trace != nil {
		return nil
	}
	moved, err := rc.MoveStageStart("formal", "startup", first)
	if err != nil || !moved {
		return err
	}
	rc.Log.Warn().Float64("seconds", first-t0).Msg("the first formal request was sent late: the formal stage starts at it, the time before counts in startup")
	return nil
}
