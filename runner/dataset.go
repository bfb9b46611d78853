package runner

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/joulebench/joulebench/measure"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
	"github.com/joulebench/joulebench/workload"
)

// resolveDataset turns the dataset option into what the steps open: a Hub
// dataset (hf:OWNER/NAME[@REV]/PATH, or a named one such as sharegpt) is
// fetched into the cache ($XDG_CACHE_HOME/joulebench), with the Progress
// hook's display, and replaced by its cached path; random gets the
// --random-* lengths. Any failure is invalid input, before a run directory
// exists.
func (r *Runner) resolveDataset(ctx context.Context) (string, error) {
	o := r.s.Dataset
	name := o.Name
	if workload.IsRandom(name) {
		spec, err := workload.ParseRandomSpec(name)
		if err != nil {
			return "", WithCode(CodeInvalid, err)
		}
		if v := o.RandomInputLen; v != 0 {
			spec.InputLen = v
		}
		if v := o.RandomOutputLen; v != 0 {
			spec.OutputLen = v
		}
		if o.RandomRangeRatioSet {
			spec.RangeRatio = o.RandomRangeRatio
		}
		if _, err := workload.ParseRandomSpec(spec.String()); err != nil {
			return "", WithCode(CodeInvalid, err)
		}
		return spec.String(), nil
	}
	hub := workload.HubName(name)
	if hub == "" {
		return name, nil
	}
	f, err := workload.ParseHubFile(hub)
	if err != nil {
		return "", WithCode(CodeInvalid, err)
	}
	cache, err := workload.CacheDir()
	if err != nil {
		return "", WithCode(CodeInvalid, err)
	}
	endpoint := o.HFEndpoint
	if endpoint == "" {
		endpoint = os.Getenv("HF_ENDPOINT")
	}
	msgs := r.s.Messages
	h := &workload.Hub{Endpoint: endpoint, CacheDir: cache, Token: os.Getenv("HF_TOKEN"), SHA256: o.SHA256,
		Note: func(msg string) { fmt.Fprintln(msgs, msg) }}
	var finish func()
	if o.Progress != nil {
		h.Progress, finish = o.Progress("dataset " + f.Path)
	}
	path, got, err := h.Fetch(ctx, f)
	if finish != nil {
		finish()
	}
	if err != nil {
		return "", WithCode(CodeInvalid, fmt.Errorf("dataset %s: %w", name, err))
	}
	fmt.Fprintf(msgs, "dataset %s: %s@%s sha256 %s (%d bytes, cached at %s)\n", name, got.Repo, got.Revision, got.SHA256, got.Size, path)
	return path, nil
}

// SteadyFeasible says before anything starts when a profile can never
// reach steady state: it sends fewer successful formal requests than
// window × min_windows (its parameters). A profile with the parameter
// accept_unsteady (benchmark-1.0, -1.5) makes that an error unless the
// parameter is true; any other profile gets a warning on warn. A
// steady_span_start that names no reading is an error too.
func SteadyFeasible(l *workflow.Loaded, d *steps.Deps, warn io.Writer) error {
	if s, ok := l.Params["steady_span_start"].(string); ok {
		if _, err := measure.ParseSpanStart(s); err != nil {
			return WithCode(CodeInvalid, fmt.Errorf("parameter steady_span_start: %w", err))
		}
	}
	window, ok1 := paramInt(l, "window")
	minWin, ok2 := paramInt(l, "min_windows")
	if !ok1 || !ok2 {
		return nil
	}
	n, known := steps.FormalRequests(l, d)
	if !known || n >= window*minWin {
		return nil
	}
	msg := fmt.Sprintf("profile %s sends %d formal requests, fewer than window × min_windows = %d × %d = %d: steady state can never be reached",
		l.Profile.Name, n, window, minWin, window*minWin)
	accept, declared := l.Params["accept_unsteady"].(bool)
	if declared && !accept {
		return WithCode(CodeInvalid, fmt.Errorf("%s; raise request_count, or --set accept_unsteady=true to run without a steady-state result", msg))
	}
	fmt.Fprintf(warn, "warning: %s\n", msg)
	return nil
}

func paramInt(l *workflow.Loaded, name string) (int, bool) {
	switch v := l.Params[name].(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case float64:
		return int(v), true
	}
	return 0, false
}
