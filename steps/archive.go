package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workflow"
)

// ArchiveConfig is the `with:` of the archive step (spec step 7).
type ArchiveConfig struct{}

var archiveKind = workflow.NewStepKind("archive",
	"stop sampling, evaluate the profile over the raw data, write results.json and mark runs that fail an exclude check as excluded (never deleted)",
	func() *ArchiveConfig { return &ArchiveConfig{} },
	runArchive)

func runArchive(ctx context.Context, rc *workflow.RunContext, d *Deps, _ *ArchiveConfig) error {
	if err := d.StopSampling(); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	d.RecordAnomalies(rc)
	if err := d.RecordClockSync(ctx, rc); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	if d.StopMetrics != nil {
		if err := d.StopMetrics(); err != nil {
			return fmt.Errorf("engine metrics: %w", err)
		}
	}
	return Finish(ctx, rc, record.StatusComplete, "")
}

// EndStages ends the stages still open when a run stops early (a failure,
// Ctrl-C): a last sample is taken when sampling still runs, and the stages
// end at the newest sample common to every device, so that the energy of
// each stage has power data up to its end. Without sampling they end now.
// Its error joins those of recording the stage ends.
func (d *Deps) EndStages(ctx context.Context, rc *workflow.RunContext) error {
	now := rc.Clock.Now()
	if !d.sampling() {
		return rc.CloseOpenStages(now)
	}
	if err := d.sampleNow(ctx); err != nil {
		rc.Log.Warn().Err(err).Msg("last sample")
	}
	return rc.CloseOpenStages(d.lastSampleT(now))
}

// failedChecks joins the checks of severity fail that did not pass ("" if
// none).
func failedChecks(res *record.Results) string {
	var why []string
	for _, n := range res.Order {
		r := res.Values[n]
		if r.Kind == "check" && r.Severity == "fail" && r.Passed != nil && !*r.Passed {
			msg := "check " + n + " failed"
			if r.Message != "" {
				msg += ": " + r.Message
			}
			why = append(why, msg)
		}
	}
	return strings.Join(why, "; ")
}

// Finish closes a run: open stages end now, the data is flushed and
// synced, then status and reason are written (in that order: a crash in
// between leaves a run still "running", never a "complete" one missing
// its last rows), and — for a complete run — the profile is evaluated
// over the archive as written (exactly what `joulebench analyze` does) and
// results.json is written; a run failing an exclude check is marked
// excluded, never deleted. A flush that fails makes a complete run failed,
// with the reason; the errors of ending the stages are logged and
// returned with the others.
func Finish(ctx context.Context, rc *workflow.RunContext, status, reason string) error {
	now := rc.Clock.Now()
	stagesErr := rc.CloseOpenStages(now)
	if stagesErr != nil {
		rc.Log.Error().Err(stagesErr).Msg("record the ends of the open stages")
	}
	flushErr := archiveErr(rc, rc.Out.Flush())
	if flushErr != nil {
		flushErr = fmt.Errorf("flush the run data: %w", flushErr)
		if status == record.StatusComplete {
			status, reason = record.StatusFailed, flushErr.Error()
		} else {
			reason += "; " + flushErr.Error()
		}
	}
	if err := rc.Out.UpdateMeta(func(m *record.Meta) {
		m.Status, m.Reason, m.EndedAt = status, reason, now
	}); err != nil {
		return errors.Join(flushErr, err, stagesErr)
	}
	if flushErr != nil || stagesErr != nil {
		return errors.Join(flushErr, stagesErr)
	}
	if status != record.StatusComplete {
		return nil
	}
	run, err := archive.Load(rc.Out.Dir())
	if err != nil {
		return fmt.Errorf("re-read archive: %w", err)
	}
	res, evalErr := workflow.Evaluate(ctx, rc.Loaded, run)
	if res == nil {
		return evalErr
	}
	if err := rc.Out.WriteResults(*res); err != nil {
		return err
	}
	if res.Excluded {
		if err := rc.Out.UpdateMeta(func(m *record.Meta) {
			m.Excluded, m.ExcludeReason = true, res.ExcludeReason
		}); err != nil {
			return err
		}
	}
	if why := failedChecks(res); why != "" {
		// Every step ran, but the run did not do what it is for (e.g.
		// every formal request failed): it is not complete. The reason
		// names what the failed requests said.
		if sum := failureSummary(run.Requests, "formal"); sum != "" {
			why += "; " + sum
		}
		if err := rc.Out.UpdateMeta(func(m *record.Meta) {
			m.Status, m.Reason = record.StatusFailed, why
		}); err != nil {
			return err
		}
	}
	if evalErr != nil {
		rc.Log.Warn().Err(evalErr).Msg("some formulas could not be evaluated")
	}
	return nil
}
