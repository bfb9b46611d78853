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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal the run stops cleanly; restoring the
		// default behaviour makes a second signal end the process at once.
		<-ctx.Done()
		stop()
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
