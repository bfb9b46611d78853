package runflags

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/runner"
)

// Settings are everything a run's flags set, typed: the serialisable part
// of a runner.Spec (no hooks, registries or writers), plus how its results
// are shown. Build makes them from a command line; Spec turns them into
// the runner.Spec the run command runs. Encode writes them without their
// secrets (the fields tagged json:"-", Telemetry's secret flags), which a
// run given --spec takes from its own flags and environment (ReadSecrets).
type Settings struct {
	// Version is the spec file's format (FormatVersion).
	Version int `json:"version"`
	// Profile is the profile name or file (the run command's argument).
	Profile string `json:"profile"`
	// Sets and Labels are the --set and --label values as given.
	Sets        []string `json:"sets"`
	Labels      []string `json:"labels"`
	ModelParams string   `json:"model_params"`
	// Engines are the --engine kinds; EngineGiven says whether the kind
	// was set at all (flag, configuration or environment).
	Engines     []string `json:"engines"`
	EngineGiven bool     `json:"engine_given"`

	Models    []string `json:"models"`
	Seed      int64    `json:"seed"`
	APIKey    string   `json:"-"`
	EngineURL string   `json:"-"`
	EngineAPI string   `json:"engine_api"`
	// Deployment is the --deployment file of several engine parts.
	Deployment    string   `json:"deployment"`
	EngineBins    []string `json:"engine_bins"`
	ImageDigest   string   `json:"image_digest"`
	EngineArgs    []string `json:"-"`
	EngineEnv     []string `json:"-"`
	ModelFile     string   `json:"model_file"`
	Port          int      `json:"port"`
	TP            int      `json:"tp"`
	MaxModelLen   int      `json:"max_model_len"`
	Slots         int      `json:"slots"`
	Revision      string   `json:"revision"`
	EngineVersion string   `json:"engine_version"`
	Precision     string   `json:"precision"`
	Thinking      string   `json:"thinking"`
	// ScrapeInterval and MetricFamilies configure the /metrics side path;
	// the ...Set fields say whether they were set (flag, configuration or
	// environment).
	ScrapeInterval    time.Duration `json:"scrape_interval_ns"`
	ScrapeIntervalSet bool          `json:"scrape_interval_set"`
	MetricFamilies    []string      `json:"metrics_families"`
	MetricFamiliesSet bool          `json:"metrics_families_set"`
	// EngineSettings are the engine-specific options the engines'
	// descriptors declare, by flag.
	EngineSettings engines.Settings `json:"engine_settings"`
	// Telemetry are --telemetry and every power source's flags, by flag
	// name: a string, bool, float64 or []string as the flag's type.
	Telemetry map[string]any `json:"telemetry"`

	Dataset             string `json:"dataset"`
	DatasetFormat       string `json:"dataset_format"`
	RandomInputLen      int    `json:"random_input_len"`
	RandomOutputLen     int    `json:"random_output_len"`
	RandomRangeRatio    Float  `json:"random_range_ratio"`
	RandomRangeRatioSet bool   `json:"random_range_ratio_set"`
	DatasetSHA256       string `json:"dataset_sha256"`
	HFEndpoint          string `json:"-"`

	Out        string `json:"out"`
	Quick      bool   `json:"quick"`
	NoProgress bool   `json:"no_progress"`
	Runs       int    `json:"runs"`

	RequestRate    Float `json:"request_rate"`
	Burstiness     Float `json:"burstiness"`
	MaxConcurrency int   `json:"max_concurrency"`
	NumPrompts     int   `json:"num_prompts"`

	Format     string `json:"format"`
	All        bool   `json:"all"`
	OutputFile string `json:"output_file"`
	Wide       bool   `json:"wide"`

	ExtraBody      string `json:"-"`
	Sweep          string `json:"sweep"`
	CooldownIdleW  Float  `json:"cooldown_idle_w"`
	SteadyRequests bool   `json:"steady_requests"`

	Baseline      string `json:"baseline"`
	BaselineForce bool   `json:"baseline_force"`

	// GPUSettingValues are the GPU settings' flags
	// (record.GPUSettingsTable), their JSON keys gpu_power_limit, ...
	record.GPUSettingValues

	// LogLevel, LogFormat, SecretNames and ProfilePaths are the global
	// flags a run takes.
	LogLevel     string   `json:"log_level"`
	LogFormat    string   `json:"log_format"`
	SecretNames  []string `json:"secret_names"`
	ProfilePaths []string `json:"profile_paths"`

	// Changed are the flags given on the command line, sorted: every one
	// must apply to the engine it configures (runner.Spec.Changed), and
	// the load flags map onto the profile only when given.
	Changed []string `json:"changed"`
}

// Float is a number flag's value; JSON writes an infinity (--request-rate
// inf) or NaN as the string "inf", "-inf" or "nan", which it cannot hold
// as a number.
type Float float64

// MarshalJSON writes x as a number, or a string when it is not finite.
func (x Float) MarshalJSON() ([]byte, error) {
	f := float64(x)
	switch {
	case math.IsNaN(f):
		return []byte(`"nan"`), nil
	case math.IsInf(f, 1):
		return []byte(`"inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-inf"`), nil
	}
	return json.Marshal(f)
}

// UnmarshalJSON reads a number, or "inf", "-inf" or "nan".
func (x *Float) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		switch s {
		case "inf":
			*x = Float(math.Inf(1))
		case "-inf":
			*x = Float(math.Inf(-1))
		case "nan":
			*x = Float(math.NaN())
		default:
			return fmt.Errorf("%q is not a number (a number, inf, -inf or nan)", s)
		}
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*x = Float(f)
	return nil
}

// FormatVersion is the version of the spec file Encode writes.
const FormatVersion = 1

// Values are the flags' values as the run command reads them: the
// command line over the configuration file and the environment (a
// *viper.Viper bound to the flags), or the command line alone (Flags).
type Values interface {
	GetString(key string) string
	GetStringSlice(key string) []string
	GetBool(key string) bool
	GetInt(key string) int
	GetInt64(key string) int64
	GetFloat64(key string) float64
	GetDuration(key string) time.Duration
	IsSet(key string) bool
}

// field is a flag and the Settings field it sets.
type field struct {
	flag string
	ptr  any // *string, *[]string, *bool, *int, *int64, *float64, *time.Duration
	// secret fields are never written to a spec file.
	secret bool
}

// fields maps every flag of s read through Values onto its field: one
// table, read by Build and written by Store.
func (s *Settings) fields() []field {
	fields := []field{
		{flag: "model-params", ptr: &s.ModelParams},
		{flag: "engine", ptr: &s.Engines},
		{flag: "model", ptr: &s.Models},
		{flag: "seed", ptr: &s.Seed},
		{flag: "api-key", ptr: &s.APIKey, secret: true},
		{flag: "engine-url", ptr: &s.EngineURL, secret: true},
		{flag: "engine-api", ptr: &s.EngineAPI},
		{flag: "deployment", ptr: &s.Deployment},
		{flag: "engine-bin", ptr: &s.EngineBins},
		{flag: "image-digest", ptr: &s.ImageDigest},
		{flag: "engine-arg", ptr: &s.EngineArgs, secret: true},
		{flag: "engine-env", ptr: &s.EngineEnv, secret: true},
		{flag: "model-file", ptr: &s.ModelFile},
		{flag: "port", ptr: &s.Port},
		{flag: "tp", ptr: &s.TP},
		{flag: "max-model-len", ptr: &s.MaxModelLen},
		{flag: "slots", ptr: &s.Slots},
		{flag: "revision", ptr: &s.Revision},
		{flag: "engine-version", ptr: &s.EngineVersion},
		{flag: "precision", ptr: &s.Precision},
		{flag: "thinking", ptr: &s.Thinking},
		{flag: "scrape-interval", ptr: &s.ScrapeInterval},
		{flag: "metrics-family", ptr: &s.MetricFamilies},
		{flag: "dataset", ptr: &s.Dataset},
		{flag: "dataset-format", ptr: &s.DatasetFormat},
		{flag: "random-input-len", ptr: &s.RandomInputLen},
		{flag: "random-output-len", ptr: &s.RandomOutputLen},
		{flag: "random-range-ratio", ptr: &s.RandomRangeRatio},
		{flag: "dataset-sha256", ptr: &s.DatasetSHA256},
		{flag: "hf-endpoint", ptr: &s.HFEndpoint, secret: true},
		{flag: "out", ptr: &s.Out},
		{flag: "quick", ptr: &s.Quick},
		{flag: "no-progress", ptr: &s.NoProgress},
		{flag: "runs", ptr: &s.Runs},
		{flag: "request-rate", ptr: &s.RequestRate},
		{flag: "burstiness", ptr: &s.Burstiness},
		{flag: "max-concurrency", ptr: &s.MaxConcurrency},
		{flag: "num-prompts", ptr: &s.NumPrompts},
		{flag: "format", ptr: &s.Format},
		{flag: "all", ptr: &s.All},
		{flag: "output-file", ptr: &s.OutputFile},
		{flag: "wide", ptr: &s.Wide},
		{flag: "extra-body", ptr: &s.ExtraBody, secret: true},
		{flag: "sweep", ptr: &s.Sweep},
		{flag: "cooldown-idle-w", ptr: &s.CooldownIdleW},
		{flag: "steady-requests", ptr: &s.SteadyRequests},
		{flag: "baseline", ptr: &s.Baseline},
		{flag: "baseline-force", ptr: &s.BaselineForce},
	}
	for _, st := range record.GPUSettingsTable() {
		fields = append(fields, field{flag: st.Flag, ptr: st.Value(&s.GPUSettingValues)})
	}
	return append(fields,
		field{flag: "log-level", ptr: &s.LogLevel},
		field{flag: "log-format", ptr: &s.LogFormat},
		field{flag: "secret-name", ptr: &s.SecretNames},
		field{flag: "profile-path", ptr: &s.ProfilePaths},
	)
}

// read sets the field from v.
func (fd field) read(v Values) {
	switch p := fd.ptr.(type) {
	case *string:
		*p = v.GetString(fd.flag)
	case *[]string:
		*p = orNil(v.GetStringSlice(fd.flag))
	case *bool:
		*p = v.GetBool(fd.flag)
	case *int:
		*p = v.GetInt(fd.flag)
	case *int64:
		*p = v.GetInt64(fd.flag)
	case *float64:
		*p = v.GetFloat64(fd.flag)
	case *Float:
		*p = Float(v.GetFloat64(fd.flag))
	case *time.Duration:
		*p = v.GetDuration(fd.flag)
	}
}

// value is the field's value.
func (fd field) value() any {
	switch p := fd.ptr.(type) {
	case *string:
		return *p
	case *[]string:
		return slices.Clone(*p)
	case *bool:
		return *p
	case *int:
		return *p
	case *int64:
		return *p
	case *float64:
		return *p
	case *Float:
		return float64(*p)
	case *time.Duration:
		return *p
	}
	return nil
}

func orNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// Build maps a run command line onto Settings: profile is its argument, f
// its parsed flags (--set and --label are read from f, the rest through
// v, as the run command always read them; which flags were given from f).
func Build(profile string, f *pflag.FlagSet, v Values, reg Registries) Settings {
	s := Settings{Version: FormatVersion, Profile: profile}
	for _, fd := range s.fields() {
		fd.read(v)
	}
	sets, _ := f.GetStringArray("set")
	labels, _ := f.GetStringArray("label")
	s.Sets, s.Labels = orNil(sets), orNil(labels)
	s.EngineGiven = v.IsSet("engine")
	s.ScrapeIntervalSet = v.IsSet("scrape-interval")
	s.MetricFamiliesSet = v.IsSet("metrics-family")
	s.RandomRangeRatioSet = v.IsSet("random-range-ratio")
	s.EngineSettings = reg.Engines.Settings(v.GetString)
	s.Telemetry = map[string]any{}
	telemetryFlags(reg).VisitAll(func(fl *pflag.Flag) { s.Telemetry[fl.Name] = telemetryValue(fl, v) })
	f.Visit(func(fl *pflag.Flag) { s.Changed = append(s.Changed, fl.Name) })
	return s
}

// telemetryFlags is a flag set of the power sources' flags alone.
func telemetryFlags(reg Registries) *pflag.FlagSet {
	f := pflag.NewFlagSet("telemetry", pflag.ContinueOnError)
	reg.Telemetry.Flags(f)
	return f
}

// telemetryValue reads a power source's flag through v by the flag's type.
func telemetryValue(fl *pflag.Flag, v Values) any {
	switch fl.Value.Type() {
	case "bool":
		return v.GetBool(fl.Name)
	case "float64":
		return v.GetFloat64(fl.Name)
	case "stringArray", "stringSlice":
		return orNil(v.GetStringSlice(fl.Name))
	}
	return v.GetString(fl.Name)
}

// Store writes every value of s with set, keyed by its flag's name (the
// power sources' flags and the engines' settings included): a run given
// --spec puts them where the rest of the command reads its flags.
func (s Settings) Store(set func(flag string, value any)) {
	for _, fd := range s.fields() {
		set(fd.flag, fd.value())
	}
	set("set", slices.Clone(s.Sets))
	set("label", slices.Clone(s.Labels))
	for k, v := range s.EngineSettings {
		set(k, v)
	}
	for k, v := range s.Telemetry {
		set(k, v)
	}
}

// changed reports whether the flag was given on the command line.
func (s Settings) changed(flag string) bool { return slices.Contains(s.Changed, flag) }

// Given marks flag as given on the command line (a campaign's cooldown
// level, set on the run's Settings).
func (s *Settings) Given(flag string) {
	if !s.changed(flag) {
		s.Changed = append(s.Changed, flag)
		slices.Sort(s.Changed)
	}
}

// Spec maps s onto the run library's specification, without the hooks
// (the caller's: the registry, the power source, progress, results).
func (s Settings) Spec() (runner.Spec, error) {
	sets, err := runner.RunsSet(slices.Clone(s.Sets), s.Runs, s.changed("runs"))
	if err != nil {
		return runner.Spec{}, err
	}
	replay, _ := s.Telemetry["replay"].(string)
	return runner.Spec{
		Profile:     s.Profile,
		Sets:        sets,
		Labels:      slices.Clone(s.Labels),
		ModelParams: s.ModelParams,
		Engines:     slices.Clone(s.Engines),
		EngineGiven: s.EngineGiven,
		Deployment:  s.Deployment,
		Engine: runner.EngineOptions{
			URL: s.EngineURL,
			API: s.EngineAPI,
			Common: engines.Common{
				Args:        slices.Clone(s.EngineArgs),
				ModelFile:   s.ModelFile,
				Revision:    s.Revision,
				Port:        s.Port,
				TP:          s.TP,
				MaxModelLen: s.MaxModelLen,
				Slots:       s.Slots,
				Seed:        s.Seed,
			},
			Bins:              slices.Clone(s.EngineBins),
			EnvVars:           slices.Clone(s.EngineEnv),
			Models:            slices.Clone(s.Models),
			EngineVersion:     s.EngineVersion,
			Precision:         s.Precision,
			Thinking:          s.Thinking,
			Settings:          cloneSettings(s.EngineSettings),
			APIKey:            s.APIKey,
			ScrapeInterval:    s.ScrapeInterval,
			ScrapeIntervalSet: s.ScrapeIntervalSet,
			MetricFamilies:    slices.Clone(s.MetricFamilies),
			MetricFamiliesSet: s.MetricFamiliesSet,
		},
		Dataset: runner.DatasetOptions{
			Name:                s.Dataset,
			Format:              s.DatasetFormat,
			RandomInputLen:      s.RandomInputLen,
			RandomOutputLen:     s.RandomOutputLen,
			RandomRangeRatio:    float64(s.RandomRangeRatio),
			RandomRangeRatioSet: s.RandomRangeRatioSet,
			SHA256:              s.DatasetSHA256,
			HFEndpoint:          s.HFEndpoint,
		},
		Load: runner.LoadOptions{
			Rate: float64(s.RequestRate), Burstiness: float64(s.Burstiness), MaxConcurrency: s.MaxConcurrency, NumPrompts: s.NumPrompts,
			RateSet: s.changed("request-rate"), BurstinessSet: s.changed("burstiness"),
			MaxConcurrencySet: s.changed("max-concurrency"), NumPromptsSet: s.changed("num-prompts"),
		},
		Out:            s.Out,
		Quick:          s.Quick,
		Sweep:          s.Sweep,
		CooldownIdleW:  float64(s.CooldownIdleW),
		SteadyRequests: s.SteadyRequests,
		Format:         s.Format,
		OutputFile:     s.OutputFile,
		ExtraBody:      s.ExtraBody,
		ImageDigest:    s.ImageDigest,
		Replay:         replay,
		Baseline:       s.Baseline,
		Changed:        s.changed,
		GPU:            runner.GPUOptions{GPUSettingValues: s.GPUSettingValues},
	}, nil
}

func cloneSettings(m engines.Settings) engines.Settings {
	if m == nil {
		return nil
	}
	out := make(engines.Settings, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Flags reads a parsed flag set as Values: the command line and the
// flags' defaults, without a configuration file or environment (a
// campaign loaded without the run command's configuration).
type Flags struct{ F *pflag.FlagSet }

var _ Values = Flags{}

func (f Flags) str(key string) string {
	if fl := f.F.Lookup(key); fl != nil {
		return fl.Value.String()
	}
	return ""
}

// GetString is the flag's value as text.
func (f Flags) GetString(key string) string { return f.str(key) }

// GetStringSlice is a list flag's values (a scalar's value alone).
func (f Flags) GetStringSlice(key string) []string {
	fl := f.F.Lookup(key)
	if fl == nil {
		return nil
	}
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		return sv.GetSlice()
	}
	return []string{fl.Value.String()}
}

// GetBool is a boolean flag's value.
func (f Flags) GetBool(key string) bool { b, _ := strconv.ParseBool(f.str(key)); return b }

// GetInt is an integer flag's value.
func (f Flags) GetInt(key string) int { n, _ := strconv.Atoi(f.str(key)); return n }

// GetInt64 is an integer flag's value.
func (f Flags) GetInt64(key string) int64 { n, _ := strconv.ParseInt(f.str(key), 10, 64); return n }

// GetFloat64 is a number flag's value.
func (f Flags) GetFloat64(key string) float64 { x, _ := strconv.ParseFloat(f.str(key), 64); return x }

// GetDuration is a duration flag's value.
func (f Flags) GetDuration(key string) time.Duration {
	d, _ := time.ParseDuration(f.str(key))
	return d
}

// IsSet reports whether the flag was given.
func (f Flags) IsSet(key string) bool { return f.F.Changed(key) }
