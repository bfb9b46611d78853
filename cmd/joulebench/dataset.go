package main

import (
	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/internal/progress"
	"github.com/joulebench/joulebench/runner"
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

// datasetOptions reads the dataset flags; a download shows a progress bar
// unless --no-progress.
func (a *app) datasetOptions() runner.DatasetOptions {
	v := a.v
	o := runner.DatasetOptions{
		Name:                v.GetString("dataset"),
		Format:              v.GetString("dataset-format"),
		RandomInputLen:      v.GetInt("random-input-len"),
		RandomOutputLen:     v.GetInt("random-output-len"),
		RandomRangeRatio:    v.GetFloat64("random-range-ratio"),
		RandomRangeRatioSet: v.IsSet("random-range-ratio"),
		SHA256:              v.GetString("dataset-sha256"),
		HFEndpoint:          v.GetString("hf-endpoint"),
	}
	if !v.GetBool("no-progress") {
		o.Progress = progress.DownloadBars(a.errOut)
	}
	return o
}

// steadyFeasible says before anything starts when a profile can never
// reach steady state (runner.SteadyFeasible), warning on stderr.
func (a *app) steadyFeasible(l *workflow.Loaded, d *steps.Deps) error {
	return runner.SteadyFeasible(l, d, a.errOut)
}
