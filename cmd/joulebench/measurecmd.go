package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/internal/progress"
	"github.com/joulebench/joulebench/runner/observe"
	"github.com/joulebench/joulebench/runner/runflags"
)

func (a *app) measureCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "measure --engine-url URL [flags] (-- COMMAND [ARGS] | --duration D)",
		Short: "Measure the energy per token of a load joulebench did not send: a command, or live traffic",
		Long: `measure runs the method around traffic another tool sends to a server that
is already running: an idle baseline, the formal stage (the lifetime of
COMMAND, any load generator: vllm bench serve, guidellm, hey, a curl loop;
or with --duration the live traffic the server gets over D), and the
release back to baseline. Output tokens are the server's own counter read
before and after the formal stage (vLLM vllm:generation_tokens_total,
SGLang sglang:generation_tokens_total with --enable-metrics, llama.cpp
llamacpp:tokens_predicted_total with --metrics, TGI
tgi_request_generated_tokens_sum; Ollama exposes none and is refused).
--results FILE (vLLM bench serve, GuideLLM, AIPerf) gives per-request
times, so latency and steady state come too; without it they are not
applicable.
The archive is a normal run archive (profile measure); run.json's measure
object records the load (the command, secrets redacted), its exit status
and the counter. A failed command or Ctrl-C (which stops the command's
process group) keeps the raw data and says why. docs/measure.md.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); len(args) > 0 && dash != 0 {
				return withCode(exitInvalid, errors.New("measure: put the command that sends the load after --: joulebench measure --engine-url URL -- COMMAND [ARGS]"))
			}
			return a.measure(cmd, args)
		},
	}
	f := cmd.Flags()
	reg := a.runRegistries()
	runflags.EngineFlags(f, reg.Engines)
	runflags.TelemetryFlags(f, reg.Telemetry)
	f.String("out", "", "run directory to create (default: runs/<run id>); never overwritten")
	f.Bool("no-progress", false, "do not draw the progress bar")
	f.StringArray("label", nil, "run metadata for compare: --label scenario=chat (repeatable)")
	f.String("model-params", "", "total model parameters, e.g. 8e9 (compare's size groups)")
	runflags.ResultsFlags(f, runflags.RunFormatHelp)
	runflags.SetFlag(f)
	f.Duration("duration", 0, "measure the live traffic the server gets over this window instead of a command")
	f.String("metrics-url", "", "the server's Prometheus metrics (default: --engine-url's /metrics)")
	f.String("results", "", "the command's result file, read when it exits (vLLM bench serve --save-result JSON, GuideLLM benchmarks JSON, AIPerf profile_export.jsonl): its per-request times become the formal requests (latency, steady state), its tokens set beside the counter's")
	f.String("token-metric", "", "the server's counter of generated tokens, or a histogram's _sum (default: the engine's: see above)")
	return cmd
}

// measure maps the flags onto a run spec and measure's options, and
// runs it (package runner/observe).
func (a *app) measure(cmd *cobra.Command, argv []string) error {
	f := cmd.Flags()
	s := runflags.Build("", f, a.v, a.runRegistries())
	spec, err := a.runSpec(s, &progress.Console{W: a.errOut})
	if err != nil {
		return err
	}
	dur, _ := f.GetDuration("duration")
	murl, _ := f.GetString("metrics-url")
	metric, _ := f.GetString("token-metric")
	results, _ := f.GetString("results")
	_, err = observe.Run(cmd.Context(), spec, observe.Options{Argv: argv, Duration: dur, MetricsURL: murl, TokenMetric: metric, Results: results, Output: a.errOut})
	return err
}
