package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/importer"
)

func (a *app) importCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import ptdaemon|csv|prometheus FILE --out DIR [flags]",
		Short: "Turn a power recording made without joulebench into a run archive",
		Long: `import writes a new run directory (format v1) from a power recording, so
that analyze, report, compare and plot read it like a measured run:

  ptdaemon FILE    a PTDaemon / MLPerf Power sample log (spl.txt) with
                   --loadgen mlperf_log_detail.txt: the measured window is
                   the loadgen's power_begin..power_end; readings <= 0
                   (PTDaemon's -1) are failed samples, left out as gaps.
                   The output tokens are the loadgen's token rate
                   (Offline result_tokens_per_second, Server
                   result_completed_tokens_per_second) times the window,
                   so node J/token = watts / (tokens/s); the model is the
                   MODEL of results/SYSTEM/MODEL/SCENARIO/performance/run_1/.
                   An MLPerf submission's measured run is run_1/:
                     import ptdaemon run_1/spl.txt --loadgen
                       run_1/mlperf_log_detail.txt --out DIR
                   its ranging/ pass is refused unless --ranging is given
                   (then marked ranging everywhere)
  csv FILE         a CSV with a header; --map says which columns hold what:
                   time=COL (Unix s or RFC 3339) or time_ms=COL, device=COL
                   (optional), watts=COL and/or joules=COL (a cumulative counter)
  prometheus FILE  a /api/v1/query_range answer or range-vector export
                   (JSON); --unit watts|joules|millijoules, --device-label

The run has one stage, formal, over the window (--begin/--end for csv and
prometheus; default: the span every device covers). Without per-request
data, --output-tokens N (default for ptdaemon: the loadgen's count) writes
synthetic requests over the window (one, or several of at most 4,194,304
tokens each): J/token divides by N, and latency metrics are not
applicable. Every file must be a regular file of at most 256 MiB (a
gzip-compressed one, such as spl.txt.gz, is read decompressed, its content
at most 256 MiB too), with absolute times (2000 to 2100) and readings of at most 100 kW; the archive
is read back before DIR appears. run.json's "import" object records every
file read (with its sha256) and these choices.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return a.importRun(cmd, args[0], args[1]) },
	}
	f := cmd.Flags()
	f.String("out", "", "run directory to create (must not exist)")
	f.String("loadgen", "", "ptdaemon: the loadgen's mlperf_log_detail.txt (power_begin/power_end)")
	f.String("map", "", "csv: column mapping, e.g. time=ts,device=gpu,watts=power_w")
	f.String("unit", "watts", "prometheus: unit of the values: watts, joules or millijoules (a counter)")
	f.String("device-label", "", "prometheus: label naming each series' device (default: gpu, device or instance)")
	f.String("begin", "", "csv, prometheus: start of the measured window (Unix s or RFC 3339)")
	f.String("end", "", "csv, prometheus: end of the measured window (Unix s or RFC 3339)")
	f.String("domain", record.DomainGPU, "csv, prometheus: what the recorded power covers: gpu, cpu, dram or node (ptdaemon is node: the whole system at the wall)")
	f.Int("output-tokens", 0, "output tokens generated in the window (for J/token; no per-request data is imported; ptdaemon default: the loadgen's token rate × the window)")
	f.String("model", "", "model name recorded in run.json (ptdaemon default: the MODEL directory of an MLPerf submission's layout)")
	f.Bool("ranging", false, "ptdaemon: import an MLPerf ranging pass (refused otherwise), marked ranging")
	f.String("profile", "benchmark-1.0", "built-in profile the archive is evaluated with by default")
	return cmd
}

func (a *app) importRun(cmd *cobra.Command, format, file string) error {
	q := importer.Request{Format: format, File: file, Out: a.v.GetString("out"),
		Loadgen: a.v.GetString("loadgen"), Map: a.v.GetString("map"), Unit: a.v.GetString("unit"), DeviceLabel: a.v.GetString("device-label"),
		Begin: a.v.GetString("begin"), End: a.v.GetString("end"), Domain: a.v.GetString("domain"), DomainGiven: cmd.Flags().Changed("domain"),
		OutputTokens: a.v.GetInt("output-tokens"), Profile: a.v.GetString("profile"), Software: map[string]string{"joulebench": version, "go": runtime.Version()},
		Model: a.v.GetString("model"), Ranging: a.v.GetBool("ranging")}
	rec, err := importer.Import(cmd.Context(), q)
	if err != nil {
		return err
	}
	fmt.Fprint(a.out, q.Summary(rec))
	if w := rec.BeyondWarning(); w != "" {
		a.log.Warn().Str("component", "import").Msg(w)
	}
	return nil
}
