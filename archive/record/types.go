// Package record holds the record types of a run archive, format v1: what
// run.json, power.csv, requests.jsonl, engine_metrics.jsonl and
// results.json hold, as profiles' expressions and the measurement see it.
// It does no I/O; the codecs (reading, validating and writing those files)
// are package archive, which names these types too.
//
// The format is a public contract, documented in docs/archive-v1.md. Times
// are Unix seconds as float64, all in one clock.
package record

// FormatVersion is the archive format this package reads and writes.
const FormatVersion = 1

// Run status values.
const (
	StatusRunning     = "running"
	StatusComplete    = "complete"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
)

// Meta is run.json.
type Meta struct {
	FormatVersion int               `json:"format_version"`
	RunID         string            `json:"run_id"`
	Simulated     bool              `json:"simulated"`
	Profile       ProfileRef        `json:"profile"`
	Parameters    map[string]any    `json:"parameters,omitempty"`
	Engine        EngineInfo        `json:"engine"`
	RequestSet    RequestSet        `json:"request_set"`
	Hardware      Hardware          `json:"hardware"`
	Host          HostInfo          `json:"host"`
	Software      map[string]string `json:"software,omitempty"`
	Telemetry     TelemetryInfo     `json:"telemetry"`
	Status        string            `json:"status"`
	Reason        string            `json:"reason,omitempty"`
	Excluded      bool              `json:"excluded,omitempty"`
	ExcludeReason string            `json:"exclude_reason,omitempty"`
	StartedAt     float64           `json:"started_at"`
	EndedAt       float64           `json:"ended_at,omitempty"`
	Stages        []Stage           `json:"stages"`
	Events        []Event           `json:"events"`
	// Labels are free-form run metadata (scenario, task, model_params, ...).
	Labels map[string]string `json:"labels,omitempty"`
	// Import says where each part of an imported run came from (joulebench
	// import); nil for a run joulebench measured.
	Import *ImportInfo `json:"import,omitempty"`
	// Measure says what generated the load of a run joulebench measure
	// took around traffic it did not send, and how its output tokens were
	// counted; nil for any other run.
	Measure *MeasureInfo `json:"measure,omitempty"`
	// Load is the formal stage's load shape (absent in runs made before
	// it was recorded).
	Load *LoadShape `json:"load,omitempty"`
	// GPUSettings are the power limits and locked clocks the run applied
	// (absent: it changed none).
	GPUSettings *GPUSettings `json:"gpu_settings,omitempty"`
	// Deployment lists the parts of a run of several engine parts
	// (deployment.go); nil for a run of one engine.
	Deployment *Deployment `json:"deployment,omitempty"`
}

// ImportInfo records the origin of an imported run.
type ImportInfo struct {
	// Format is the recording's format: "ptdaemon", "csv" or "prometheus".
	Format string `json:"format"`
	// Files are the files read, each with its role and sha256.
	Files []ImportFile `json:"files"`
	// Window says where the formal window came from (e.g. "loadgen
	// power_begin/power_end", "--begin/--end", "the recording's span").
	Window string `json:"window"`
	// Requests says where requests.jsonl came from ("synthetic: one
	// request for the formal window with --output-tokens", or "none").
	Requests string `json:"requests"`
	// OutputTokens is the token count the user gave (0: none).
	OutputTokens int `json:"output_tokens,omitempty"`
	// FailedSamples counts readings the recording marks as failed (a
	// PTDaemon -1, a Prometheus NaN): left out of power.csv, so each is a
	// gap the power audit sees.
	FailedSamples int `json:"failed_samples,omitempty"`
	// Notes are anything else the importer decided (column mapping, units).
	Notes []string `json:"notes,omitempty"`
	// Validity is an MLPerf result's validity as its loadgen logged it
	// (result_validity: VALID or INVALID); "" when the recording has none.
	Validity string `json:"validity,omitempty"`
}

// MeasureInfo records a run of joulebench measure: the formal stage is
// a command's lifetime or a window of live traffic, and the output tokens
// are the difference of the server's own counter read at its start and
// end. Without per-request data, requests.jsonl holds synthetic requests
// over the formal stage carrying OutputTokens (as an import's).
type MeasureInfo struct {
	// Load says what generated the load: "command" (Command) or "live
	// traffic over 30s" (DurationS).
	Load string `json:"load"`
	// Command is the command's argv, secrets redacted.
	Command   []string `json:"command,omitempty"`
	DurationS float64  `json:"duration_s,omitempty"`
	// ExitStatus is the command's exit status (nil: no command, or it
	// did not exit on its own); ExitReason says how it ended otherwise
	// (a signal, an interrupt).
	ExitStatus *int   `json:"exit_status,omitempty"`
	ExitReason string `json:"exit_reason,omitempty"`
	// TokenMetric is the server's counter of generated tokens read before
	// and after the formal stage (e.g. vllm:generation_tokens_total), with
	// its two readings (summed over its series).
	TokenMetric  string  `json:"token_metric"`
	TokensBefore float64 `json:"tokens_before"`
	TokensAfter  float64 `json:"tokens_after"`
	// OutputTokens is TokensAfter - TokensBefore: what the synthetic
	// requests carry in all.
	OutputTokens int `json:"output_tokens"`
	// Requests says what requests.jsonl holds and why.
	Requests string `json:"requests"`
	// Notes are anything else measure decided.
	Notes []string `json:"notes,omitempty"`
	// Results is the load generator's result file whose per-request
	// records requests.jsonl holds (--results); nil: none.
	Results *MeasureResults `json:"results,omitempty"`
}

// MeasureResults records the result file a measured run's requests came
// from.
type MeasureResults struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	// Format is the file's format (vllm-bench-serve, guidellm, aiperf);
	// Tool and Version the load generator as the file names it.
	Format  string `json:"format"`
	Tool    string `json:"tool,omitempty"`
	Version string `json:"version,omitempty"`
	// Clock is what the file's request times count from (unix, or
	// monotonic: the tool's own clock, aligned as Notes say).
	Clock string `json:"clock"`
	// Requests counts the records imported; OutputTokens the output
	// tokens of the successful ones, beside the server counter's
	// measure.output_tokens.
	Requests     int   `json:"requests"`
	OutputTokens int64 `json:"output_tokens"`
}

// ImportFile is one file an import read.
type ImportFile struct {
	Role   string `json:"role"` // "power", "loadgen"
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// ProfileRef names the profile a run used and the sha256 of its YAML.
type ProfileRef struct {
	Name    string `json:"name"`
	Version int    `json:"version,omitempty"`
	SHA256  string `json:"sha256"`
	// Source is "builtin" or the file path given by the user.
	Source string `json:"source,omitempty"`
}

// EngineInfo describes the inference engine under test.
type EngineInfo struct {
	Kind           string            `json:"kind"`
	Version        string            `json:"version,omitempty"`
	URL            string            `json:"url,omitempty"`
	API            string            `json:"api,omitempty"`
	Managed        bool              `json:"managed"`
	Command        []string          `json:"command,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	Model          string            `json:"model,omitempty"`
	ServedModel    string            `json:"served_model,omitempty"`
	Revision       string            `json:"revision,omitempty"`
	Precision      string            `json:"precision,omitempty"`
	ContextLength  int               `json:"context_length,omitempty"`
	TensorParallel int               `json:"tensor_parallel,omitempty"`
	Thinking       string            `json:"thinking,omitempty"`
	ModelFormat    string            `json:"model_format,omitempty"`
	Quantization   string            `json:"model_quantization,omitempty"`
	Extra          map[string]any    `json:"extra,omitempty"`
}

// RequestSet identifies the frozen request set of a run.
type RequestSet struct {
	Source string `json:"source,omitempty"`
	Format string `json:"format,omitempty"`
	Count  int    `json:"count"`
	SHA256 string `json:"sha256,omitempty"`
	Seed   int64  `json:"seed,omitempty"`
	// Unique is how many distinct prompts the requests were drawn from;
	// Sampling says how (order or seeded shuffle, repeats).
	Unique   int    `json:"unique_prompts,omitempty"`
	Sampling string `json:"sampling,omitempty"`
	// Origin is where a downloaded dataset came from.
	Origin *DatasetOrigin `json:"origin,omitempty"`
	// LengthMethod says how a synthetic set's prompt lengths are in the
	// served model's tokens: tokenize (the server's tokenizer), calibrated
	// (probe requests against its prompt_tokens) or estimate (a word for
	// a token, unchecked).
	LengthMethod string `json:"length_method,omitempty"`
	// Trace identifies a replayed trace (--dataset trace:FILE) and the
	// window of it the run sent.
	Trace *TraceWindow `json:"trace,omitempty"`
}

// TraceWindow is the trace a run replayed: the file's name, format and
// sha256, the window (seconds from its first timestamp; duration 0: to
// the end), the time scale, and how many of its rows were in the window.
type TraceWindow struct {
	File      string  `json:"file"`
	Format    string  `json:"format"`
	SHA256    string  `json:"sha256"`
	StartS    float64 `json:"start_s"`
	DurationS float64 `json:"duration_s,omitempty"`
	Scale     float64 `json:"scale"`
	Requests  int     `json:"requests"`
	TotalRows int     `json:"total_rows"`
}

// LoadShape is the load shape of the formal requests and the parameters it
// uses, only those: {"mode": "concurrency", "concurrency": 16},
// {"mode": "gamma", "rate": 4, "burstiness": 0.5, "max_concurrency": 64}.
// Modes: unlimited, concurrency (Concurrency in flight), constant,
// poisson and gamma (Rate in requests/s; Burstiness, gamma's shape, for
// gamma only), ramp (RampStartRate to RampEndRate, requests/s, linear in
// time over the stage); MaxConcurrency caps the requests in flight of the
// last four (0: no cap). It is recorded in one canonical form: unlimited
// capped at N in flight is concurrency N, gamma with burstiness 1 is
// poisson. Runs that differ only in it are load points of one
// configuration.
type LoadShape struct {
	Mode           string  `json:"mode"`
	Concurrency    int     `json:"concurrency,omitempty"`
	Rate           float64 `json:"rate,omitempty"`
	Burstiness     float64 `json:"burstiness,omitempty"`
	MaxConcurrency int     `json:"max_concurrency,omitempty"`
	// The ramp's rates; a ramp may start (or end) at 0, so both are
	// written whenever the mode is ramp.
	RampStartRate *float64 `json:"ramp_start_rate,omitempty"`
	RampEndRate   *float64 `json:"ramp_end_rate,omitempty"`
}

// LoadCount is a whole-number parameter of a load object and LoadRate a
// real one (V nil: not written), named as run.json names them.
type (
	LoadCount struct {
		Key string
		V   int
	}
	LoadRate struct {
		Key string
		V   *float64
	}
)

// Counts are the load's whole-number parameters, in the order of its
// fields.
func (l *LoadShape) Counts() []LoadCount {
	return []LoadCount{{"concurrency", l.Concurrency}, {"max_concurrency", l.MaxConcurrency}}
}

// Rates are the load's real parameters, in the order of its fields.
func (l *LoadShape) Rates() []LoadRate {
	return []LoadRate{{"rate", &l.Rate}, {"burstiness", &l.Burstiness}, {"ramp_start_rate", l.RampStartRate}, {"ramp_end_rate", l.RampEndRate}}
}

// DatasetOrigin records a dataset file downloaded from the Hugging Face Hub
// (or a server that answers like it).
type DatasetOrigin struct {
	URL               string `json:"url"`
	Repo              string `json:"repo,omitempty"`
	Revision          string `json:"revision,omitempty"`
	RequestedRevision string `json:"requested_revision,omitempty"`
	Path              string `json:"path,omitempty"`
	SHA256            string `json:"sha256"`
	Size              int64  `json:"size,omitempty"`
}

// Hardware lists the measured devices.
type Hardware struct {
	Devices []Device `json:"devices"`
	Driver  string   `json:"driver,omitempty"`
	Chip    string   `json:"hw_chip,omitempty"`
}

// Device is one measured accelerator. ID is the key used in power.csv.
type Device struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	UUID string `json:"uuid,omitempty"`
	Host string `json:"host,omitempty"`
	// Method is "counter" when the device reports a cumulative energy
	// counter, otherwise "power" (energy integrated from power samples).
	Method     string `json:"method,omitempty"`
	PowerField string `json:"power_field,omitempty"`
	Simulated  bool   `json:"simulated,omitempty"`
	// PowerLimitW is the device's enforced power limit in W when the
	// source knows it (NVML, DCGM); 0 when unknown. The power validity
	// audit bounds readings by a multiple of it.
	PowerLimitW float64 `json:"power_limit_w,omitempty"`
	// Domain is the boundary the device's power covers: DomainGPU,
	// DomainCPU, DomainDRAM or DomainNode. Empty (archives written before
	// the field existed) means DomainGPU; read it with DomainOrGPU.
	Domain string `json:"domain,omitempty"`
	// Role is the part the device plays in a run of several engine parts
	// (disaggregated prefill and decode, a router in front of replicas):
	// RolePrefill, RoleDecode, RoleRouter or RoleReplica. Empty is a
	// single-engine run, whose devices serve every phase.
	Role string `json:"role,omitempty"`
}

// Roles of a device in a run of several engine parts (run.json
// hardware.devices[].role); absent for a single-engine run.
const (
	// RolePrefill is a device of the prefill part of a disaggregated
	// deployment: its energy is prefill energy.
	RolePrefill = "prefill"
	// RoleDecode is a device of the decode part: its energy is decode
	// energy.
	RoleDecode = "decode"
	// RoleRouter is a device of the router in front of the parts: its
	// energy is reported apart from either phase.
	RoleRouter = "router"
	// RoleReplica is a device of one of several replicas that each serve
	// both phases, as a single engine does.
	RoleReplica = "replica"
)

// Roles lists the valid roles.
var Roles = []string{RolePrefill, RoleDecode, RoleRouter, RoleReplica}

// Power domains: the boundary a device's energy covers (run.json
// hardware.devices[].domain).
const (
	// DomainGPU is one GPU's board power (NVML, DCGM, powermetrics' GPU,
	// the simulator).
	DomainGPU = "gpu"
	// DomainCPU is a CPU package (RAPL package zone).
	DomainCPU = "cpu"
	// DomainDRAM is the memory attached to a CPU package (RAPL dram zone).
	DomainDRAM = "dram"
	// DomainNode is a whole node's power (Redfish, IPMI DCMI).
	DomainNode = "node"
)

// Domains lists the valid domains in the order reports show them.
var Domains = []string{DomainGPU, DomainCPU, DomainDRAM, DomainNode}

// DomainOrGPU returns the device's domain, DomainGPU when absent.
func (d Device) DomainOrGPU() string {
	if d.Domain == "" {
		return DomainGPU
	}
	return d.Domain
}

// HostInfo describes the machine that ran joulebench.
type HostInfo struct {
	Hostname  string `json:"hostname,omitempty"`
	OS        string `json:"os,omitempty"`
	OSVersion string `json:"os_version,omitempty"`
	Arch      string `json:"arch,omitempty"`
	CPUs      int    `json:"cpus,omitempty"`
}

// TelemetryInfo says where power data came from.
type TelemetryInfo struct {
	Source    string  `json:"source"`
	IntervalS float64 `json:"interval_s,omitempty"`
	Simulated bool    `json:"simulated,omitempty"`
	Note      string  `json:"note,omitempty"`
	// Declined: the user chose to measure no power (--telemetry none), as
	// against a power source that was expected and not found.
	Declined bool `json:"declined,omitempty"`
	// ClockSync lists the offsets of the sources whose clock is not the
	// run clock (other nodes): one entry per such source.
	ClockSync []ClockSync `json:"clock_sync,omitempty"`
}

// Stage is a named interval of the run (baseline, startup, warmup, formal,
// release, ...). A stage is written to run.json when it begins, without an
// end: Open is true until it ends (in JSON, `end` absent or null), so a run
// killed during a stage keeps where it was.
type Stage struct {
	Name  string  `json:"name"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	// Open: the stage began and has not ended (End is meaningless, unless
	// a reader clamped it to the data: see Run.ClampOpenStages).
	Open bool `json:"-"`
}

// Event is a named instant (engine_started, engine_ready, engine_exited,
// memory_released, ...).
type Event struct {
	Name string  `json:"name"`
	T    float64 `json:"t"`
}

// PowerSample is one row of power.csv: one device at one instant.
// EnergyJ is the device's cumulative energy counter in joules; HasEnergy is
// false when the source has none (empty cell). MemUsedBytes is -1 when
// unknown (empty cell).
type PowerSample struct {
	T            float64
	Device       string
	PowerW       float64
	EnergyJ      float64
	HasEnergy    bool
	MemUsedBytes int64
}

// Request is one line of requests.jsonl.
type Request struct {
	ID              string  `json:"id" expr:"id"`
	Phase           string  `json:"phase" expr:"phase"`
	PromptID        string  `json:"prompt_id,omitempty" expr:"prompt_id"`
	SentAt          float64 `json:"sent_at" expr:"sent_at"`
	FirstTokenAt    float64 `json:"first_token_at,omitempty" expr:"first_token_at"`
	DoneAt          float64 `json:"done_at,omitempty" expr:"done_at"`
	PromptTokens    int     `json:"prompt_tokens,omitempty" expr:"prompt_tokens"`
	OutputTokens    int     `json:"output_tokens" expr:"output_tokens"`
	ReasoningTokens int     `json:"reasoning_tokens,omitempty" expr:"reasoning_tokens"`
	// CachedPromptTokens are the prompt tokens the engine reported taken
	// from its prefix cache (vLLM/SGLang usage.prompt_tokens_details.
	// cached_tokens, llama.cpp timings.cache_n); absent when it reports none.
	CachedPromptTokens int `json:"cached_prompt_tokens,omitempty" expr:"cached_prompt_tokens"`
	// ConversationID and Turn (1-based) place a request of a multi-turn
	// workload in its conversation; absent for single-turn requests.
	ConversationID string `json:"conversation_id,omitempty" expr:"conversation_id"`
	Turn           int    `json:"turn,omitempty" expr:"turn"`
	// FirstAnswerAt is when the first answer (not reasoning) text arrived,
	// recorded when the engine streamed reasoning text before it.
	FirstAnswerAt float64 `json:"first_answer_at,omitempty" expr:"first_answer_at"`
	// TokensSource is "usage" (API usage.completion_tokens), "engine"
	// (an engine's own counter, e.g. Ollama eval_count) or "estimate"
	// (max(1, output_chars/4)).
	TokensSource string `json:"tokens_source,omitempty" expr:"tokens_source"`
	OutputChars  int    `json:"output_chars,omitempty" expr:"output_chars"`
	OK           bool   `json:"ok" expr:"ok"`
	Error        string `json:"error,omitempty" expr:"error"`
	// TokenTimes are arrival times of output chunks; TokenCounts, when
	// present, has the same length and says how many tokens each chunk held
	// (1 each when absent).
	TokenTimes  []float64 `json:"token_times,omitempty" expr:"token_times"`
	TokenCounts []int     `json:"token_counts,omitempty" expr:"token_counts"`
	// EngineTimings are engine-reported numbers as the engine named them
	// (Ollama: eval_count, eval_duration, prompt_eval_count,
	// prompt_eval_duration, load_duration, total_duration in ns; llama.cpp:
	// predicted_per_second, ...).
	EngineTimings map[string]float64 `json:"engine_timings,omitempty" expr:"engine_timings"`
	MaxTokens     int                `json:"max_tokens,omitempty" expr:"max_tokens"`
	Engine        string             `json:"engine,omitempty" expr:"engine"`
	// DistinctChunks is the number of distinct texts among the output
	// chunks (up to 32: 32 means 32 or more), recorded by the streaming
	// client when the response had at least 8 content chunks; 0 (absent)
	// otherwise and in archives written before it existed.
	DistinctChunks int `json:"distinct_chunks,omitempty" expr:"distinct_chunks"`
	// FirstTokenBounded says that the first token's time is an upper bound
	// rather than its own arrival: the client read it together with later
	// data, which the kernel may have merged with it (keeping the later
	// stamp). FirstTokenBoundS is then the width of the interval it lies
	// in, from the later of sent_at and the client's last empty read of
	// the connection to first_token_at. BoundedChunks counts the text
	// chunks whose time is such a bound. All three are absent when every
	// time is exact, and in archives written before they existed.
	FirstTokenBounded bool    `json:"first_token_bounded,omitempty" expr:"first_token_bounded"`
	FirstTokenBoundS  float64 `json:"first_token_bound_s,omitempty" expr:"first_token_bound_s"`
	BoundedChunks     int     `json:"bounded_chunks,omitempty" expr:"bounded_chunks"`
	// Synthetic marks a request that was not sent: an imported recording
	// without per-request data stands for its formal window with one
	// synthetic request carrying the token count the user gave. Its times
	// are the window's, not a request's, so latency metrics leave it out.
	Synthetic bool `json:"synthetic,omitempty" expr:"synthetic"`
	// SingleTokenChunks says that each chunk of TokenTimes held one token:
	// the server's count (tokens_source usage or engine) equalled the
	// chunks, so TokenCounts, all 1, is not written. Absent (false) when
	// the count differs, is an estimate, or the request failed, and in
	// archives written before it existed: a chunk may then hold several.
	SingleTokenChunks bool `json:"single_token_chunks,omitempty" expr:"single_token_chunks"`
	// packed locates TokenTimes, exactly, in about 3 bytes a time instead
	// of 8 (in memory or in a temporary file), once they are packed
	// (TokenTimes is then nil): see packed.go.
	packed packedRef
}

// EngineMetric is one line of engine_metrics.jsonl: one Prometheus sample
// scraped from the engine's /metrics side path.
type EngineMetric struct {
	T      float64           `json:"t"`
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Value  float64           `json:"value"`
}

// Result is one evaluated entry of results.json.
type Result struct {
	Kind  string `json:"kind"` // metric | derived | check
	Value any    `json:"value"`
	// Label is a metric's name for people (the profile's label:); the
	// key of Values stays its identifier.
	Label       string `json:"label,omitempty"`
	Unit        string `json:"unit,omitempty"`
	Description string `json:"description,omitempty"`
	Format      string `json:"format,omitempty"`
	// Boundary, for an energy or power metric, is what its power covers:
	// a domain ("gpu", "cpu", "dram", "node") or several joined by "+"
	// ("cpu+dram"); empty for other values.
	Boundary string `json:"boundary,omitempty"`
	// Note says why a value is absent (not applicable) or qualifies it.
	Note string `json:"note,omitempty"`
	// For checks.
	Severity string `json:"severity,omitempty"`
	Passed   *bool  `json:"passed,omitempty"`
	Message  string `json:"message,omitempty"`
	// Invalidates, for a check, names the figures (metrics) its failure
	// invalidates, or is ["all"] (the whole run); absent: the severity's
	// default (Invalidated).
	Invalidates []string `json:"invalidates,omitempty"`
}

// InvalidatesAll is the Invalidates of a check whose failure invalidates
// the whole run.
const InvalidatesAll = "all"

// Invalidated is what a failure of the check r invalidates: its declared
// Invalidates, else the whole run for severity exclude or fail and
// nothing for warn.
func (r Result) Invalidated() []string {
	if len(r.Invalidates) > 0 {
		return r.Invalidates
	}
	if r.Severity == "exclude" || r.Severity == "fail" {
		return []string{InvalidatesAll}
	}
	return nil
}

// InvalidatesMetric reports whether a failure of the check r invalidates
// the metric name (or the whole run).
func (r Result) InvalidatesMetric(name string) bool {
	for _, v := range r.Invalidated() {
		if v == InvalidatesAll || v == name {
			return true
		}
	}
	return false
}

// Results is results.json.
type Results struct {
	FormatVersion int               `json:"format_version"`
	RunID         string            `json:"run_id"`
	Simulated     bool              `json:"simulated"`
	Profile       ProfileRef        `json:"profile"`
	Excluded      bool              `json:"excluded"`
	ExcludeReason string            `json:"exclude_reason,omitempty"`
	Order         []string          `json:"order"`
	Values        map[string]Result `json:"values"`
}

// Run is a whole archive held in memory.
type Run struct {
	Dir           string
	Meta          Meta
	Power         []PowerSample
	Requests      []Request
	EngineMetrics []EngineMetric
	// Results is nil when results.json is absent.
	Results *Results
	// times is the temporary file the requests' packed token times were
	// written to (archive.LoadDataPacked), nil when none: CloseTimes.
	times *TimesStore
}

// StageByName returns the first stage with the given name.
func (m *Meta) StageByName(name string) (Stage, bool) {
	for _, s := range m.Stages {
		if s.Name == name {
			return s, true
		}
	}
	return Stage{}, false
}

// EventByName returns the time of the first event with the given name.
func (m *Meta) EventByName(name string) (float64, bool) {
	for _, e := range m.Events {
		if e.Name == name {
			return e.T, true
		}
	}
	return 0, false
}

// Values of run.json that readers act on: the telemetry source of power
// played back from a recording, and the engine kind of joulebench's
// simulator (engines/sim and telemetry/replay write them; their tests hold
// them equal).
const (
	ReplayedSource  = "replay"
	SimulatorEngine = "sim"
)

// PowerReplayed reports whether the run's power was played back from a
// recording: real power, but not the run's own.
func (m *Meta) PowerReplayed() bool { return m.Telemetry.Source == ReplayedSource }

// SimulatedEngine reports whether the run's engine was joulebench's
// simulator.
func (m *Meta) SimulatedEngine() bool { return m.Engine.Kind == SimulatorEngine }

// SimHardware is the simulator's hardware model the run ran on, from
// engine.extra.sim_hardware: "GPU/MODEL" of a hardware preset, "toy" for
// the default model, "" when the archive does not say (a real engine, or
// a simulated run of an earlier writer).
func (m *Meta) SimHardware() string {
	if !m.SimulatedEngine() {
		return ""
	}
	s, _ := m.Engine.Extra["sim_hardware"].(string)
	return s
}

// NameOf is what people read for the value name: its label, else the
// name itself.
func (r Result) NameOf(name string) string {
	if r.Label != "" {
		return r.Label
	}
	return name
}
