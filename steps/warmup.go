package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workflow"
	"github.com/joulebench/joulebench/workload"
)

// WarmupConfig is the `with:` of a warmup step: informal requests whose
// energy counts in startup, never in formal metrics.
type WarmupConfig struct {
	Requests int `yaml:"requests"`
	// Prompt, when set, replaces the request set's prompts (asiai: "Hello").
	Prompt string `yaml:"prompt"`
	// MaxTokens, when > 0, overrides the request set's max_tokens.
	MaxTokens   int `yaml:"max_tokens"`
	Concurrency int `yaml:"concurrency"`
	// Temperature, when set, is sent with every warm-up request.
	Temperature *float64 `yaml:"temperature"`
	// Timeout, StallTimeout and WaitLog: as in the requests step.
	Timeout      workflow.Duration `yaml:"timeout"`
	StallTimeout workflow.Duration `yaml:"stall_timeout"`
	WaitLog      workflow.Duration `yaml:"wait_log"`
	// MaxFailed is the largest share of warm-up requests that may fail
	// (0 to 1): above it the run stops before the formal stage, with the
	// server's first error, instead of sending formal requests that fail
	// the same way (a prompt over the context size, a wrong model name).
	MaxFailed float64 `yaml:"max_failed"`
}

// Validate checks counts.
func (c *WarmupConfig) Validate() error {
	if c.Requests < 0 || c.MaxTokens < 0 || c.Concurrency < 0 {
		return fmt.Errorf("requests, max_tokens and concurrency must not be negative")
	}
	if c.MaxFailed < 0 || c.MaxFailed > 1 {
		return fmt.Errorf("max_failed must be a share in [0, 1], got %v", c.MaxFailed)
	}
	return validateLimits(c.Timeout, c.StallTimeout, c.WaitLog)
}

var warmupKind = workflow.NewStepKind("warmup",
	"send informal requests (stage warmup, inside startup)",
	func() *WarmupConfig {
		return &WarmupConfig{Requests: 8, Concurrency: 8, Timeout: workflow.Duration(30 * time.Minute),
			StallTimeout: workflow.Duration(time.Minute), WaitLog: workflow.Duration(maxWaitLog), MaxFailed: defaultWarmupMaxFailed}
	},
	runWarmup)

func runWarmup(ctx context.Context, rc *workflow.RunContext, d *Deps, c *WarmupConfig) error {
	if c.Requests == 0 {
		return nil
	}
	var reqs []workload.Request
	model := d.Model
	for i := 0; i < c.Requests; i++ {
		r := workload.Request{ID: fmt.Sprintf("warmup-%05d", i), Phase: "warmup", PromptID: "warmup", Model: model, Prompt: c.Prompt, MaxTokens: c.MaxTokens, Chat: d.Chat}
		if c.Temperature != nil {
			r.Temperature = *c.Temperature
		}
		reqs = append(reqs, r)
	}
	if c.Prompt == "" {
		set, err := d.requestSet(c, "chat", workload.Options{Count: c.Requests, Repeat: true, MaxTokens: c.MaxTokens})
		if err != nil {
			return fmt.Errorf("warm-up prompts: %w", err)
		}
		if set.Conversations != nil || set.Trace != nil {
			// Not the formal turns or trace rows: an engine's prefix cache
			// would hold them before the formal stage.
			if set, err = workload.LoadBuiltin("chat", workload.Options{Count: c.Requests, Repeat: true, MaxTokens: c.MaxTokens}); err != nil {
				return fmt.Errorf("warm-up prompts: %w", err)
			}
		}
		if set, err = servedLengths(ctx, rc, d, set); err != nil {
			return fmt.Errorf("warm-up prompts: %w", err)
		}
		// A set that does not repeat its prompts to the count asked (a
		// trace window, conversations) may have fewer: they are reused.
		from := loadgen.FromSet(set, "warmup", model, d.Chat)
		for i := range reqs {
			r := from[i%len(from)]
			reqs[i].Prompt, reqs[i].Messages, reqs[i].MaxTokens, reqs[i].PromptID = r.Prompt, r.Messages, r.MaxTokens, r.PromptID
		}
	}
	conc := c.Concurrency
	if conc <= 0 {
		conc = c.Requests
	}
	rc.StageStart("warmup", rc.Clock.Now())
	lc := loadgen.Config{Mode: loadgen.Shapes().Role(loadgen.RoleInFlight), Concurrency: conc}
	limits(rc, &lc, "warmup", c.Timeout, c.StallTimeout, c.WaitLog)
	o, err := send(ctx, rc, d, "warmup", lc, reqs)
	if err != nil {
		return err
	}
	if err := rc.StageEnd("warmup", rc.Clock.Now()); err != nil {
		return err
	}
	if o.failed == 0 {
		return nil
	}
	if float64(o.failed) > c.MaxFailed*float64(o.total) {
		others := ""
		if len(o.errs) > 1 {
			others = " (all errors: " + topErrors(o.errs, 3) + ")"
		}
		return fmt.Errorf("warm-up: %d of %d requests failed (more than max_failed %g): the server's first error: %s; "+
			"the formal requests would fail the same way%s", o.failed, o.total, c.MaxFailed, o.first, others)
	}
	rc.Log.Warn().Str("stage", "warmup").Msg(o.summary("warmup"))
	return nil
}

// defaultWarmupMaxFailed: a warm-up where more than half the requests
// fail stops the run.
const defaultWarmupMaxFailed = 0.5
