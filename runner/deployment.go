package runner

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/internal/yamlstrict"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// DeploymentFile is a --deployment file: the engine parts of one run,
// each with its role, and the part requests go to. A part is managed
// (kind: joulebench starts it on this host with its own command line, as
// it starts one engine) or external (url: an already running server,
// here or on another host).
//
//	entry: router
//	parts:
//	  - {name: prefill, role: prefill, kind: vllm, model: m, port: 8100, args: [...], devices: [gpu0]}
//	  - {name: decode, role: decode, kind: vllm, model: m, port: 8200, args: [...], devices: [gpu1]}
//	  - {name: router, role: router, url: "http://127.0.0.1:8000"}
type DeploymentFile struct {
	// Entry names the part requests go to; required with several parts.
	Entry string         `yaml:"entry"`
	Parts []PartSettings `yaml:"parts"`
}

// PartSettings is one part of a DeploymentFile.
type PartSettings struct {
	Name string `yaml:"name"`
	// Role is prefill, decode, router or replica.
	Role string `yaml:"role"`
	// Host names the node the part runs on (default: this host for a
	// managed part, the URL's host for an external one).
	Host string `yaml:"host"`
	// Kind is the engine kind: a kind joulebench starts, or with URL the
	// kind of the running server ("": any OpenAI-compatible server).
	Kind string `yaml:"kind"`
	// Bin, Args, Env, Model, Port and TP are a managed part's engine
	// options, as --engine-bin, --engine-arg, --engine-env, --model,
	// --port and --tp give one engine's (Model default: the run's).
	Bin   string            `yaml:"bin"`
	Args  []string          `yaml:"args"`
	Env   map[string]string `yaml:"env"`
	Model string            `yaml:"model"`
	Port  int               `yaml:"port"`
	TP    int               `yaml:"tp"`
	// URL is an external part's server root.
	URL string `yaml:"url"`
	// API is an external part's API (openai or ollama; "": its kind's).
	API string `yaml:"api"`
	// Devices are the IDs (as in power.csv) of the devices the part owns:
	// they are archived with its host and role.
	Devices []string `yaml:"devices"`
	// Settings are a managed part's engine settings by flag name, as the
	// run's --FLAG gives them (e.g. sim-gpu: h200-sxm for a simulated
	// part); each replaces the run's value for this part.
	Settings map[string]string `yaml:"settings"`
}

// managed reports whether joulebench starts the part.
func (p PartSettings) managed() bool { return p.URL == "" }

// ReadDeployment reads and checks a --deployment file: strict YAML
// (unknown keys, wrong types), a name and a valid role for each part,
// names and devices each given once, a startable kind or a URL, and an
// entry that names a part. Every error names file:line:col; they are all
// reported together, as invalid input.
func ReadDeployment(path string, reg *engines.Registry) (*DeploymentFile, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, Invalidf("--deployment: %v", err)
	}
	df, err := ParseDeployment(src, path, reg)
	if err != nil {
		return nil, WithCode(CodeInvalid, fmt.Errorf("invalid deployment:\n%w", err))
	}
	return df, nil
}

// ParseDeployment parses a deployment file's content (file names it in
// errors); kinds are checked against reg.
func ParseDeployment(src []byte, file string, reg *engines.Registry) (*DeploymentFile, error) {
	d := yamlstrict.New(file)
	root, ok := d.Parse(src)
	if !ok {
		return nil, d.Err()
	}
	df := &DeploymentFile{}
	d.Strict(root, df, "")
	if d.OK() {
		df.validate(d, root, reg)
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	return df, nil
}

// validate checks what the types cannot, each error at its node.
func (df *DeploymentFile) validate(d *yamlstrict.Decoder, root *yaml.Node, reg *engines.Registry) {
	at := func(path ...string) *yaml.Node { return yamlstrict.NodeAt(root, path...) }
	if len(df.Parts) == 0 {
		d.Errorf(yamlstrict.FirstNode(at("parts"), root), "parts", "required: at least one part")
		return
	}
	names := map[string]bool{}
	owner := map[string]string{}
	for i, p := range df.Parts {
		idx := fmt.Sprint(i)
		where := fmt.Sprintf("parts[%d]", i)
		node := func(key string) *yaml.Node { return yamlstrict.FirstNode(at("parts", idx, key), at("parts", idx)) }
		switch {
		case strings.TrimSpace(p.Name) == "":
			d.Errorf(node("name"), where+".name", "required")
		case names[p.Name]:
			d.Errorf(node("name"), where+".name", "part %q named twice", p.Name)
		}
		names[p.Name] = true
		if !slices.Contains(record.Roles, p.Role) {
			d.Errorf(node("role"), where+".role", "%q: want one of %s", p.Role, strings.Join(record.Roles, ", "))
		}
		df.validateKind(d, p, node, where, reg)
		for k, dev := range p.Devices {
			if o, dup := owner[dev]; dup {
				d.Errorf(yamlstrict.FirstNode(at("parts", idx, "devices", fmt.Sprint(k)), node("devices")), where+".devices",
					"device %q is part %q's already", dev, o)
			}
			owner[dev] = p.Name
		}
	}
	switch {
	case df.Entry == "" && len(df.Parts) > 1:
		d.Errorf(root, "entry", "required with several parts: the part requests go to (one of %s)", strings.Join(df.names(), ", "))
	case df.Entry != "" && !names[df.Entry]:
		d.Errorf(at("entry"), "entry", "%q is not a part (parts: %s)", df.Entry, strings.Join(df.names(), ", "))
	}
}

// validateKind checks how a part runs: a kind joulebench starts, or a
// URL (with a kind that attaches, if any).
func (df *DeploymentFile) validateKind(d *yamlstrict.Decoder, p PartSettings, node func(string) *yaml.Node, where string, reg *engines.Registry) {
	if p.managed() {
		if p.Kind == "" {
			d.Errorf(node("kind"), where, "give kind (an engine joulebench starts: %s) or url (a running server)", strings.Join(reg.Startable(), ", "))
			return
		}
		if _, err := reg.ForStart(p.Kind); err != nil {
			d.Errorf(node("kind"), where+".kind", "%v", err)
		}
		if err := reg.CheckSettings(p.Settings); err != nil {
			d.Errorf(node("settings"), where+".settings", "%v", err)
		}
		return
	}
	if u, err := url.Parse(p.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.Errorf(node("url"), where+".url", "%q: want http://HOST:PORT or https://...", p.URL)
	}
	if _, err := reg.ForRemote(p.Kind, p.API); err != nil {
		d.Errorf(node("kind"), where+".kind", "%v", err)
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"bin", p.Bin != ""}, {"args", len(p.Args) > 0}, {"env", len(p.Env) > 0}, {"port", p.Port != 0}, {"tp", p.TP != 0}, {"settings", len(p.Settings) > 0}} {
		if k.set {
			d.Errorf(node(k.key), where+"."+k.key, "applies to a managed part (kind, no url); this part is the running server at its url")
		}
	}
}

func (df *DeploymentFile) names() []string {
	out := make([]string, len(df.Parts))
	for i, p := range df.Parts {
		out[i] = p.Name
	}
	return out
}

// entry is the part requests go to.
func (df *DeploymentFile) entry() string {
	if df.Entry != "" {
		return df.Entry
	}
	return df.Parts[0].Name
}

// served is the part whose kind names the run: the entry, unless it is
// a router (then the first part that is not).
func (df *DeploymentFile) served() PartSettings {
	i := slices.IndexFunc(df.Parts, func(p PartSettings) bool { return p.Name == df.entry() })
	if df.Parts[i].Role != record.RoleRouter {
		return df.Parts[i]
	}
	if j := slices.IndexFunc(df.Parts, func(p PartSettings) bool { return p.Role != record.RoleRouter }); j >= 0 {
		return df.Parts[j]
	}
	return df.Parts[i]
}

// kind is the engine kind the run is named after.
func (df *DeploymentFile) kind() string {
	if k := df.served().Kind; k != "" {
		return k
	}
	return "openai"
}

// partSpec is the engine spec of part p in a run.
func (r *Runner) partSpec(p PartSettings, env engineEnv) all.Spec {
	o := r.s.Engine
	model := p.Model
	if model == "" {
		model = r.modelFor(p.Kind)
	}
	spec := all.Spec{
		Kind: p.Kind, Engines: r.s.Registry, URL: p.URL, API: p.API,
		Common: engines.Common{Bin: p.Bin, Args: p.Args, Env: p.Env, Model: model, Port: p.Port, TP: p.TP,
			Seed: o.Seed, Log: partLog(env.EngineLog, p.Name), HTTP: o.HTTP},
		RunDir: filepath.Join(env.RunDir, "parts", p.Name), RunID: env.RunID, APIKey: o.APIKey,
		Note: env.Note, Quick: env.Quick, PidDir: all.PidDir(),
		ScrapeInterval: o.ScrapeInterval, MetricFamilies: o.MetricFamilies,
		Settings: partEngineSettings(o.Settings, p.Settings),
	}
	if env.RunDir == "" {
		spec.RunDir = ""
	}
	return spec
}

// partEngineSettings are a part's engine settings: the run's, each
// replaced by the part's own.
func partEngineSettings(run, part map[string]string) engines.Settings {
	if len(run) == 0 && len(part) == 0 {
		return nil
	}
	out := engines.Settings{}
	for k, v := range run {
		out[k] = v
	}
	for k, v := range part {
		out[k] = v
	}
	return out
}

// partHost is where part p runs: its host, else this host for a managed
// part, the URL's host for an external one.
func partHost(p PartSettings) string {
	switch {
	case p.Host != "":
		return p.Host
	case p.managed():
		return hostInfo().Hostname
	}
	if u, err := url.Parse(p.URL); err == nil {
		return u.Hostname()
	}
	return ""
}

// setupDeployment builds the engine of a --deployment run: every part
// through its kind's descriptor (all.New), run as one engine
// (engines.Deployment) whose entry requests go to.
func (r *Runner) setupDeployment(env engineEnv) (*EngineSetup, error) {
	df := r.deployment
	var parts []engines.Part
	var served all.Spec
	for _, p := range df.Parts {
		spec := r.partSpec(p, env)
		if p.managed() && p.Bin != "" && !r.simulatedKind(p.Kind) {
			if err := checkExecutable(p.Bin); err != nil {
				return nil, Invalidf("--deployment part %q: bin: %v", p.Name, err)
			}
		}
		eng, err := all.New(spec)
		if err != nil {
			return nil, Invalidf("--deployment part %q: %v", p.Name, err)
		}
		if p.Name == df.served().Name {
			served = spec
		}
		parts = append(parts, engines.Part{Name: p.Name, Role: p.Role, Host: partHost(p), Devices: p.Devices, Engine: eng})
	}
	simNodes := simulatedParts(df, parts)
	dep, err := engines.NewDeployment(parts, df.entry())
	if err != nil {
		return nil, Invalidf("--deployment: %v", err)
	}
	es := &EngineSetup{
		Kind:      dep.Kind(),
		Engine:    dep,
		Simulated: dep.Simulated(),
		NewClient: all.NewClient(served, dep, env.Clock.Now),
		Model:     all.Model(served, dep),
		Expect:    all.Expect(served, dep),
		Chat:      true,
		External:  dep.External(),
		Spec:      served,
		ExitError: dep.ExitError,
	}
	if es.Model == "" {
		es.Model = served.Model
	}
	es.SimNodes = simNodes
	es.StartMetrics = startMetrics(served, dep, env.Clock)
	return es, nil
}

// simulatedParts are the simulated GPUs of a deployment's simulated
// parts (kind sim): a node each, on the part's host with its role, whose
// GPUs follow that part's load and are named by its devices (else
// sim<N>, numbered on from the parts before, which become the part's
// devices in run.json). Nil when no part is simulated: the power source
// is then the run's.
func simulatedParts(df *DeploymentFile, parts []engines.Part) []simtel.Node {
	var nodes []simtel.Node
	base := 0
	for i, p := range parts {
		gpu, ok := p.Engine.(simulatedGPU)
		if !ok || !df.Parts[i].managed() {
			continue
		}
		cfg := gpu.GPUConfig()
		if len(p.Devices) == 0 {
			for d := range max(1, cfg.Devices) {
				parts[i].Devices = append(parts[i].Devices, fmt.Sprintf("%s%d", simtel.Name, base+d))
			}
		}
		cfg.Host, cfg.Role, cfg.IDs = p.Host, p.Role, parts[i].Devices
		cfg.Seed += int64(i)
		base += len(parts[i].Devices)
		nodes = append(nodes, simtel.Node{Config: cfg, Load: gpu})
	}
	return nodes
}

// labelDevices gives each device a part of the deployment lists its
// part's host and role.
func (df *DeploymentFile) labelDevices(devs []record.Device) {
	for i := range devs {
		for _, p := range df.Parts {
			if slices.Contains(p.Devices, devs[i].ID) {
				devs[i].Host, devs[i].Role = partHost(p), p.Role
			}
		}
	}
}

// partLog is w with each line prefixed by the part's name ("[decode] "):
// every part writes to the one engine.log. Whole lines are written at
// once, so two parts' lines never mix; a partial line waits for its
// newline.
func partLog(w io.Writer, name string) io.Writer {
	if w == nil {
		return nil
	}
	return &prefixWriter{w: w, prefix: []byte("[" + name + "] ")}
}

type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix []byte
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := append(append([]byte(nil), p.prefix...), p.buf[:i+1]...)
		p.buf = p.buf[i+1:]
		if _, err := p.w.Write(line); err != nil {
			return len(b), err
		}
	}
}
