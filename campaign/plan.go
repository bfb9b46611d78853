package campaign

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/internal/yamlstrict"
	"github.com/joulebench/joulebench/runner/runflags"
	telall "github.com/joulebench/joulebench/telemetry/all"
)

// Run is one configuration of a campaign: one `joulebench run`.
type Run struct {
	// ID is stable: a readable slug of the axis values and the first 8 hex
	// digits of the sha256 of the canonical configuration (Config), so
	// that the same configuration gets the same id in every expansion and
	// any change of it (a flag, a parameter) a new one.
	ID string
	// Axes maps each axis to the value name this run takes (rep: 1..N).
	Axes map[string]string
	// Rep is the repetition, 1-based.
	Rep int
	// TP is the tensor parallelism (GPUs of a Slurm job), at least 1.
	TP int
	// Config is the canonical configuration the id hashes: the profile
	// and the `run` arguments without the output directory.
	Config Config
	// Spec are the run's settings, built from Config's arguments at plan
	// time as the run command builds them (Loader.Settings): what the
	// run's process is given (`joulebench run --spec FILE`). SpecErr is
	// why they could not be built (Load refuses such a campaign).
	Spec    runflags.Settings
	SpecErr error
}

// Config is what makes a run what it is.
type Config struct {
	Profile string   `json:"profile"`
	Args    []string `json:"args"`
	Rep     int      `json:"rep"`
}

// Args returns the `joulebench run` command line (without the executable)
// that writes the run's archive to dir, with its flags: what the run's
// spec file holds (SpecArgs), as `sweep --dry-run` shows it.
func (r Run) Args(dir string) []string {
	out := []string{"run", r.Config.Profile, "--out", dir, "--no-progress"}
	return append(out, r.Config.Args...)
}

// SpecArgs returns the `joulebench run` command line (without the
// executable) that runs the run's spec file spec (WriteSpec), writing its
// archive to dir.
func (r Run) SpecArgs(spec, dir string) []string {
	return []string{"run", "--spec", spec, "--out", dir, "--no-progress"}
}

// SpecFile is where the spec of the run writing its archive to dir goes:
// beside the run's log, OUT/logs/<dir's name>.spec.json (absolute when
// it can be: a Slurm job reads it on its node).
func (c *Campaign) SpecFile(dir string) string {
	p := filepath.Join(c.Dir, "logs", filepath.Base(dir)+".spec.json")
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// SpecJSON is the run's spec file as WriteSpec writes it (no secrets),
// for an executor that carries it another way (a Kubernetes Job's
// environment).
func (c *Campaign) SpecJSON(r Run) ([]byte, error) {
	s, err := c.runSettings(r)
	if err != nil {
		return nil, err
	}
	b, err := runflags.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("run %s: spec: %w", r.ID, err)
	}
	return b, nil
}

// WriteSpec writes the settings s of run r to path, readable by the user
// alone and made anew (WriteFile keeps an existing file's mode). The
// secrets are not written (runflags.Encode): the run's process gets them
// through its environment (splitSecrets).
func WriteSpec(r Run, s runflags.Settings, path string) error {
	b, err := runflags.Marshal(s)
	if err != nil {
		return fmt.Errorf("run %s: spec: %w", r.ID, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("run %s: spec: %w", r.ID, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("run %s: spec: %w", r.ID, err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("run %s: spec: %w", r.ID, err)
	}
	return nil
}

// specBuilder builds the settings of runs (Loader.Settings, else
// runflags.Parse), each distinct profile and arguments once.
type specBuilder struct {
	build func(profile string, args []string) (runflags.Settings, error)
	mu    sync.Mutex
	done  map[string]builtSpec
}

type builtSpec struct {
	s   runflags.Settings
	err error
}

// settings are the settings of a run of profile with the run flags args.
func (c *Campaign) settings(profile string, args []string) (runflags.Settings, error) {
	b := c.specs
	if b == nil {
		b = &specBuilder{}
		c.specs = b
	}
	build := b.build
	if build == nil {
		reg := runflags.Registries{Engines: c.registry(), Telemetry: telall.Registry()}
		build = func(profile string, args []string) (runflags.Settings, error) {
			return runflags.Parse(profile, args, reg)
		}
	}
	key := profile + "\x00" + strings.Join(args, "\x00")
	b.mu.Lock()
	defer b.mu.Unlock()
	if got, ok := b.done[key]; ok {
		return got.s, got.err
	}
	s, err := build(profile, args)
	if b.done == nil {
		b.done = map[string]builtSpec{}
	}
	b.done[key] = builtSpec{s, err}
	return s, err
}

// runSettingsOf are the settings of a run of the campaign's profile with
// the run flags args. They name the profile as the run's process finds
// it: a file by its absolute path (a Slurm job runs elsewhere).
func (c *Campaign) runSettingsOf(args []string) (runflags.Settings, error) {
	profile := c.ProfileRef
	if isFile(profile) {
		if abs, err := filepath.Abs(profile); err == nil {
			profile = abs
		}
	}
	return c.settings(profile, args)
}

// validateSpecs builds the settings of every run of the plan (Expand)
// and reports those that cannot be built, at the matrix.
func (c *Campaign) validateSpecs(e *errSink, root *yaml.Node) {
	node := yamlstrict.FirstNode(yamlstrict.NodeAt(root, "matrix"), root)
	seen := map[string]bool{}
	for _, r := range c.Expand().Runs {
		if r.SpecErr == nil || e.full() {
			continue
		}
		if msg := r.SpecErr.Error(); !seen[msg] {
			seen[msg] = true
			e.Errorf(node, "matrix", "run %s: its run flags: %v", r.ID, r.SpecErr)
		}
	}
}

// Plan is the expanded campaign: runs in a stable order (axes in matrix
// order, repetitions innermost) and the combinations left out.
type Plan struct {
	Runs     []Run
	Excluded int
}

var slugUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Expand turns the matrix into runs.
func (c *Campaign) Expand() Plan {
	engines := c.Matrix.Engine
	if len(engines) == 0 {
		engines = []Engine{{}}
	}
	models := c.Matrix.Model
	if len(models) == 0 {
		models = []Model{{}}
	}
	scenarios := c.Matrix.Scenario
	if len(scenarios) == 0 {
		scenarios = []Scenario{{}}
	}
	loads := c.Matrix.Load
	if len(loads) == 0 {
		loads = []LoadLevel{{}}
	}
	setKeys := sortedKeys(c.Matrix.Set)
	// Every combination of the set axes, in key order, last key fastest.
	combos := [][]string{{}}
	for _, k := range setKeys {
		var next [][]string
		for _, prefix := range combos {
			for _, v := range c.Matrix.Set[k] {
				next = append(next, append(append([]string(nil), prefix...), v))
			}
		}
		combos = next
	}
	reps := max(c.Repetitions, 1)
	var p Plan
	for _, e := range engines {
		for _, m := range models {
			for _, s := range scenarios {
				for _, l := range loads {
					for _, combo := range combos {
						axes := map[string]string{}
						if e.Name != "" {
							axes["engine"] = e.Name
						}
						if m.Name != "" {
							axes["model"] = m.Name
						}
						if s.Name != "" {
							axes["scenario"] = s.Name
						}
						if l.Name != "" {
							axes["load"] = l.Name
						}
						sets := map[string]string{}
						for i, k := range setKeys {
							axes[k] = combo[i]
							sets[k] = combo[i]
						}
						if c.excluded(axes) {
							p.Excluded += reps
							continue
						}
						args := c.runArgs(e, m, s, l, sets)
						for rep := 1; rep <= reps; rep++ {
							p.Runs = append(p.Runs, c.newRun(axes, setKeys, args, rep, m.TP))
						}
					}
				}
			}
		}
	}
	return p
}

func (c *Campaign) excluded(axes map[string]string) bool {
	for _, ex := range c.Exclude {
		match := len(ex) > 0
		for k, v := range ex {
			if axes[k] != v {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// runArgs are the `run` flags of one combination, in a fixed order.
func (c *Campaign) runArgs(e Engine, m Model, s Scenario, l LoadLevel, sets map[string]string) []string {
	var a []string
	if e.Kind != "" {
		a = append(a, "--engine", e.Kind)
	}
	if m.ID != "" {
		a = append(a, "--model", m.ID)
	}
	if m.Params != "" {
		a = append(a, "--model-params", m.Params)
	}
	// The tensor parallelism is a flag only of the engines that take it
	// (run refuses a flag the engine does not use); it still sizes a
	// Slurm job's GPUs.
	if m.TP > 0 && c.engineAccepts(e.Kind, "tp") {
		a = append(a, "--tp", fmt.Sprint(m.TP))
	}
	if s.Dataset != "" {
		a = append(a, "--dataset", s.Dataset)
	}
	if s.DatasetFormat != "" {
		a = append(a, "--dataset-format", s.DatasetFormat)
	}
	if s.Name != "" {
		a = append(a, "--label", "scenario="+s.Name)
	}
	a = append(a, "--label", "campaign="+c.Name)
	for _, k := range sortedKeys(l.Set) {
		a = append(a, "--set", k+"="+l.Set[k])
	}
	for _, k := range sortedKeys(sets) {
		a = append(a, "--set", k+"="+sets[k])
	}
	a = append(a, e.Args...)
	a = append(a, m.Args...)
	a = append(a, s.Args...)
	a = append(a, l.Args...)
	return append(a, c.Args...)
}

func (c *Campaign) newRun(axes map[string]string, setKeys []string, args []string, rep, tp int) Run {
	axes = cloneMap(axes)
	axes["rep"] = fmt.Sprint(rep)
	cfg := Config{Profile: c.ProfileRef, Args: append([]string(nil), args...), Rep: rep}
	spec, specErr := c.runSettingsOf(args)
	// The hash covers the configuration as the user wrote it: the profile
	// as named in the file (not the path it resolves to from here), so that
	// the id does not change with the directory sweep runs from.
	canon, _ := json.Marshal(Config{Profile: c.Profile, Args: args, Rep: rep})
	sum := sha256.Sum256(canon)
	var parts []string
	for _, k := range append([]string{"engine", "model", "scenario", "load"}, setKeys...) {
		if v, ok := axes[k]; ok {
			parts = append(parts, v)
		}
	}
	parts = append(parts, "r"+axes["rep"])
	slug := slugUnsafe.ReplaceAllString(strings.Join(parts, "-"), "_")
	if len(slug) > 80 {
		slug = slug[:80]
	}
	return Run{ID: slug + "-" + hex.EncodeToString(sum[:])[:8], Axes: axes, Rep: rep, TP: max(tp, 1), Config: cfg, Spec: spec, SpecErr: specErr}
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// RunsDir is where run archives go.
func (c *Campaign) RunsDir() string { return filepath.Join(c.Dir, "runs") }

// Describe is one line per run for `sweep --dry-run`.
func (r Run) Describe() string {
	keys := make([]string, 0, len(r.Axes))
	for k := range r.Axes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + r.Axes[k]
	}
	return strings.Join(parts, " ")
}

// engineAccepts reports whether the engine kind (the run command's default
// when empty) takes the engine-specific flag, as the campaign's registry
// says.
func (c *Campaign) engineAccepts(kind, flag string) bool {
	if kind == "" {
		kind = all.Default
	}
	d, ok := c.registry().Lookup(kind)
	return ok && d.Accepts(flag)
}
