package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/internal/cli"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/internal/redact"
	"github.com/joulebench/joulebench/runner"
	"github.com/joulebench/joulebench/runner/runflags"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// app holds what every command shares: output streams, configuration and
// the logger. One per process; no globals.
type app struct {
	out, errOut io.Writer
	// errTTY says whether stderr is a terminal (progress line or plain
	// lines); rawErr is stderr unwrapped (its terminal's width).
	errTTY bool
	rawErr io.Writer
	v      *viper.Viper
	log    zerolog.Logger
	root   *cobra.Command
	// engines are the engine kinds a run may name.
	engines *engines.Registry
	// warnNoPower logs "no power source found" once per command, however
	// many engines and cooldowns look for one.
	warnNoPower func(string)
	// args are the command line execute was given.
	args []string
	// redact hides the secrets this process was given from everything it
	// writes or prints (set by setup; nil: the patterns only).
	redact *redact.Redactor
	// rawOut and rawErrOut are out and errOut before redaction.
	rawOut, rawErrOut io.Writer
	// stdLog, when set, is given the redacted stderr for the standard log
	// package's output: net/http writes its own messages there ("Unsolicited
	// response received on idle HTTP channel ...", quoting what a server
	// sent, a token echoed included). main sets it to log.SetOutput; tests
	// leave it nil (that output is global).
	stdLog func(io.Writer)
}

func newApp(out, errOut io.Writer) *app {
	// Logs, the progress display and messages reach stderr from several
	// goroutines (the /metrics scraper, the steps): one lock serialises
	// their writes. Whether it is a terminal is read before the wrapping.
	a := &app{out: out, errOut: zerolog.SyncWriter(errOut), errTTY: isTTY(errOut), rawErr: errOut, v: viper.New(), engines: all.Registry()}
	a.rawOut, a.rawErrOut = a.out, a.errOut
	a.warnNoPower = runner.OnceLogf(a.telemetryLogf)
	a.out, a.errOut = a.redact.Writer(a.rawOut), a.redact.Writer(a.rawErrOut)
	root := &cobra.Command{
		Use:   "joulebench",
		Short: "GPU energy per output token of LLM inference services, with the method as data",
		Long: `joulebench measures what an LLM inference service costs per output token:
GPU energy (steady-state and full-lifecycle J/token, startup and release
energy), throughput, power, TTFT and TPOT. The procedure and every formula
are a YAML profile; built-in profiles: benchmark-1.0, benchmark-1.5, asiai.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.setup(cmd)
		},
	}
	root.SetOut(out)
	root.SetErr(errOut)
	runflags.Global(root.PersistentFlags())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(exitInvalid, err) })
	root.AddCommand(a.runCmd(), a.analyzeCmd(), a.validateCmd(), a.profilesCmd(), a.reportCmd(), a.compareCmd(), a.estimateCmd(), a.plotCmd(), a.devicesCmd(), a.sweepCmd(), a.versionCmd(), a.importCmd(), a.measureCmd(), a.restoreCmd(), a.agentCmd(), a.serveSimCmd())
	a.root = root
	return a
}

func (a *app) execute(ctx context.Context, args []string) error {
	a.args = args
	a.root.SetArgs(args)
	err := a.root.ExecuteContext(ctx)
	// What the redacting writers hold back (a tail that may begin a
	// secret) is written now.
	_, _ = redact.Flush(a.out), redact.Flush(a.errOut)
	if err != nil && !isExitError(err) && cli.IsUsageError(err) {
		err = withCode(exitInvalid, err)
	}
	if a.redact == nil {
		// setup did not run (a flag error): the command line's secrets.
		a.redact = a.buildRedactor(args)
	}
	return a.redactError(err)
}

func isExitError(err error) bool {
	var c exitcode.Coder
	return errors.As(err, &c)
}

// setup reads the config file and environment (JOULEBENCH_*) into viper,
// binds the command's flags, and builds the logger.
func (a *app) setup(cmd *cobra.Command) error {
	if err := a.readConfig(cmd.Flags()); err != nil {
		return err
	}
	return a.useRedactor(cmd)
}

// readConfig binds the flags f to viper over the config file and the
// environment (JOULEBENCH_*), and reads the config file.
func (a *app) readConfig(f *pflag.FlagSet) error {
	if err := a.v.BindPFlags(f); err != nil {
		return fmt.Errorf("bind flags: %w", err)
	}
	dir, err := os.UserConfigDir()
	if err == nil {
		dir += "/joulebench"
	}
	return cli.ReadConfig(a.v, "JOULEBENCH", "config", dir)
}

// useRedactor builds the redactor of the secrets the configuration holds
// (buildRedactor), puts it in front of every output, and builds the logger.
func (a *app) useRedactor(cmd *cobra.Command) error {
	a.redact = a.buildRedactor(a.args)
	a.out, a.errOut = a.redact.Writer(a.rawOut), a.redact.Writer(a.rawErrOut)
	if a.stdLog != nil {
		a.stdLog(a.errOut)
	}
	cmd.SetOut(a.out)
	cmd.SetErr(a.errOut)
	var err error
	a.log, err = cli.Logger(a.errOut, a.v.GetString("log-level"), a.v.GetString("log-format"))
	return err
}

// setFlag registers the repeated --set key=value flag.
func setFlag(fs *pflag.FlagSet) { runflags.SetFlag(fs) }
