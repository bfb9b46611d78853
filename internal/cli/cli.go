// Package cli is the plumbing of joulebench's command line that is not a
// command: reading the configuration (file and environment) into viper,
// building the logger, telling usage errors, and stopping cleanly on a
// signal. The commands themselves are cmd/joulebench's.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rs/zerolog"
	"github.com/spf13/viper"

	"github.com/joulebench/joulebench/internal/exitcode"
)

// ReadConfig reads the environment (prefix_NAME for the option name, '-'
// as '_') and the configuration file into v: the file that the option
// fileKey names (flag or environment; it must exist), else config.yaml (or
// another extension viper reads) in dir when there is one; dir empty:
// none. A file that cannot be read is invalid input.
func ReadConfig(v *viper.Viper, prefix, fileKey, dir string) error {
	v.SetEnvPrefix(prefix)
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if file := v.GetString(fileKey); file != "" {
		v.SetConfigFile(file)
		if err := v.ReadInConfig(); err != nil {
			return exitcode.With(exitcode.Invalid, fmt.Errorf("config file %s: %w", file, err))
		}
		return nil
	}
	if dir == "" {
		return nil
	}
	v.AddConfigPath(dir)
	v.SetConfigName("config")
	if err := v.ReadInConfig(); err != nil {
		var nf viper.ConfigFileNotFoundError
		if !errors.As(err, &nf) {
			return exitcode.With(exitcode.Invalid, fmt.Errorf("config file: %w", err))
		}
	}
	return nil
}

// Logger is the logger on w at level (debug, info, warn, error) in format
// console (a line per message, no colour) or json; anything else is
// invalid input.
func Logger(w io.Writer, level, format string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		return zerolog.Logger{}, exitcode.With(exitcode.Invalid, fmt.Errorf("--log-level: %w", err))
	}
	switch format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05", NoColor: true}
	default:
		return zerolog.Logger{}, exitcode.Invalidf("--log-format must be console or json")
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// IsUsageError reports whether err is cobra's word for a command line it
// cannot parse (an unknown command or flag, a wrong number of arguments,
// a flag value of the wrong type).
func IsUsageError(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command") || strings.Contains(msg, "arg(s)") || strings.HasPrefix(msg, "unknown flag") || strings.HasPrefix(msg, "invalid argument")
}

// StopSignals are the signals that stop a run cleanly: Ctrl-C, SIGTERM
// and SIGHUP (the terminal or the SSH session closed). Left to their
// default, SIGTERM and SIGHUP end the process at once, with run.json
// saying running and a managed engine orphaned.
func StopSignals() []os.Signal {
	return []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
}

// StopContext is parent, cancelled by the first of the stop signals (the
// run then stops cleanly: status interrupted, raw data kept, the engine
// stopped). A second Ctrl-C after it calls twice (which ends the process
// at once); a repeated SIGTERM or SIGHUP does not: a parent's death signal
// (a sweep killed) comes again at every reparenting of the process, and a
// closed terminal may hang up more than once. stop cancels the context and
// lets the signals have their default again.
func StopContext(parent context.Context, twice func()) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, StopSignals()...)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		cancel()
		for {
			select {
			case s := <-sigs:
				if s == os.Interrupt {
					twice()
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// KVLog is a logging function, msg and key/value pairs, that writes an
// event ev starts (log.Info, log.Warn): a library's log hook without its
// logger's types.
func KVLog(ev func() *zerolog.Event) func(msg string, kv ...string) {
	return func(msg string, kv ...string) {
		e := ev()
		for i := 0; i+1 < len(kv); i += 2 {
			e = e.Str(kv[i], kv[i+1])
		}
		e.Msg(msg)
	}
}
