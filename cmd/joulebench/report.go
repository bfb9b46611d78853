package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/analysis"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/cmd/internal/kubehelper"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/report"
)

func (a *app) reportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report DIR...",
		Short: "Render tables of archived runs side by side, with energy by stage",
		Long: `report loads archived runs and renders a summary of each and their metrics
side by side, then each run's GPU energy by stage (joules and share of the
total). The stages, their intervals and their energies are the profile's
stage_energy section, evaluated with the very values its metrics use: in
benchmark-1.5, startup + formal + release is the numerator of
full_lifecycle_j_per_token, and release ends at release complete. Each run
is re-evaluated from its raw data with its own archived profile (or
--profile) so every run is shown by the same method.

--format html --out FILE.html writes one self-contained page per call (a
section per run): headline metrics, checks, energy by stage, the power
timeline with stages and the steady-state span, engine state, latency
distributions, the formal requests and the provenance; it opens offline.

--format llmd writes one run as an llm-d Benchmark Report v0.2 (JSON):
its engine, load, request figures and GPU power (docs/exports.md).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format := a.v.GetString("format")
			if err := analysis.CheckOutFormat(format); err != nil && format != report.FormatLLMD {
				return err
			}
			if base := a.v.GetString("baseline"); base != "" {
				args = append([]string{base}, args...) // the reference column: changes are against it
			}
			r, err := a.profiles().Report(cmd.Context(), args, a.v.GetString("profile"), analysis.WantsPage(format))
			if err != nil {
				return err
			}
			render := func(w io.Writer) error { return r.Render(w, format, version) }
			if format == report.FormatLLMD {
				render = func(w io.Writer) error { return exitcode.With(exitcode.Invalid, report.WriteLLMD(w, r.Runs)) }
			}
			if err := a.toOut(a.v.GetString("out"), render); err != nil {
				return err
			}
			// As analyze: the table is shown, and the exit code says that
			// some values are missing (4), a run did not finish (3) or a
			// check failed (3).
			return r.Outcome()
		},
	}
	cmd.Flags().String("profile", "", "evaluate every run with this profile instead of its own")
	cmd.Flags().String("format", "table", outFormatHelp+"; llmd: llm-d Benchmark Report v0.2 (JSON, one run)")
	cmd.Flags().String("out", "", outFileHelp)
	cmd.Flags().String("baseline", "", "a run archive shown first, each run's change in % against it (default: against the first run)")
	return cmd
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			fmt.Fprintf(a.out, "joulebench %s (archive format v%d)\n", version, record.FormatVersion)
			fmt.Fprintf(a.out, "kubernetes: %s\n", kubehelper.Status(kubernetesBuiltIn))
		},
	}
}
