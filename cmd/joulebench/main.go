// Command joulebench measures what an LLM inference service costs per
// output token: GPU energy, throughput, power, TTFT and TPOT, with the whole
// procedure and every formula written as data (a YAML profile).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stopSignals()...)
	defer signal.Stop(sigs)
	go func() {
		// The first signal stops the run cleanly (status interrupted, raw
		// data kept, the engine stopped). A second Ctrl-C ends the process
		// at once; a repeated SIGTERM or SIGHUP does not: a parent's death
		// signal (a sweep killed) comes again at every reparenting of the
		// process, and a closed terminal may hang up more than once.
		if _, ok := <-sigs; !ok {
			return
		}
		cancel()
		for s := range sigs {
			if s == os.Interrupt {
				fmt.Fprintln(os.Stderr, "joulebench: interrupted twice: exiting now")
				os.Exit(exitInterrupted)
			}
		}
	}()
	err := newApp(os.Stdout, os.Stderr).execute(ctx, os.Args[1:])
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.silent {
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "joulebench:", err)
		os.Exit(exitCode(err))
	}
}

// stopSignals are the signals that stop a run cleanly: Ctrl-C, SIGTERM
// and SIGHUP (the terminal or the SSH session closed). Left to their
// default, SIGTERM and SIGHUP end the process at once, with run.json
// saying running and a managed engine orphaned.
func stopSignals() []os.Signal {
	return []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
}
