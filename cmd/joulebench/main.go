// Command joulebench measures what an LLM inference service costs per
// output token: GPU energy, throughput, power, TTFT and TPOT, with the whole
// procedure and every formula written as data (a YAML profile).
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/joulebench/joulebench/campaign"
	"github.com/joulebench/joulebench/cmd/internal/kubehelper"
	"github.com/joulebench/joulebench/internal/cli"
)

func main() {
	// The Kubernetes client lives in joulebench-kube: a command that asks
	// for it continues there, in this process's place.
	if err := kubehelper.HandOver(kubernetesBuiltIn, os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "joulebench:", err)
		os.Exit(exitCode(err))
	}
	// The first stop signal stops the run cleanly; a second Ctrl-C ends
	// the process at once (cli.StopContext).
	ctx, stop := cli.StopContext(context.Background(), func() {
		fmt.Fprintln(os.Stderr, "joulebench: interrupted twice: exiting now")
		os.Exit(exitInterrupted)
	})
	defer stop()
	a := newApp(os.Stdout, os.Stderr)
	a.stdLog = log.SetOutput
	// A sweep hands its child runs the repeatable flags that may hold
	// secrets through the environment, not the command line (ps).
	args, err := campaign.RestoreSecretArgs(os.Args[1:], os.Getenv(campaign.SecretArgsEnv))
	os.Unsetenv(campaign.SecretArgsEnv)
	if err == nil {
		err = a.execute(ctx, args)
	}
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.silent {
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "joulebench:", err)
		os.Exit(exitCode(err))
	}
}
