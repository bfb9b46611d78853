// Package runner runs a profile against one or several engines: the
// library under `joulebench run`. It takes a resolved run specification
// (Spec: the profile and its parameters, the engines and their options,
// the request set, where the archive goes, and the hooks through which the
// caller opens the power source, draws progress and shows results) and
// runs it: the engine's setup, several engines in turn with a cooldown
// between them, parameter sweeps, the host's state (swap, other engines'
// processes), the open-files limit, and the run's archive. It knows no
// command line: cmd/joulebench maps flags and configuration onto a Spec,
// calls Run and renders what it returns.
package runner

import (
	"context"
	"io"
	"time"

	"github.com/rs/zerolog"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/internal/redact"
	"github.com/joulebench/joulebench/internal/runprogress"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/telemetry"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
	"github.com/joulebench/joulebench/workflow"
)

// Spec is one run command, resolved: what to run and the caller's hooks.
// Option names in errors (--engine-url, --set, ...) are the command
// line's, which these fields mirror.
type Spec struct {
	// Profile is a profile name or file, found by FindProfile.
	Profile string
	// Sets are key=value parameter overrides (--set).
	Sets []string
	// Labels are key=value run labels (--label); ModelParams the total
	// model parameters (--model-params, recorded as the label model_params).
	Labels      []string
	ModelParams string
	// Engines are the engine kinds to run against in turn (--engine);
	// none or one: a single run. EngineGiven says whether the kind was set
	// at all (flag, configuration or environment).
	Engines     []string
	EngineGiven bool
	Engine      EngineOptions
	// Deployment is a --deployment file: several engine parts with roles
	// (DeploymentFile) instead of one engine.
	Deployment string
	Dataset    DatasetOptions
	Load       LoadOptions
	// Out is the run directory to create (several engines or a sweep: the
	// directory of their runs); empty: under runs/.
	Out string
	// Quick applies the profile's quick parameter set with the simulator.
	Quick bool
	// Sweep is NAME=v1,v2,... or NAME: one run per value of a parameter.
	Sweep string
	// CooldownIdleW, when above 0, is the idle power (all GPUs, W) that a
	// single run waits to come back near before its baseline (a campaign
	// point against a running server; --cooldown-idle-w).
	CooldownIdleW float64
	// SteadyRequests raises request_count to window × min_windows when it
	// is below (--steady-requests; a search's points).
	SteadyRequests bool
	// Format is the format of the results tables (checked here; empty:
	// report.FormatTable), and
	// OutputFile the file one run's results go to (refused with several).
	Format, OutputFile string
	// ExtraBody is a JSON object merged into every request body.
	ExtraBody string
	// ImageDigest is the engine's container image digest (sha256:...).
	ImageDigest string
	// Replay is the recording a replayed power source plays (checked here).
	Replay string
	// Baseline is a baseline archive the results are gated on (checked
	// here; the Report hook gates).
	Baseline string
	// Changed reports whether the user set an option explicitly (nil:
	// none): every such option must apply to the engine it configures.
	Changed func(option string) bool

	// Registry holds the engine kinds a run may name.
	Registry *engines.Registry
	// FindProfile resolves a profile reference (a file, or a name) to its
	// YAML and the name errors give it; from is the referring profile.
	FindProfile func(ref, from string) ([]byte, string, error)
	// OpenTelemetry opens the run's power source (nil source: none).
	OpenTelemetry func(ctx context.Context, env TelemetryEnv) (telemetry.Source, record.TelemetryInfo, error)
	// CheckTelemetry checks the power source options before anything is
	// created, for an engine simulated or not (nil: nothing to check).
	CheckTelemetry func(simulatedEngine bool) error
	// CheckOutput checks how results will be shown, before anything is
	// created (nil: nothing to check).
	CheckOutput func() error
	// StartProgress starts the progress display of one run, given its
	// power source and whether its engine is simulated; it returns the
	// function that takes the run's progress (nil: none) and the one that
	// ends the display (nil: nothing to end). Nil: no progress.
	StartProgress func(tel record.TelemetryInfo, simulatedEngine bool) (update func(runprogress.Snapshot), finish func())
	// Report shows a finished run's results; its error (a failed check, a
	// formula that could not be evaluated) is the run's.
	Report func(ctx context.Context, r Report) error

	// Messages receives what a person reads on stderr: which engine runs,
	// the cooldown, warnings. Console receives the run's log lines (nil:
	// Messages).
	Messages, Console io.Writer
	// LogLevel is the level of the run's log.
	LogLevel zerolog.Level
	// Redact hides secrets from the archive and logs (nil: the patterns).
	Redact *redact.Redactor
	// Version is joulebench's version, recorded in run.json.
	Version string

	// Observe is the load of the profile's observe step (joulebench
	// measure: a command, or a window of live traffic); nil for a run
	// that sends its own requests.
	Observe *steps.Observe

	// GPU are the GPU settings the run applies.
	GPU GPUOptions

	// Now is the clock of run ids and default directories (nil: time.Now).
	Now func() time.Time
	// FileLimit is the process's open-files limit (nil: the system's).
	FileLimit FileLimit
	// Host reports the host's state (nil: this machine's).
	Host Host
}

// EngineOptions configure the engine (the --engine-* and model flags).
type EngineOptions struct {
	URL, API string
	// Common are the options every engine reads its part of, shared by
	// the run's engines (Args, ModelFile, Revision, Port, TP, MaxModelLen,
	// Slots, Seed). Bin, Model and Env are set for each engine from Bins,
	// Models and EnvVars, Log for each run: what is given here for them is
	// not read.
	engines.Common
	// Bins are the --engine-bin values: an executable, or KIND=PATH for
	// one kind.
	Bins []string
	// EnvVars are the --engine-env values: KEY=VALUE overrides of the
	// engine's environment.
	EnvVars []string
	// Models are the --model values: an id, or KIND=ID for one kind.
	Models []string

	EngineVersion, Thinking string
	// Precision is --precision, the precision the identity check expects.
	Precision string
	// Settings are the engine-specific options each engine descriptor
	// declares with its flags (health-generate, ollama-api, ollama-pull,
	// sim-preset).
	Settings engines.Settings
	APIKey   string
	// ScrapeInterval and MetricFamilies configure the /metrics side path;
	// the ...Set fields say whether they were set (else the profile's
	// metrics_interval and metrics_families parameters win).
	ScrapeInterval    time.Duration
	ScrapeIntervalSet bool
	MetricFamilies    []string
	MetricFamiliesSet bool
}

// DatasetOptions choose the request set (--dataset and its options).
type DatasetOptions struct {
	Name, Format                    string
	RandomInputLen, RandomOutputLen int
	RandomRangeRatio                float64
	RandomRangeRatioSet             bool
	SHA256, HFEndpoint              string
	// Progress starts the display of a download (desc names it); it
	// returns the function that takes bytes done of total (total -1:
	// unknown) and the one that ends the display. Nil: no display.
	Progress func(desc string) (update func(done, total int64), finish func())
}

// TelemetryEnv is what opening a run's power source may use.
type TelemetryEnv struct {
	// Sim is the simulated GPU that follows the simulated engine's load
	// (nil: the engine is not simulated, or no engine is loaded yet and
	// Cooldown is false).
	Sim *SimGPU
	// Clock is the run's clock.
	Clock *workflow.Clock
	// Cooldown is true for the power source of the cooldown between runs
	// (Sim is then an idle simulated GPU when the engine is simulated).
	Cooldown bool
}

// SimGPU is a simulated GPU: its configuration and the load it follows.
type SimGPU struct {
	Load   simtel.Load
	Config simtel.Config
	// Nodes, when set, are a simulated deployment's nodes, each with its
	// own GPUs, load and clock (Load and Config are then unused).
	Nodes []simtel.Node
}

// Report is a finished run for the Report hook.
type Report struct {
	Dir    string
	Loaded *workflow.Loaded
	Run    *record.Run
	// OneOfMany is true for one run of several (engines, sweep values).
	OneOfMany bool
}

// Result is what Run returns besides its error: for several engines or a
// sweep, where their runs went and which failed (a failed run does not
// stop the others).
type Result struct {
	// Parent is the directory of the runs (several engines or a sweep).
	Parent string
	// Dirs are the runs' directories, in order.
	Dirs []string
	// Sweep is the sweep's table (nil: not a sweep).
	Sweep *Sweep
	// Errs are the errors of the runs that failed, in order.
	Errs []error
}
