// Package observe is the library under `joulebench measure`: the method
// (idle baseline, formal stage, release back to baseline) around traffic
// joulebench does not send, against a server it did not start. The formal
// stage is a command's lifetime (any load generator: vLLM's bench serve,
// GuideLLM, hey, a curl loop) or a window of live traffic; the output
// tokens are the server's own counter read before and after it
// (Counters). It runs the profile Profile (benchmark-1.5's formulas with
// an observe step in place of the warm-up and requests) through the run
// library, so the archive is a normal run archive that analyze, report
// and compare read; run.json's measure object says what generated the
// load and how the tokens were counted.
package observe

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/runner"
	"github.com/joulebench/joulebench/steps"
)

// ProfileName is the name of the profile measure runs.
const ProfileName = "measure"

// profileYAML extends benchmark-1.5: the same formulas and parameters,
// the observe step in place of the warm-up and the formal requests, and
// the reasons of the figures a run without per-request data lacks.
//
//go:embed measure.yaml
var profileYAML []byte

// Profile is the YAML of the profile measure runs.
func Profile() []byte { return append([]byte(nil), profileYAML...) }

// Options are measure's own: the load and how tokens are counted.
type Options struct {
	// Argv is the command whose lifetime is the formal stage; Duration,
	// when Argv is empty, the window of live traffic.
	Argv     []string
	Duration time.Duration
	// MetricsURL is the server's Prometheus endpoint ("": the engine
	// URL's /metrics).
	MetricsURL string
	// TokenMetric names the token counter ("": the engine kind's, else
	// the one known counter the server exposes).
	TokenMetric string
	// Output receives the command's output (nil: the archive only).
	Output io.Writer
	// Grace is how long the command gets after SIGTERM on an interrupt.
	Grace time.Duration
	// Results is the load generator's result file (vLLM bench serve
	// --save-result JSON, GuideLLM's benchmarks JSON, AIPerf's
	// profile_export.jsonl), read once the command has exited: its
	// per-request records become the formal requests ("": none).
	Results string
}

// MetricsURL is the /metrics of the server at engineURL (its API path,
// such as /v1, dropped).
func MetricsURL(engineURL string) string {
	u := strings.TrimRight(engineURL, "/")
	u = strings.TrimSuffix(u, "/v1")
	return u + "/metrics"
}

// Run measures o's load against the server spec.Engine.URL: it checks
// the options and finds the server's token counter before anything is
// created, then runs the measure profile through the run library
// (spec's hooks open the power source, draw progress and show results).
// The error is the run's (a failed command, an interrupt: the archive
// keeps the raw data and says why), or invalid input (exit 2).
func Run(ctx context.Context, spec runner.Spec, o Options) (*runner.Result, error) {
	obs, err := Prepare(ctx, spec, o)
	if err != nil {
		return nil, err
	}
	spec.Observe = obs
	find := spec.FindProfile
	spec.FindProfile = func(ref, from string) ([]byte, string, error) {
		if ref == ProfileName {
			return Profile(), ProfileName + ".yaml (built-in, joulebench measure)", nil
		}
		if find == nil {
			return nil, "", fmt.Errorf("profile %s: no profile finder", ref)
		}
		return find(ref, from)
	}
	if spec.Profile == "" {
		spec.Profile = ProfileName
	}
	res, err := runner.Run(ctx, spec)
	if res != nil && len(res.Dirs) == 1 && spec.Messages != nil {
		say(spec.Messages, res.Dirs[0])
	}
	return res, err
}

// Prepare checks the options and resolves the server's token counter:
// the observe step's load.
func Prepare(ctx context.Context, spec runner.Spec, o Options) (*steps.Observe, error) {
	if spec.Engine.URL == "" {
		return nil, exitcode.Invalidf("measure: --engine-url URL is required: measure observes a server that is already running (its token counter, and the power while something else sends the load)")
	}
	switch {
	case len(o.Argv) > 0 && o.Duration > 0:
		return nil, exitcode.Invalidf("measure: give a command (after --) or --duration, not both")
	case len(o.Argv) == 0 && o.Duration <= 0:
		return nil, exitcode.Invalidf("measure: give the command that sends the load after --, or --duration D to measure the live traffic the server gets over D")
	case o.Results != "" && len(o.Argv) == 0:
		return nil, exitcode.Invalidf("measure: --results FILE is the result file of the command that sends the load: give the command after --")
	case len(spec.Engines) > 1 || spec.Sweep != "" || spec.Deployment != "":
		return nil, exitcode.Invalidf("measure: one server at a time (no several --engine, --sweep or --deployment)")
	}
	kind := ""
	if len(spec.Engines) == 1 && spec.EngineGiven {
		kind = spec.Engines[0]
	}
	url := o.MetricsURL
	if url == "" {
		url = MetricsURL(spec.Engine.URL)
	}
	c, err := ResolveCounter(ctx, url, kind, o.TokenMetric)
	if err != nil {
		return nil, err
	}
	redacted := spec.Redact.Argv(o.Argv)
	obs := &steps.Observe{Argv: o.Argv, Redacted: redacted, Redact: spec.Redact, Duration: o.Duration, Output: o.Output, Grace: o.Grace,
		TokenMetric: c.Name(),
		ReadTokens:  func(ctx context.Context) (float64, error) { return ReadTokens(ctx, url, c) },
		Notes:       []string{"output tokens: " + c.Name() + " (" + c.Source + ") at " + spec.Redact.URL(url) + ", read before and after the formal stage"}}
	if o.Results != "" {
		obs.Results = resultsReader(o.Results)
	}
	return obs, nil
}

// say prints what the run's measure object records: the load, the
// command's exit status and the token count.
func say(w io.Writer, dir string) {
	m, err := archive.ReadMeta(filepath.Join(dir, archive.RunFile))
	if err != nil || m.Measure == nil {
		return
	}
	ms := m.Measure
	load := ms.Load
	if len(ms.Command) > 0 {
		load = "the command " + strings.Join(ms.Command, " ")
	}
	fmt.Fprintf(w, "measure: load: %s\n", load)
	switch {
	case ms.ExitStatus != nil:
		fmt.Fprintf(w, "measure: the command exited with status %d\n", *ms.ExitStatus)
	case ms.ExitReason != "":
		fmt.Fprintf(w, "measure: %s\n", ms.ExitReason)
	}
	fmt.Fprintf(w, "measure: output tokens %d (%s: %.0f before, %.0f after); %s\n", ms.OutputTokens, ms.TokenMetric, ms.TokensBefore, ms.TokensAfter, ms.Requests)
}
