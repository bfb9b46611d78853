package steps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/process"
	"github.com/joulebench/joulebench/internal/redact"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workflow"
)

// Observe is the load of a formal stage that joulebench does not send
// (joulebench measure): a command that runs for the stage, or a window of
// whatever traffic a live server gets. The output tokens are the
// difference of the server's own counter read at the stage's start and
// end; without per-request data, synthetic requests over the stage carry
// them (as an import's), so that J/token divides by them and every
// latency figure is not applicable.
type Observe struct {
	// Argv is the command (nil: Duration of live traffic); Redacted is
	// Argv as run.json records it (secrets hidden).
	Argv, Redacted []string
	Duration       time.Duration
	// Output receives the command's stdout and stderr (besides
	// CommandLogFile in the archive); nil: the archive only.
	Output io.Writer
	// Redact hides secrets from CommandLogFile (nil: the patterns).
	Redact *redact.Redactor
	// Grace is how long the command's process group gets after SIGTERM
	// (an interrupt) before SIGKILL (default 10 s).
	Grace time.Duration
	// TokenMetric names the counter ReadTokens reads (run.json); ReadTokens
	// reads the server's generated-token counter now, summed over its series.
	TokenMetric string
	ReadTokens  func(ctx context.Context) (float64, error)
	// Notes go to run.json's measure.notes.
	Notes []string
	// Results, when set, reads the load generator's per-request records
	// (--results FILE) once the formal stage [start, end] is over; counted
	// is the server counter's output tokens (-1: none), to cross-check.
	// Without it, or when it fails (the reason goes to the notes),
	// synthetic requests carry the counter's tokens.
	Results func(start, end float64, counted int) (*ObservedRequests, error)
}

// ObservedRequests are the per-request records a result file gave, with
// what run.json's measure object says about them.
type ObservedRequests struct {
	Requests []record.Request
	// What says what requests.jsonl holds (measure.requests).
	What  string
	Notes []string
	// File records the result file (measure.results).
	File *record.MeasureResults
}

// CommandLogFile is the archive's copy of the measured command's output.
const CommandLogFile = "command.log"

// MeasuredRequestID is the id of the synthetic request of a measured run
// (-1, -2, … when the tokens are split over several): the reader holds a
// measured run's synthetic requests to it.
const MeasuredRequestID = archive.MeasuredRequestID

// ObserveConfig is the `with:` of the observe step (no parameters: the
// load is joulebench measure's command line, which a profile does not
// hold).
type ObserveConfig struct{}

var observeKind = workflow.NewStepKind("observe",
	"joulebench measure: the formal stage is a command's lifetime or a window of live traffic; output tokens from the server's own counter before and after (stage formal)",
	func() *ObserveConfig { return &ObserveConfig{} },
	runObserve)

// observed is what the formal stage of an observe step came to.
type observed struct {
	start, end     float64
	before         float64
	exitStatus     *int
	exitReason     string
	commandErr     error
	interruptedErr error
}

func runObserve(ctx context.Context, rc *workflow.RunContext, d *Deps, _ *ObserveConfig) error {
	o := d.Observe
	if o == nil || o.ReadTokens == nil {
		return errors.New("the observe step measures joulebench measure's load: run it with joulebench measure (a command or --duration)")
	}
	var ob observed
	var err error
	if ob.before, err = o.ReadTokens(ctx); err != nil {
		return fmt.Errorf("server token counter %s before the load: %w", o.TokenMetric, err)
	}
	if err := d.sampleNow(ctx); err != nil {
		return err
	}
	ob.start = rc.Clock.Now()
	if _, open := rc.StageOpen("startup"); open {
		if err := rc.StageEnd("startup", ob.start); err != nil {
			return err
		}
	}
	rc.StageStart("formal", ob.start)
	d.report("formal", loadgen.Progress{}, 0)
	if len(o.Argv) > 0 {
		err = runCommand(ctx, rc, d, o, &ob)
	} else {
		err = d.wait(ctx, o.Duration)
		if ctx.Err() != nil {
			ob.exitReason, ob.interruptedErr = "interrupted before the window ended", err
		}
	}
	if err != nil && ob.interruptedErr == nil {
		return err // the power source died: the run's cleanup ends the stage
	}
	if serr := d.sampleNow(context.WithoutCancel(ctx)); serr != nil {
		rc.Log.Warn().Err(serr).Msg("last sample of the formal stage")
	}
	ob.end = rc.Clock.Now()
	return finishObserve(ctx, rc, o, &ob)
}

// runCommand runs the command for the formal stage in its own process
// group: to its exit, or until ctx is done (Ctrl-C), when its group is
// stopped. The exit status goes to ob.
func runCommand(ctx context.Context, rc *workflow.RunContext, d *Deps, o *Observe, ob *observed) error {
	logf, err := os.Create(rc.Out.Path(CommandLogFile))
	if err != nil {
		return archiveErr(rc, err)
	}
	defer logf.Close()
	rw := o.Redact.Writer(logf)
	defer rw.Close()
	var w io.Writer = rw
	if o.Output != nil {
		w = io.MultiWriter(logf, o.Output)
	}
	p, err := process.Start(process.Spec{Name: "the measured command", Argv: o.Argv, Log: w})
	if err != nil {
		ob.exitReason, ob.commandErr = "did not start: "+err.Error(), err
		return nil
	}
	rc.Log.Info().Strs("command", o.Redacted).Int("pid", p.PID()).Msg("formal stage: the command runs")
	select {
	case <-p.Exited():
	case <-ctx.Done():
		grace := o.Grace
		if grace <= 0 {
			grace = 10 * time.Second
		}
		_, _ = p.Stop(context.WithoutCancel(ctx), grace)
		ob.exitReason, ob.interruptedErr = "interrupted: the command's process group was stopped ("+p.ExitStatus()+")", ctx.Err()
		return nil
	case <-d.telemetryDead():
		_, _ = p.Stop(context.WithoutCancel(ctx), time.Second)
		return d.TelemetryErr()
	}
	// ExitError waits (briefly) for the output written just before the
	// exit to reach command.log, which closes when this returns.
	_ = p.ExitError()
	var ee *exec.ExitError
	switch xerr := p.ExitErr(); {
	case xerr == nil:
		st := 0
		ob.exitStatus = &st
	case errors.As(xerr, &ee) && ee.ExitCode() >= 0:
		st := ee.ExitCode()
		ob.exitStatus = &st
		ob.commandErr = fmt.Errorf("the measured command failed (%s)", p.ExitStatus())
	default:
		ob.exitReason = p.ExitStatus()
		ob.commandErr = fmt.Errorf("the measured command ended abnormally (%s)", p.ExitStatus())
	}
	return nil
}

// finishObserve reads the counter again, writes the requests (a result
// file's, else synthetic ones) and run.json's measure object, ends the
// formal stage (at the last response of a result file's requests, as
// every run's formal stage ends; else when the load ended), and returns
// what ended the stage early (an interrupt, a failed command) with the
// raw data kept.
func finishObserve(ctx context.Context, rc *workflow.RunContext, o *Observe, ob *observed) error {
	info := &record.MeasureInfo{Command: o.Redacted, TokenMetric: o.TokenMetric, TokensBefore: ob.before,
		ExitStatus: ob.exitStatus, ExitReason: ob.exitReason, Notes: o.Notes}
	if len(o.Argv) > 0 {
		info.Load = "command"
	} else {
		info.Load = "live traffic over " + o.Duration.String()
		info.DurationS = o.Duration.Seconds()
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	after, err := o.ReadTokens(rctx)
	cancel()
	var tokens int
	switch {
	case err != nil:
		info.Requests = "none: the server's token counter could not be read after the load (" + err.Error() + ")"
	case after < ob.before:
		info.Requests = fmt.Sprintf("none: the server's counter went back from %.0f to %.0f (the server restarted during the load?): no token count", ob.before, after)
	default:
		info.TokensAfter = after
		tokens = int(math.Round(after - ob.before))
		info.Requests = "synthetic: the formal stage's output tokens from the server's counter " + o.TokenMetric + "; no per-request data (latency and steady state are not applicable)"
	}
	overCap := tokens > maxMeasuredTokens
	if overCap {
		info.Requests = fmt.Sprintf("none: %d output tokens in the window, above the %d a run's synthetic requests can carry", tokens, maxMeasuredTokens)
		tokens = 0
	}
	info.OutputTokens = tokens
	if err == nil && after == ob.before {
		const why = "the server's counter did not move during the load: did it reach this server (--engine-url)?"
		rc.Log.Warn().Str("counter", o.TokenMetric).Msg(why)
		info.Notes = append(info.Notes, why)
	}
	reqs := measuredRequests(tokens, ob.start, ob.end)
	if o.Results != nil {
		counted := tokens
		if info.TokensAfter == 0 && tokens == 0 || overCap {
			counted = -1 // no count to hold the file to
		}
		got, rerr := o.Results(ob.start, ob.end, counted)
		switch {
		case rerr != nil:
			rc.Log.Warn().Err(rerr).Msg("result file not used: the output tokens are the server counter's, without per-request data")
			info.Notes = append(info.Notes, "result file not used: "+rerr.Error())
		default:
			reqs, info.Requests, info.Results = got.Requests, got.What, got.File
			info.Notes = append(info.Notes, got.Notes...)
			for _, n := range got.Notes {
				rc.Log.Info().Msg(n)
			}
		}
	}
	end := ob.end
	if info.Results != nil {
		end = 0
		for _, r := range reqs {
			end = max(end, r.DoneAt)
		}
	}
	for _, r := range reqs {
		if err := rc.Out.AppendRequest(r); err != nil {
			return archiveErr(rc, err)
		}
	}
	if err := rc.StageEnd("formal", end); err != nil {
		return archiveErr(rc, err)
	}
	if err := rc.Out.UpdateMeta(func(m *record.Meta) {
		m.Measure = info
		m.RequestSet = record.RequestSet{Source: "not sent by joulebench: " + describeLoad(info), Count: len(reqs)}
	}); err != nil {
		return archiveErr(rc, err)
	}
	rc.Log.Info().Str("counter", o.TokenMetric).Float64("before", ob.before).Float64("after", info.TokensAfter).Int("output_tokens", tokens).Msg("formal stage: output tokens from the server's counter")
	switch {
	case ob.interruptedErr != nil:
		return fmt.Errorf("formal stage %s: %w", ob.exitReason, ob.interruptedErr)
	case ob.commandErr != nil:
		return ob.commandErr
	case err != nil:
		return fmt.Errorf("server token counter %s after the load: %w", o.TokenMetric, err)
	}
	return nil
}

// describeLoad says what generated a measured run's load.
func describeLoad(info *record.MeasureInfo) string {
	if len(info.Command) > 0 {
		return "the command " + strings.Join(info.Command, " ")
	}
	return info.Load
}

// maxMeasuredTokens bounds the output tokens of a measured window: 199
// synthetic requests (one below a built-in profile's steady state, as an
// import's) of the format's largest count each; the reader holds
// measure.output_tokens to it.
const maxMeasuredTokens = archive.MaxMeasuredTokens

// measuredRequests spreads n output tokens over the fewest synthetic
// requests over [begin, end] that keep each within
// archive.MaxOutputTokens (the first ones take one more).
func measuredRequests(n int, begin, end float64) []record.Request {
	return archive.SyntheticRequests(n, begin, end, MeasuredRequestID, "engine")
}
