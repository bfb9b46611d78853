// Package campaign is a benchmark campaign as data: one YAML file that
// names a profile, a matrix of axes (engines, models, scenarios, loads,
// profile parameters, repetitions) with exclusions, and where the archives
// go. It expands the matrix into runs with stable ids, tells which runs are
// done from their archives, and runs the rest one by one as ordinary
// `joulebench run` processes, here (Local) or as Slurm jobs (Slurm).
//
// A campaign has no scheduler of its own: runs are exclusive and cold
// started, one after the other locally; on Slurm each run is one job and
// Slurm decides when it starts.
package campaign

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/internal/boundedfile"
	"github.com/joulebench/joulebench/internal/yamlstrict"
	"github.com/joulebench/joulebench/runner/runflags"
	"github.com/joulebench/joulebench/telemetry/gpusettings"
	"github.com/joulebench/joulebench/workflow"
)

// File is a campaign file.
type File struct {
	// Name names the campaign (a label of every run: campaign=NAME).
	Name string `yaml:"name"`
	// Description is free text.
	Description string `yaml:"description"`
	// Profile is a built-in profile name or a profile file (relative to
	// the campaign file).
	Profile string `yaml:"profile"`
	// Out is the campaign directory (relative to the campaign file): run
	// archives go to OUT/runs/<id>, the Slurm state and job scripts to OUT.
	// On Slurm it must be on a file system the nodes share.
	Out string `yaml:"out"`
	// Repetitions is how many times each configuration runs (default 1).
	Repetitions int `yaml:"repetitions"`
	// Matrix holds the axes; the runs are their cartesian product.
	Matrix Matrix `yaml:"matrix"`
	// Exclude lists combinations not to run: each entry maps axis names
	// (engine, model, scenario, load, or a parameter of set) to the value
	// name it matches; a run matching every entry of one item is left out.
	Exclude []map[string]string `yaml:"exclude"`
	// Args are extra `joulebench run` flags given to every run.
	Args []string `yaml:"args"`
	// Slurm configures --executor slurm.
	Slurm SlurmConfig `yaml:"slurm"`
	// Kubernetes configures --executor kubernetes (kubernetes.go).
	Kubernetes KubernetesConfig `yaml:"kubernetes"`
	// Search, when set, replaces the load axis by a search over the load
	// for each combination of the other axes (search.go).
	Search Search `yaml:"search"`
}

// Matrix is the axes of a campaign. An empty axis is one default value.
type Matrix struct {
	Engine   []Engine    `yaml:"engine"`
	Model    []Model     `yaml:"model"`
	Scenario []Scenario  `yaml:"scenario"`
	Load     []LoadLevel `yaml:"load"`
	// Set maps a profile parameter to the values it takes: each key is an
	// axis (--set key=value).
	Set map[string][]string `yaml:"set"`
	// GPUSettingAxes are the GPU settings' axes (record.GPUSettingsTable;
	// each value a flag's value, e.g. of --gpu-power-limit): the set axes
	// of their parameters' names.
	record.GPUSettingAxes `yaml:",inline"`
}

// Engine is a value of the engine axis: `--engine KIND` and its flags.
type Engine struct {
	Name string   `yaml:"name"` // default: kind
	Kind string   `yaml:"kind"`
	Args []string `yaml:"args"`
}

// Model is a value of the model axis.
type Model struct {
	Name string `yaml:"name"` // default: the last path element of id
	// ID is --model (a Hugging Face id, a path, an Ollama name).
	ID string `yaml:"id"`
	// Params is the total parameter count, e.g. 8e9 (--model-params; the
	// size groups of compare).
	Params string `yaml:"params"`
	// TP is the tensor-parallel size (--tp); the GPUs a Slurm job asks for.
	TP   int      `yaml:"tp"`
	Args []string `yaml:"args"`
}

// Scenario is a value of the scenario axis: a request set.
type Scenario struct {
	Name          string   `yaml:"name"`
	Dataset       string   `yaml:"dataset"`
	DatasetFormat string   `yaml:"dataset_format"`
	Args          []string `yaml:"args"`
}

// LoadLevel is a value of the load axis: profile parameters that set the load
// mode and concurrency (the profile must declare them), e.g.
// {name: c64, set: {concurrency: "64"}}.
type LoadLevel struct {
	Name string            `yaml:"name"`
	Set  map[string]string `yaml:"set"`
	Args []string          `yaml:"args"`
}

// SlurmConfig is the `slurm:` section.
type SlurmConfig struct {
	// Partition is sbatch --partition (empty: the cluster's default).
	Partition string `yaml:"partition"`
	// Time is sbatch --time, e.g. "02:00:00" (empty: the partition's).
	Time string `yaml:"time"`
	// GPUs says whether a job asks for GPUs: --gres from Gres with {tp}
	// replaced by the run's tensor parallelism. Unset: the runs that need
	// one do (an engine joulebench starts, not the simulator nor an
	// --engine-url server). A cluster without GPU gres sets it false.
	GPUs *bool `yaml:"gpus"`
	// Gres is the GPU request template (default "gpu:{tp}").
	Gres string `yaml:"gres"`
	// Exclusive asks for a whole node (default true).
	Exclusive *bool `yaml:"exclusive"`
	// Options are extra sbatch options, one per item (--account=abc).
	Options []string `yaml:"options"`
	// Joulebench is the joulebench executable on the nodes (default: this
	// one's path).
	Joulebench string `yaml:"joulebench"`
	// Poll is how often squeue is asked (default 10s).
	Poll workflow.Duration `yaml:"poll"`
	// Nodes, when set, makes each run one job over that many nodes (a
	// task per node): a power agent on every node (`joulebench agent`),
	// the run on the first node reading them all (--telemetry agent).
	// Unset: a job on one node, the run reading its own node's power.
	Nodes int `yaml:"nodes"`
	// Agent configures the agents of a job over several nodes.
	Agent SlurmAgent `yaml:"agent"`
	// Parts are the engine parts a job over several nodes starts, each on
	// its node (slurmnodes.go); the run benchmarks them as the external
	// parts of a --deployment file the job writes. Only with Nodes.
	Parts []SlurmPart `yaml:"parts"`
	// Entry names the part requests go to; required with several parts.
	Entry string `yaml:"entry"`
}

// SlurmPart is one item of `slurm.parts:`: an engine part the job starts
// on one of its nodes with its own command line.
type SlurmPart struct {
	// Name names the part (a label, each part's own).
	Name string `yaml:"name"`
	// Role is prefill, decode, router or replica.
	Role string `yaml:"role"`
	// Node is the node it runs on, from 1 (the run's node) to slurm.nodes.
	Node int `yaml:"node"`
	// Port is the TCP port the part's server listens on, on its node.
	Port int `yaml:"port"`
	// Command is the part's command line (the engine's own, e.g. `vllm
	// serve MODEL --port 8100 --kv-transfer-config ...`), run by srun on
	// its node.
	Command []string `yaml:"command"`
	// Kind and API say what the server is, as a deployment's external
	// part does ("": any OpenAI-compatible server).
	Kind string `yaml:"kind"`
	API  string `yaml:"api"`
	// Devices are the IDs of its node's devices the part owns, as that
	// node's agent lists them (gpu0, ...).
	Devices []string `yaml:"devices"`
	// Env is added to the part's environment (its srun step's), never
	// to a command line.
	Env map[string]string `yaml:"env"`
}

// SlurmAgent is the `slurm.agent:` section: how the power agent on each
// node of a job over several nodes (slurm.nodes) is started.
type SlurmAgent struct {
	// Port is the TCP port each agent listens on, at its node's name
	// (default DefaultAgentPort).
	Port int `yaml:"port"`
	// Telemetry is the agent's power source on its node (--telemetry of
	// `joulebench agent`; default nvml).
	Telemetry string `yaml:"telemetry"`
	// Args are that source's flags (e.g. --dcgm-url URL), as `run` takes
	// them.
	Args []string `yaml:"args"`
}

// DefaultAgentPort is the port of a node's agent when slurm.agent.port is
// not set.
const DefaultAgentPort = 4780

// MaxNodes bounds slurm.nodes: a job script has a launch line per node.
const MaxNodes = 1024

// DefaultAgentTelemetry is the agent's power source when
// slurm.agent.telemetry is not set: the node's GPUs through NVML.
const DefaultAgentTelemetry = "nvml"

// Campaign is a loaded, validated campaign file.
type Campaign struct {
	File
	// Path is the campaign file as given.
	Path string
	// Dir is the campaign directory (Out resolved against the file's
	// directory).
	Dir string
	// ProfileRef is what `run` gets: a built-in name or a file path
	// resolved against the campaign file's directory.
	ProfileRef string
	// engines are the engine kinds runs may name (Loader.Engines).
	engines *engines.Registry
	// specs builds and keeps each run's settings (Loader.Settings).
	specs *specBuilder
}

// registry is the campaign's engine registry: the loader's, else the
// built-in engines.
func (c *Campaign) registry() *engines.Registry {
	if c.engines != nil {
		return c.engines
	}
	return all.Registry()
}

func (s SlurmConfig) exclusive() bool { return s.Exclusive == nil || *s.Exclusive }

func (s SlurmConfig) gres() string {
	if s.Gres == "" {
		return "gpu:{tp}"
	}
	return s.Gres
}

func (a SlurmAgent) port() int {
	if a.Port == 0 {
		return DefaultAgentPort
	}
	return a.Port
}

func (a SlurmAgent) telemetry() string {
	if a.Telemetry == "" {
		return DefaultAgentTelemetry
	}
	return a.Telemetry
}

func (s SlurmConfig) poll() time.Duration {
	if s.Poll.D() <= 0 {
		return 10 * time.Second
	}
	return s.Poll.D()
}

// LooksLikeCampaign reports whether src is a campaign file rather than a
// profile: a mapping with a top-level `matrix` key.
func LooksLikeCampaign(src []byte) bool {
	var doc yaml.Node
	if yaml.Unmarshal(src, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return false
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "matrix" {
			return true
		}
	}
	return false
}

// ReadFile loads a campaign file.
func ReadFile(path string) (*Campaign, error) { return Loader{}.ReadFile(path) }

// Loader loads campaign files with the checks only the caller can make.
type Loader struct {
	// CheckArgs, when set, checks one list of `run` flags of the campaign
	// (a matrix value's args or the top-level args) the way the run
	// command would parse them: unknown flags, missing or invalid values.
	// Its error is reported at the list's position.
	CheckArgs func(args []string) error
	// Engines are the engine kinds the runs may name and the flags each
	// takes, as the run command knows them (nil: the built-in engines).
	Engines *engines.Registry
	// Settings, when set, builds the settings of a run of profile with the
	// run flags args as the run command builds its own (its configuration
	// file and environment included); nil: from the flags alone
	// (runflags.Parse).
	Settings func(profile string, args []string) (runflags.Settings, error)
}

// ReadFile loads a campaign file: a regular file of at most
// boundedfile.MaxProfileBytes.
func (ld Loader) ReadFile(path string) (*Campaign, error) {
	src, err := boundedfile.Read(path, "campaign file", boundedfile.MaxProfileBytes)
	if err != nil {
		return nil, err
	}
	return ld.Load(src, path)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Load parses and validates a campaign. Unknown keys, wrong types and
// invalid values are errors at their positions (`file:line:col: where:
// what`), all reported together as a workflow.ErrorList.
func Load(src []byte, path string) (*Campaign, error) { return Loader{}.Load(src, path) }

// Load parses and validates a campaign (see the function Load), with the
// loader's checks of the run flags.
func (ld Loader) Load(src []byte, path string) (*Campaign, error) {
	d := yamlstrict.New(path)
	root, ok := d.Parse(src)
	if !ok {
		return nil, d.Err()
	}
	c := &Campaign{Path: path, engines: ld.Engines, specs: &specBuilder{build: ld.Settings}}
	d.Strict(root, &c.File, "")
	e := &errSink{d: d}
	if d.OK() {
		c.validate(e, root)
		c.validateScriptValues(e, root)
		c.validateSearch(e, root)
		c.validateSize(e, root)
		c.validateArgs(e, root, ld.CheckArgs)
		c.validateNodeArgs(e, root, ld.CheckArgs)
	}
	if err := e.err(); err != nil {
		return nil, err
	}

	base := filepath.Dir(path)
	c.Dir = c.Out
	if !filepath.IsAbs(c.Dir) {
		c.Dir = filepath.Join(base, c.Dir)
	}
	c.ProfileRef = c.Profile
	if strings.ContainsAny(c.Profile, `/\`) || strings.HasSuffix(c.Profile, ".yaml") || strings.HasSuffix(c.Profile, ".yml") {
		if !filepath.IsAbs(c.Profile) {
			c.ProfileRef = filepath.Join(base, c.Profile)
		}
	}
	// Every run's settings, built now: flags that no run could take are
	// refused before anything runs.
	c.validateSpecs(e, root)
	if err := e.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// validate checks what the types cannot, with the position of each value,
// and fills defaults (names, repetitions): a validator per section.
func (c *Campaign) validate(d *errSink, root *yaml.Node) {
	at := func(path ...string) *yaml.Node { return yamlstrict.FirstNode(yamlstrict.NodeAt(root, path...), root) }
	if !nameRE.MatchString(c.Name) {
		d.Errorf(at("name"), "name", "required: letters, digits, '.', '_' or '-' (a label of every run), got %q", c.Name)
	}
	if strings.TrimSpace(c.Profile) == "" {
		d.Errorf(at("profile"), "profile", "required: a built-in profile name or a profile file")
	}
	if strings.TrimSpace(c.Out) == "" {
		d.Errorf(at("out"), "out", "required: the campaign directory (archives go to OUT/runs/<id>)")
	}
	if yamlstrict.NodeAt(root, "repetitions") == nil {
		c.Repetitions = 1
	} else if c.Repetitions < 1 {
		d.Errorf(at("repetitions"), "repetitions", "must be at least 1, got %d", c.Repetitions)
	}
	c.validateEngines(d, at)
	c.validateModels(d, at)
	c.validateScenariosAndLoads(d, at)
	c.foldGPUAxes(d, at)
	c.validateSet(d, at)
	c.validateExclude(d, at)
	c.validateSlurm(d, at)
	c.validateNodes(d, root)
	c.validateKubernetes(d, at)
}

// validateAxisNames checks the names of an axis's n values: each a label,
// none twice.
func validateAxisNames(d *errSink, at func(path ...string) *yaml.Node, axis string, n int, name func(i int) string) {
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		nm := name(i)
		where := fmt.Sprintf("matrix.%s[%d]", axis, i)
		if !nameRE.MatchString(nm) {
			d.Errorf(at("matrix", axis, strconv.Itoa(i)), where, "name %q: letters, digits, '.', '_' or '-'", nm)
		}
		if seen[nm] {
			d.Errorf(at("matrix", axis, strconv.Itoa(i)), where, "duplicate name %q", nm)
		}
		seen[nm] = true
	}
}

// validateEngines checks matrix.engine: known kinds, names (default: the
// kind).
func (c *Campaign) validateEngines(d *errSink, at func(path ...string) *yaml.Node) {
	reg := c.registry()
	kinds := reg.Kinds()
	for i := range c.Matrix.Engine {
		e := &c.Matrix.Engine[i]
		if e.Kind == "" {
			d.Errorf(at("matrix", "engine", strconv.Itoa(i)), fmt.Sprintf("matrix.engine[%d]", i), "kind is required (%s)", strings.Join(kinds, ", "))
		} else if _, ok := reg.Lookup(e.Kind); !ok {
			d.Errorf(at("matrix", "engine", strconv.Itoa(i), "kind"), fmt.Sprintf("matrix.engine[%d].kind", i), "unknown engine kind %q (known: %s)", e.Kind, strings.Join(kinds, ", "))
		}
		if e.Name == "" {
			e.Name = e.Kind
		}
	}
	validateAxisNames(d, at, "engine", len(c.Matrix.Engine), func(i int) string { return c.Matrix.Engine[i].Name })
}

// validateModels checks matrix.model: an id, parameters and tensor
// parallelism that are numbers, names (default: the id's last element).
func (c *Campaign) validateModels(d *errSink, at func(path ...string) *yaml.Node) {
	for i := range c.Matrix.Model {
		m := &c.Matrix.Model[i]
		where := fmt.Sprintf("matrix.model[%d]", i)
		if m.ID == "" && m.Name == "" {
			d.Errorf(at("matrix", "model", strconv.Itoa(i)), where, "id is required (the model to serve, --model)")
		}
		if m.Name == "" {
			m.Name = filepath.Base(m.ID)
		}
		if m.Params != "" {
			if v, err := strconv.ParseFloat(m.Params, 64); err != nil || v <= 0 {
				d.Errorf(at("matrix", "model", strconv.Itoa(i), "params"), where+".params", "expected a positive number such as 8e9, got %q", m.Params)
			}
		}
		if m.TP < 0 {
			d.Errorf(at("matrix", "model", strconv.Itoa(i), "tp"), where+".tp", "must be at least 1, got %d", m.TP)
		}
	}
	validateAxisNames(d, at, "model", len(c.Matrix.Model), func(i int) string { return c.Matrix.Model[i].Name })
}

// validateScenariosAndLoads checks the names of matrix.scenario (default:
// the dataset) and matrix.load (required).
func (c *Campaign) validateScenariosAndLoads(d *errSink, at func(path ...string) *yaml.Node) {
	for i := range c.Matrix.Scenario {
		s := &c.Matrix.Scenario[i]
		if s.Name == "" {
			s.Name = s.Dataset
		}
	}
	validateAxisNames(d, at, "scenario", len(c.Matrix.Scenario), func(i int) string { return c.Matrix.Scenario[i].Name })
	for i := range c.Matrix.Load {
		l := &c.Matrix.Load[i]
		if l.Name == "" {
			d.Errorf(at("matrix", "load", strconv.Itoa(i)), fmt.Sprintf("matrix.load[%d]", i), "name is required")
		}
	}
	validateAxisNames(d, at, "load", len(c.Matrix.Load), func(i int) string { return c.Matrix.Load[i].Name })
}

// foldGPUAxes makes matrix.gpu_power_limit_w and matrix.gpu_clocks set
// axes of the same names (runs get --set gpu_power_limit_w=V, which the
// run takes as its GPU settings with any profile), each value checked as
// the run will check it.
func (c *Campaign) foldGPUAxes(d *errSink, at func(path ...string) *yaml.Node) {
	for _, s := range record.GPUSettingsTable() {
		key, vals := s.Param, *s.Axis(&c.Matrix.GPUSettingAxes)
		if vals == nil {
			continue
		}
		if _, dup := c.Matrix.Set[key]; dup {
			d.Errorf(at("matrix", key), "matrix."+key, "given twice: here and as matrix.set.%s; keep one", key)
			continue
		}
		for i, v := range vals {
			err := (&gpusettings.Request{}).Parse(s, v)
			if err != nil || strings.TrimSpace(v) == "" {
				if err == nil {
					err = errors.New("empty value")
				}
				d.Errorf(at("matrix", key, strconv.Itoa(i)), fmt.Sprintf("matrix.%s[%d]", key, i), "%v", err)
			}
		}
		if c.Matrix.Set == nil {
			c.Matrix.Set = map[string][]string{}
		}
		c.Matrix.Set[key] = vals
	}
}

// validateSet checks matrix.set: parameters not named like an axis, each
// with values.
func (c *Campaign) validateSet(d *errSink, at func(path ...string) *yaml.Node) {
	for _, k := range sortedKeys(c.Matrix.Set) {
		if _, builtin := axisNames[k]; builtin || k == "rep" {
			d.Errorf(at("matrix", "set", k), "matrix.set."+k, "%q is an axis name: name the profile parameter differently", k)
		}
		if len(c.Matrix.Set[k]) == 0 {
			d.Errorf(at("matrix", "set", k), "matrix.set."+k, "needs at least one value")
		}
	}
}

// validateSlurm checks the slurm section's time limit, gres and options.
func (c *Campaign) validateSlurm(d *errSink, at func(path ...string) *yaml.Node) {
	if c.Slurm.Time != "" && !slurmTimeRE.MatchString(c.Slurm.Time) {
		d.Errorf(at("slurm", "time"), "slurm.time", "expected a Slurm time limit (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM:SS), got %q", c.Slurm.Time)
	}
	if c.Slurm.Gres != "" && !strings.Contains(c.Slurm.Gres, ":") {
		d.Errorf(at("slurm", "gres"), "slurm.gres", "expected a gres such as gpu:{tp} or gpu:h100:{tp}, got %q", c.Slurm.Gres)
	}
	for i, o := range c.Slurm.Options {
		if !strings.HasPrefix(o, "-") {
			d.Errorf(at("slurm", "options", strconv.Itoa(i)), fmt.Sprintf("slurm.options[%d]", i), "expected one sbatch option such as --account=abc, got %q", o)
		}
	}
}

// validateExclude checks that exclusions name known axes and values.
func (c *Campaign) validateExclude(d *errSink, at func(path ...string) *yaml.Node) {
	if len(c.Exclude) > MaxExclusions {
		d.Errorf(at("exclude"), "exclude", "%d exclusions, more than the %d a campaign may have: split the campaign", len(c.Exclude), MaxExclusions)
		return
	}
	values := c.axisValues()
	known := make(map[string]map[string]bool, len(values))
	for k, vs := range values {
		known[k] = make(map[string]bool, len(vs))
		for _, v := range vs {
			known[k][v] = true
		}
	}
	for i, ex := range c.Exclude {
		if d.full() {
			d.omit(len(ex))
			continue
		}
		where := fmt.Sprintf("exclude[%d]", i)
		if len(ex) == 0 {
			d.Errorf(at("exclude", strconv.Itoa(i)), where, "empty exclusion would exclude every run")
		}
		for _, k := range sortedKeys(ex) {
			vals, ok := known[k]
			if !ok {
				d.Errorf(at("exclude", strconv.Itoa(i), k), where+"."+k, "unknown axis %q (axes: %s)", k, someOf(sortedKeys(values)))
				continue
			}
			if !vals[ex[k]] {
				d.Errorf(at("exclude", strconv.Itoa(i), k), where+"."+k, "%q is no value of axis %s (values: %s)", ex[k], k, someOf(values[k]))
			}
		}
	}
}

var slurmTimeRE = regexp.MustCompile(`^(\d+|\d+:\d+|\d+:\d+:\d+|\d+-\d+|\d+-\d+:\d+|\d+-\d+:\d+:\d+)$`)

// axisNames are the built-in axes.
var axisNames = map[string]struct{}{"engine": {}, "model": {}, "scenario": {}, "load": {}}

// axisValues returns the value names of each axis (built-in and set).
func (c *Campaign) axisValues() map[string][]string {
	out := map[string][]string{}
	for _, e := range c.Matrix.Engine {
		out["engine"] = append(out["engine"], e.Name)
	}
	for _, m := range c.Matrix.Model {
		out["model"] = append(out["model"], m.Name)
	}
	for _, s := range c.Matrix.Scenario {
		out["scenario"] = append(out["scenario"], s.Name)
	}
	for _, l := range c.Matrix.Load {
		out["load"] = append(out["load"], l.Name)
	}
	for k, vs := range c.Matrix.Set {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
