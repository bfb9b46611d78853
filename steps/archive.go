package steps

import (
	"context"
	"fmt"

	"github.com/joulebench/joulebench/archive"
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
	if d.StopMetrics != nil {
		if err := d.StopMetrics(); err != nil {
			return fmt.Errorf("engine metrics: %w", err)
		}
	}
	return Finish(ctx, rc, archive.StatusComplete, "")
}

// Finish closes a run: open stages end now, status and reason are written,
// the data is flushed, and — for a complete run — the profile is evaluated
// over the archive as written (exactly what `joulebench analyze` does) and
// results.json is written; a run failing an exclude check is marked
// excluded, never deleted.
func Finish(ctx context.Context, rc *workflow.RunContext, status, reason string) error {
	now := rc.Clock.Now()
	rc.CloseOpenStages(now)
	if err := rc.Out.UpdateMeta(func(m *archive.Meta) {
		m.Status, m.Reason, m.EndedAt = status, reason, now
	}); err != nil {
		return err
	}
	if err := rc.Out.Flush(); err != nil {
		return err
	}
	if status != archive.StatusComplete {
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
		if err := rc.Out.UpdateMeta(func(m *archive.Meta) {
			m.Excluded, m.ExcludeReason = true, res.ExcludeReason
		}); err != nil {
			return err
		}
	}
	if evalErr != nil {
		rc.Log.Warn().Err(evalErr).Msg("some formulas could not be evaluated")
	}
	return nil
}
