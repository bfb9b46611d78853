package runner

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/telemetry"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
	"github.com/joulebench/joulebench/workflow"

	"github.com/joulebench/joulebench/internal/num"
)

// cooldownParams are the profile parameters of the cooldown between the
// engines (or sweep values) of one run command: the idle level is the mean
// power over IdleS before the first engine starts; before each next one,
// the GPUs must stay at or under idle × (1 + Tolerance) for HoldS, waiting
// at most MaxWaitS. A profile without cooldown_max_wait has no cooldown.
type cooldownParams struct {
	Enabled                      bool
	Tolerance                    float64
	IdleS, HoldS, MaxWaitS, Poll float64
}

// cooldownParamsOf reads cooldown_tolerance, cooldown_idle, cooldown_hold
// and cooldown_max_wait from the resolved profile parameters (durations in
// seconds). Between points against a running server (external), a profile
// without cooldown_max_wait that has the method's release parameters
// (benchmark-1.0, -1.5) waits as its release does: within
// release_tolerance of the idle level for release_hold, at most
// release_max_wait; the server keeps its model loaded, so nothing else
// brings the GPUs back to idle before the next point's baseline.
func cooldownParamsOf(params map[string]any, external bool) cooldownParams {
	if _, ok := params["cooldown_max_wait"]; !ok && external {
		if _, ok := params["release_max_wait"]; ok {
			p := cooldownParamsOf(map[string]any{
				"cooldown_max_wait": params["release_max_wait"], "cooldown_tolerance": params["release_tolerance"],
				"cooldown_hold": params["release_hold"], "cooldown_idle": params["cooldown_idle"]}, false)
			return p
		}
	}
	return cooldownParamsOfProfile(params)
}

// cooldownParamsOfProfile reads the profile's own cooldown_* parameters.
func cooldownParamsOfProfile(params map[string]any) cooldownParams {
	f := func(k string, def float64) float64 {
		if v, ok := num.Float(params[k]); ok {
			return v
		}
		return def
	}
	_, ok := params["cooldown_max_wait"]
	return cooldownParams{Enabled: ok, Tolerance: f("cooldown_tolerance", 0.10), IdleS: f("cooldown_idle", 5),
		HoldS: f("cooldown_hold", 5), MaxWaitS: f("cooldown_max_wait", 120), Poll: min(0.5, f("cooldown_hold", 5)/4)}
}

// cooldownResult is one cooldown, recorded in the next run's run.json as
// the events cooldown_started and cooldown_ended and the labels cooldown
// (what happened) and cooldown_idle_w.
type cooldownResult struct {
	Start, End float64
	IdleW      float64
	LastW      float64
	Reached    bool
	Note       string
}

// summedPower reads every device once and returns the summed power.
func summedPower(ctx context.Context, src telemetry.Source) (float64, error) {
	rs, err := src.Read(ctx)
	if err != nil {
		return 0, fmt.Errorf("cooldown: read power: %w", err)
	}
	w := 0.0
	for _, r := range rs {
		w += r.PowerW
	}
	return w, nil
}

// idlePower is the mean of the summed power read every p.Poll seconds for
// p.IdleS seconds.
func idlePower(ctx context.Context, src telemetry.Source, p cooldownParams, sleep func(context.Context, time.Duration) error) (float64, error) {
	n := max(1, int(p.IdleS/p.Poll))
	sum := 0.0
	for i := 0; i < n; i++ {
		w, err := summedPower(ctx, src)
		if err != nil {
			return 0, err
		}
		sum += w
		if i < n-1 {
			if err := sleep(ctx, seconds(p.Poll)); err != nil {
				return 0, err
			}
		}
	}
	return sum / float64(n), nil
}

// waitCooldown reads the summed power every p.Poll seconds until it has
// stayed at or under idle × (1 + p.Tolerance) for p.HoldS seconds, or
// p.MaxWaitS seconds have passed (then Reached is false).
func waitCooldown(ctx context.Context, src telemetry.Source, now func() float64, idle float64, p cooldownParams,
	sleep func(context.Context, time.Duration) error) (cooldownResult, error) {
	limit := idle * (1 + p.Tolerance)
	res := cooldownResult{Start: now(), IdleW: idle}
	since := -1.0 // start of the current run of readings under the limit
	for {
		w, err := summedPower(ctx, src)
		if err != nil {
			return res, err
		}
		t := now()
		res.LastW, res.End = w, t
		if w <= limit {
			if since < 0 {
				since = t
			}
			if t-since >= p.HoldS {
				res.Reached = true
				res.Note = fmt.Sprintf("reached after %.1f s: %.1f W ≤ %.1f W (idle %.1f W + %.0f %%) for %.0f s",
					t-res.Start, w, limit, idle, p.Tolerance*100, p.HoldS)
				return res, nil
			}
		} else {
			since = -1
		}
		if t-res.Start >= p.MaxWaitS {
			res.Note = fmt.Sprintf("not reached within %.0f s: %.1f W > %.1f W (idle %.1f W + %.0f %%)",
				p.MaxWaitS, w, limit, idle, p.Tolerance*100)
			return res, nil
		}
		if err := sleep(ctx, seconds(p.Poll)); err != nil {
			return res, err
		}
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// sleepCtx sleeps for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// record writes the cooldown into run.json: events cooldown_started and
// cooldown_ended, labels cooldown and cooldown_idle_w.
func (c *cooldownResult) record(out *archive.Writer) error {
	return out.UpdateMeta(func(m *record.Meta) {
		m.Events = append(m.Events, record.Event{Name: "cooldown_started", T: c.Start}, record.Event{Name: "cooldown_ended", T: c.End})
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels["cooldown"] = c.Note
		m.Labels["cooldown_idle_w"] = fmt.Sprintf("%.1f", c.IdleW)
	})
}

// unloadModel asks a server joulebench did not start to unload the model
// of the run in dir: Ollama's keep_alive 0 (POST /api/generate with no
// prompt). A managed engine was stopped by its release step: nothing to
// do. Other external servers have no unload API: nothing to do.
func unloadModel(ctx context.Context, reg *engines.Registry, hc *http.Client, dir string) (string, error) {
	run, err := archive.Load(dir)
	if err != nil {
		return "", nil // a run that left no archive has nothing to unload
	}
	e := run.Meta.Engine
	if e.Managed || e.URL == "" {
		return "", nil
	}
	unload := reg.Unloader(e.Kind, e.API)
	if unload == nil {
		return "", nil
	}
	model := e.ServedModel
	if model == "" {
		model = e.Model
	}
	return unload(ctx, hc, e.URL, model)
}

// cooldownSession measures the idle level once and runs the cooldown
// before every run but the first; the result goes into the next run's
// run.json (engineRun.recordCooldown).
type cooldownSession struct {
	params cooldownParams
	src    telemetry.Source
	clock  *workflow.Clock
	idleW  float64
	ok     bool
}

// startCooldown opens the power source of the cooldowns (none: no
// cooldown, said once) and measures the idle level. The profile's
// parameters are resolved as the first run resolves them (sets, and the
// quick set for the simulator). With the simulated engine, the GPU is the
// simulator's with no engine loaded.
func (r *Runner) startCooldown(ctx context.Context, sets []string) *cooldownSession {
	probe := &engineRun{r: r, s: r.s}
	if err := probe.prepareProfile(sets); err != nil {
		return nil // the run itself reports the profile's error
	}
	p := cooldownParamsOf(probe.l.Params, r.s.Engine.URL != "")
	if !p.Enabled {
		return nil
	}
	s := &cooldownSession{params: p, clock: workflow.NewClock()}
	var src telemetry.Source
	var err error
	if r.s.OpenTelemetry != nil {
		env := TelemetryEnv{Clock: s.clock, Cooldown: true}
		if probe.simulated {
			env.Sim = &SimGPU{Load: idleLoad{}, Config: simtel.DefaultConfig()}
		}
		src, _, err = r.s.OpenTelemetry(ctx, env)
	}
	msgs := r.s.Messages
	if err != nil || src == nil {
		fmt.Fprintf(msgs, "cooldown between engines: no power source (%v); only the previous model is unloaded\n", errOrNone(err))
		return s
	}
	s.src = src
	idle, err := idlePower(ctx, src, p, sleepCtx)
	if err != nil {
		fmt.Fprintf(msgs, "cooldown between engines: %v\n", err)
		return s
	}
	s.idleW, s.ok = idle, true
	fmt.Fprintf(msgs, "cooldown between engines: idle level %.1f W (mean over %.0f s)\n", idle, p.IdleS)
	return s
}

// idleLoad is a simulated GPU with no engine on it.
type idleLoad struct{}

func (idleLoad) Activity() simtel.Activity { return simtel.Activity{Phase: "off"} }

func errOrNone(err error) any {
	if err == nil {
		return "--telemetry none"
	}
	return err
}

// cooldownBefore runs between two runs: unload the previous run's model
// where the server outlives it, then wait for the power to return near
// idle.
func (r *Runner) cooldownBefore(ctx context.Context, s *cooldownSession, prevDir string) {
	if s == nil {
		return
	}
	msgs := r.s.Messages
	uctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	msg, err := unloadModel(uctx, r.s.Registry, &http.Client{}, prevDir)
	cancel()
	switch {
	case err != nil:
		fmt.Fprintf(msgs, "cooldown: %v\n", err)
	case msg != "":
		fmt.Fprintf(msgs, "cooldown: %s\n", msg)
	}
	if !s.ok {
		return
	}
	res, err := waitCooldown(ctx, s.src, s.clock.Now, s.idleW, s.params, sleepCtx)
	if err != nil {
		fmt.Fprintf(msgs, "cooldown: %v\n", err)
		return
	}
	fmt.Fprintf(msgs, "cooldown: %s\n", res.Note)
	r.cooldown = &res
}

func (s *cooldownSession) close() {
	if s != nil && s.src != nil {
		_ = s.src.Close()
	}
}

// recordCooldown writes the cooldown that preceded this run into its
// run.json, once.
func (e *engineRun) recordCooldown() error {
	c := e.r.cooldown
	if c == nil {
		return nil
	}
	e.r.cooldown = nil
	e.log.Info().Str("cooldown", c.Note).Msg("cooldown before this engine")
	return c.record(e.out)
}

// cooldownTo waits, before a run's baseline, for the GPUs to come back
// within the profile's tolerance of idleW (a level measured before: a
// campaign's earlier point against the same server, --cooldown-idle-w),
// bounded by its maximum wait, and keeps the outcome for the run's
// run.json. A profile without cooldown or release parameters, or no power
// source, waits for nothing (said once).
func (r *Runner) cooldownTo(ctx context.Context, sets []string, idleW float64) {
	probe := &engineRun{r: r, s: r.s}
	if err := probe.prepareProfile(sets); err != nil {
		return // the run itself reports the profile's error
	}
	p := cooldownParamsOf(probe.l.Params, true)
	msgs := r.s.Messages
	if !p.Enabled || r.s.OpenTelemetry == nil {
		return
	}
	clock := workflow.NewClock()
	env := TelemetryEnv{Clock: clock, Cooldown: true}
	if probe.simulated {
		env.Sim = &SimGPU{Load: idleLoad{}, Config: simtel.DefaultConfig()}
	}
	src, _, err := r.s.OpenTelemetry(ctx, env)
	if err != nil || src == nil {
		fmt.Fprintf(msgs, "cooldown before this point: no power source (%v)\n", errOrNone(err))
		return
	}
	defer src.Close()
	res, err := waitCooldown(ctx, src, clock.Now, idleW, p, sleepCtx)
	if err != nil {
		fmt.Fprintf(msgs, "cooldown before this point: %v\n", err)
		return
	}
	fmt.Fprintf(msgs, "cooldown before this point: %s\n", res.Note)
	r.cooldown = &res
}
