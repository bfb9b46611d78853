package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
	"github.com/joulebench/joulebench/workload"
)

// datasetFlags are the run command's dataset flags beyond --dataset and
// --dataset-format.
func datasetFlags(f *pflag.FlagSet) {
	f.Int("random-input-len", 0, "--dataset random: mean prompt length in tokens (default 1024)")
	f.Int("random-output-len", 0, "--dataset random: mean output length in tokens, sent as max_tokens (default 128)")
	f.Float64("random-range-ratio", 0, "--dataset random: lengths drawn uniformly from mean·[1-r, 1+r]")
	f.String("dataset-sha256", "", "expected sha256 of a downloaded dataset file (hf:…, sharegpt)")
	f.String("hf-endpoint", "", "Hugging Face Hub address for hf: datasets (default $HF_ENDPOINT or "+workload.DefaultHubEndpoint+")")
}

// resolveDataset turns --dataset into what the steps open: a Hub dataset
// (hf:OWNER/NAME[@REV]/PATH, or a named one such as sharegpt) is fetched
// into the cache ($XDG_CACHE_HOME/joulebench) with a progress bar and
// replaced by its cached path; random gets the --random-* lengths. Any
// failure is invalid input (exit 2), before a run directory exists.
func (a *app) resolveDataset(ctx context.Context) (string, error) {
	name := a.v.GetString("dataset")
	if workload.IsRandom(name) {
		spec, err := workload.ParseRandomSpec(name)
		if err != nil {
			return "", withCode(exitInvalid, err)
		}
		if v := a.v.GetInt("random-input-len"); v != 0 {
			spec.InputLen = v
		}
		if v := a.v.GetInt("random-output-len"); v != 0 {
			spec.OutputLen = v
		}
		if a.v.IsSet("random-range-ratio") {
			spec.RangeRatio = a.v.GetFloat64("random-range-ratio")
		}
		if _, err := workload.ParseRandomSpec(spec.String()); err != nil {
			return "", withCode(exitInvalid, err)
		}
		return spec.String(), nil
	}
	hub := workload.HubName(name)
	if hub == "" {
		return name, nil
	}
	f, err := workload.ParseHubFile(hub)
	if err != nil {
		return "", withCode(exitInvalid, err)
	}
	cache, err := workload.CacheDir()
	if err != nil {
		return "", withCode(exitInvalid, err)
	}
	endpoint := a.v.GetString("hf-endpoint")
	if endpoint == "" {
		endpoint = os.Getenv("HF_ENDPOINT")
	}
	h := &workload.Hub{Endpoint: endpoint, CacheDir: cache, Token: os.Getenv("HF_TOKEN"), SHA256: a.v.GetString("dataset-sha256"),
		Note: func(msg string) { fmt.Fprintln(a.errOut, msg) }}
	var bar *progressbar.ProgressBar
	if !a.v.GetBool("no-progress") {
		bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(a.errOut),
			progressbar.OptionSetDescription("dataset "+f.Path),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		max := int64(-2)
		h.Progress = func(done, total int64) {
			if total != max {
				max = total
				bar.ChangeMax64(total)
			}
			_ = bar.Set64(done)
		}
	}
	path, o, err := h.Fetch(ctx, f)
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		return "", withCode(exitInvalid, fmt.Errorf("dataset %s: %w", name, err))
	}
	fmt.Fprintf(a.errOut, "dataset %s: %s@%s sha256 %s (%d bytes, cached at %s)\n", name, o.Repo, o.Revision, o.SHA256, o.Size, path)
	return path, nil
}

// steadyFeasible says before anything starts when a profile can never
// reach steady state: it sends fewer successful formal requests than
// window × min_windows (its parameters). A profile with the parameter
// accept_unsteady (benchmark-1.0, -1.5) makes that an error unless the
// parameter is true; any other profile gets a warning.
func (a *app) steadyFeasible(l *workflow.Loaded, d *steps.Deps) error {
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
		return withCode(exitInvalid, fmt.Errorf("%s; raise request_count, or --set accept_unsteady=true to run without a steady-state result", msg))
	}
	fmt.Fprintf(a.errOut, "warning: %s\n", msg)
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
