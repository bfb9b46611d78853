// Package runflags is the run command's flag surface as a library: the
// flags' definitions (Define, Global) and their mapping onto a typed run
// specification (Settings), which a caller turns into a runner.Spec
// (Settings.Spec) and may write to a file and read back (Encode, Decode).
// The run command and campaigns share it: `joulebench run` builds the
// Settings of its command line, and a campaign builds each run's Settings
// from the campaign's run flags at plan time and starts `joulebench run
// --spec FILE`, so that the flags are parsed once, by one definition.
package runflags

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/workload"
)

// Registries are the engine kinds and power sources whose flags a run
// takes (the engines' declared settings, every source's flags).
type Registries struct {
	Engines   *engines.Registry
	Telemetry *telemetry.Registry
}

// Global registers the flags every joulebench command takes (the root
// command's persistent flags), which a run's Settings carry too.
func Global(f *pflag.FlagSet) {
	f.String("config", "", "config file (default: $XDG_CONFIG_HOME/joulebench/config.yaml if present)")
	f.String("log-level", "info", "log level: debug, info, warn, error")
	f.String("log-format", "console", "log format: console or json")
	SecretNameFlag(f)
	f.StringSlice("profile-path", nil, "directories of named profiles besides $XDG_CONFIG_HOME/joulebench/profiles (repeatable; also profile-path: in the config file)")
}

// SecretNameFlag registers --secret-name, the names (besides the built-in
// key, token, secret, passw(or)d, pass, pwd, credential, auth) whose values
// are secrets wherever they appear: --engine-env, --extra-body, engine
// arguments, echoed request bodies.
func SecretNameFlag(fs *pflag.FlagSet) {
	fs.StringSlice("secret-name", nil, "treat variables, flags and JSON members whose name contains this as secrets, redacted from everything written or printed (repeatable; key, token, secret, password, pass, pwd, credential and auth always are)")
}

// RunFormatHelp is the help of the run command's --format.
const RunFormatHelp = "format of the results (table: a summary of the headline figures; --all for every value), and of the side-by-side and winner tables of several engines: table, markdown (to paste into an issue or pull request), csv, json"

// Define registers the run command's own flags on f.
func Define(f *pflag.FlagSet, reg Registries) {
	EngineFlags(f, reg.Engines)
	TelemetryFlags(f, reg.Telemetry)
	f.String("dataset", "", "request set: a built-in (chat, code, long-context), random (synthetic), sharegpt or hf:OWNER/NAME[@REV]/PATH (downloaded to $XDG_CACHE_HOME/joulebench), or a file")
	datasetFlags(f)
	f.String("dataset-format", "", "dataset format: sharegpt, jsonl, chat, code, conversation (multi-turn, sent turn by turn) (default: detect)")
	f.String("out", "", "run directory to create (default: runs/<run id>); never overwritten")
	f.Bool("quick", true, "with the simulator, apply the profile's quick parameter set (its quick section: e.g. shorter baseline and release hold)")
	f.Bool("no-progress", false, "do not draw the progress bar")
	f.Int("runs", 0, "asiai: measured runs per prompt (the same as --set runs=N)")
	loadFlags(f)
	f.StringArray("label", nil, "run metadata for compare: --label scenario=chat (repeatable)")
	f.String("model-params", "", "total model parameters, e.g. 8e9 (compare's size groups)")
	ResultsFlags(f, RunFormatHelp)
	multiEngineFlags(f)
	f.Bool("wide", false, "draw the final comparison's tables at their full width (default: fitted to the terminal, 120 columns off one)")
	SetFlag(f)
	BaselineFlags(f)
	gpuSettingsFlags(f)
}

// ResultsFlags registers how results are shown: --format (with the
// command's help), --all and --output-file.
func ResultsFlags(f *pflag.FlagSet, formatHelp string) {
	f.String("format", report.FormatTable, formatHelp)
	f.Bool("all", false, "show every value: all metrics, checks and derived values (default: the method's headline figures and any failed check)")
	f.String("output-file", "", "also write the results (every metric and check; with --all the derived values too) in --format to this file (json when --format is table)")
}

// SetFlag registers the repeated --set key=value flag.
func SetFlag(fs *pflag.FlagSet) {
	fs.StringArray("set", nil, "override a profile parameter: --set key=value (repeatable)")
}

// BaselineFlags registers --baseline and --baseline-force.
func BaselineFlags(fs *pflag.FlagSet) {
	fs.String("baseline", "", "a baseline run archive: evaluate the same profile on it, expose baseline.METRIC to checks and show each metric beside it")
	fs.Bool("baseline-force", false, "compare with a baseline of another model, engine, request set or profile")
}

// TelemetryFlags registers --telemetry and every source's flags.
func TelemetryFlags(f *pflag.FlagSet, tel *telemetry.Registry) { tel.Flags(f) }

// EngineFlags registers the flags that choose and configure the engine.
func EngineFlags(f *pflag.FlagSet, reg *engines.Registry) {
	f.StringSlice("engine", []string{all.Default}, "engine: "+engineHelp(reg)+". Repeat it (--engine ollama --engine llamacpp) to run the profile against each engine in turn and compare them")
	f.StringArray("model", nil, "model id: vLLM/SGLang model path or Hugging Face id (also the served name); llama.cpp alias (default: the GGUF file name); Ollama model name; with --engine-url the model to request (default: the first listed). With several engines, KIND=ID gives one engine its own (--model ollama=tiny --model llamacpp=tiny); a plain ID serves every engine without its own")
	f.Int64("seed", 1, "seed of the engine (sampling) and of the simulator")
	f.String("api-key", "", "API key sent as a Bearer token to the engine (or JOULEBENCH_API_KEY); never logged nor archived")
	f.String("engine-url", "", "benchmark an already running server at this URL instead of starting one (no startup or release stage)")
	f.String("deployment", "", "YAML file of a deployment of several engine parts (prefill, decode, router, replica), each started here (kind, args) or already running (url); requests go to its entry part (docs/engines.md)")
	f.String("engine-api", "", "API of --engine-url: openai or ollama (default: from --engine)")
	f.StringArray("engine-bin", nil, "engine executable (default: vllm, python for SGLang, llama-server, ollama), checked to exist and be executable before any engine starts. With several engines, KIND=PATH gives one engine its own (--engine-bin ollama=/opt/ollama --engine-bin llamacpp=./llama-server); a plain PATH serves every engine without its own")
	f.String("image-digest", "", "the engine's container image digest (sha256:…), recorded in run.json as the weights' and engine's provenance")
	f.StringArray("engine-arg", nil, "extra engine command-line argument (repeatable, one argument each)")
	f.StringArray("engine-env", nil, "engine environment override KEY=VALUE (repeatable)")
	f.String("model-file", "", "GGUF model file (llama.cpp; Ollama creates --model from it when missing)")
	f.Int("port", 0, "engine port on 127.0.0.1 (0: a free one)")
	f.Int("tp", 1, "tensor-parallel size (vLLM, SGLang)")
	f.Int("max-model-len", 0, "longest request in tokens (vLLM --max-model-len, SGLang --context-length, llama.cpp context per slot, Ollama context); 0: the engine's default")
	f.Int("slots", 0, "requests served at once: llama.cpp -np (default 4), Ollama OLLAMA_NUM_PARALLEL")
	f.String("revision", "", "model revision to serve and expect (checked where the engine reports it: SGLang; Ollama digest)")
	f.String("engine-version", "", "engine version the identity check expects (empty: not checked)")
	f.String("precision", "", "weights' precision the identity check expects: a dtype (bf16, fp16, fp32) or a quantization (fp8, awq, gptq, q4_k_m, ...); empty: what the engine's --dtype/--quantization (--engine-arg) or GGUF file asks for. The served precision (vLLM/SGLang options over the model's config.json, the GGUF file type, Ollama's quantization_level) is recorded as run.json engine.precision")
	f.String("thinking", "", "reasoning models: on or off (Ollama think, else chat_template_kwargs.enable_thinking); empty: the model's default")
	f.Duration("scrape-interval", all.DefaultScrapeInterval, "interval of the engine /metrics side path")
	f.StringArray("metrics-family", nil, "engine metric family to keep in engine_metrics.jsonl (repeatable; default per engine)")
	engineSettingFlags(f, reg)
}

// engineSettingFlags registers the engine-specific options the engines'
// descriptors declare (engines.Setting), with the help they give.
func engineSettingFlags(f *pflag.FlagSet, reg *engines.Registry) {
	for _, st := range reg.Declared() {
		if st.Values == nil && !st.Free {
			f.Bool(st.Flag, false, st.Help())
			continue
		}
		f.String(st.Flag, st.Default, st.Help())
	}
}

// engineHelp lists the registered engine kinds for the --engine help:
// the ones joulebench starts (the simulated first), then the ones only
// given with --engine-url.
func engineHelp(reg *engines.Registry) string {
	var local, remote []string
	for _, k := range reg.Kinds() {
		d, _ := reg.Lookup(k)
		switch {
		case d.Simulated:
			local = append([]string{k + " (" + d.Doc + ")"}, local...)
		case d.Start != nil:
			local = append(local, k)
		case d.Attach != nil:
			remote = append(remote, k+" ("+d.Doc+")")
		}
	}
	help := strings.Join(local, ", ")
	if len(remote) > 0 {
		help += "; with --engine-url also " + strings.Join(remote, ", ")
	}
	return help
}

// datasetFlags are the run command's dataset flags beyond --dataset and
// --dataset-format.
func datasetFlags(f *pflag.FlagSet) {
	f.Int("random-input-len", 0, "--dataset random: mean prompt length in tokens (default 1024)")
	f.Int("random-output-len", 0, "--dataset random: mean output length in tokens, sent as max_tokens (default 128)")
	f.Float64("random-range-ratio", 0, "--dataset random: lengths drawn uniformly from mean·[1-r, 1+r]")
	f.String("dataset-sha256", "", "expected sha256 of a downloaded dataset file (hf:…, sharegpt)")
	f.String("hf-endpoint", "", "Hugging Face Hub address for hf: datasets (default $HF_ENDPOINT or "+workload.DefaultHubEndpoint+")")
}

// loadFlags registers the load flags of vLLM's `bench serve`, each mapped
// onto a profile parameter (runner.LoadOptions).
func loadFlags(f *pflag.FlagSet) {
	f.Float64("request-rate", 0, "as vLLM bench serve: formal requests per second (--set rate=R, and mode poisson, or gamma with --burstiness, unless --set mode is given); inf: all at once (mode unlimited)")
	f.Float64("burstiness", 1, "as vLLM bench serve, with --request-rate: shape of the gamma-distributed gaps (--set burstiness=B; 1 = poisson, below 1 burstier)")
	f.Int("max-concurrency", 0, "as vLLM bench serve: most formal requests in flight (--set max_concurrency=N; without a rate, N in flight: mode concurrency)")
	f.Int("num-prompts", 0, "as vLLM bench serve: formal requests (--set request_count=N)")
}

// multiEngineFlags are the run flags of the asiai protocol: a JSON object
// merged into every request body, the parameter sweep, the cooldown to an
// idle level and the requests steady state needs.
func multiEngineFlags(f *pflag.FlagSet) {
	f.String("extra-body", "", `JSON object merged into every request body, e.g. '{"think": false}' (recorded in run.json as the label extra_body)`)
	f.String("sweep", "", "run once per value of a profile parameter: NAME=v1,v2,... or NAME for the profile's own list (its parameter sweep_NAME), e.g. --sweep context_tokens or --sweep burst=1,4,8; one result row per value and engine")
	f.Float64("cooldown-idle-w", 0, "before the baseline, wait for the GPUs' summed power to come back within the profile's release tolerance of this idle level in W (a sweep passes it to each point against a running server)")
	_ = f.MarkHidden("cooldown-idle-w")
	f.Bool("steady-requests", false, "raise request_count to window × min_windows, the successful formal requests steady state needs, when it is below (a campaign search's steady_requests: true)")
}

// gpuSettingsFlags are run's GPU settings.
func gpuSettingsFlags(f *pflag.FlagSet) {
	for _, s := range record.GPUSettingsTable() {
		f.String(s.Flag, "", s.Usage)
	}
}
