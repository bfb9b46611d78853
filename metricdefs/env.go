// Package metricdefs is the expression layer of joulebench: the typed
// environment that profile formulas see, the built-ins they call (thin
// wrappers over package measure: energy over an interval, steady-state
// search, attribution, release detection, statistics), and the
// compile-once / evaluate-many machinery for derived values, metrics and
// checks. It does no I/O.
package metricdefs

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"

	"github.com/joulebench/joulebench/internal/num"
)

// RunInfo is `run` in expressions.
type RunInfo struct {
	ID        string            `expr:"id"`
	Status    string            `expr:"status"`
	Simulated bool              `expr:"simulated"`
	Engine    string            `expr:"engine"`
	Managed   bool              `expr:"managed"`
	Model     string            `expr:"model"`
	Telemetry string            `expr:"telemetry"`
	Profile   string            `expr:"profile"`
	Labels    map[string]string `expr:"labels"`
	StartedAt float64           `expr:"started_at"`
	EndedAt   float64           `expr:"ended_at"`
	// Metadata asiai stores with every result.
	EngineVersion string `expr:"engine_version"`
	ModelFormat   string `expr:"model_format"`
	Quantization  string `expr:"model_quantization"`
	HWChip        string `expr:"hw_chip"`
	OSVersion     string `expr:"os_version"`
	// HasPower is true when the archive holds GPU power samples (devices
	// of domain gpu, the default).
	HasPower bool `expr:"has_power"`
	// PowerDeclined is true when the user chose to measure no power
	// (--telemetry none): energy is not measured, by choice.
	PowerDeclined bool `expr:"power_declined"`
	// HasCounter is true when every GPU device has an energy counter.
	HasCounter bool `expr:"has_counter"`
	// Domains lists the power domains with samples ("gpu", "cpu",
	// "dram", "node"), in that order: `"cpu" in run.domains`.
	Domains []string `expr:"domains"`
	// SampleIntervalS is the power sampling interval the run used
	// (run.json telemetry.interval_s), 0 when not recorded.
	SampleIntervalS float64 `expr:"sample_interval_s"`
}

// Stage is an element of `stages` in expressions (stages.formal.start).
// A stage absent from the run is nil: `stages.startup?.start` or
// `"startup" in stages` test for it.
type Stage struct {
	Name     string  `expr:"name"`
	Start    float64 `expr:"start"`
	End      float64 `expr:"end"`
	Duration float64 `expr:"duration"`
}

// Device is an element of `devices` in expressions.
type Device struct {
	ID        string `expr:"id"`
	Name      string `expr:"name"`
	UUID      string `expr:"uuid"`
	Host      string `expr:"host"`
	Method    string `expr:"method"`
	Simulated bool   `expr:"simulated"`
	// PowerLimitW is the device's power limit in W, 0 when unknown.
	PowerLimitW float64 `expr:"power_limit_w"`
	// Domain is the boundary its power covers: gpu, cpu, dram or node.
	Domain string `expr:"domain"`
	// Role is its part in a run of several engine parts: prefill,
	// decode, router, replica; "" for a single-engine run.
	Role string `expr:"role"`
}

// Data is one run's raw data prepared for evaluation.
type Data struct {
	Meta record.Meta
	// Power holds the GPU devices' samples (domain gpu): the method's
	// figures use these only. nil when the run has none.
	Power *measure.PowerData
	// DomainPower holds the samples of the other domains (cpu, dram,
	// node), one PowerData per domain present.
	DomainPower map[string]*measure.PowerData
	Requests    []*record.Request
	Stages      map[string]*Stage
	// Open names the stages that had not ended when the run stopped
	// (their end was clamped to the data): values over them are partial.
	Open    map[string]bool
	Events  map[string]float64
	Devices []Device
	Run     RunInfo
	// Baseline is the same profile's results on a baseline run, or nil
	// (`baseline` in expressions; baseline.go).
	Baseline *Baseline
	// shapes keeps the requests' token shapes between the functions that
	// need them (steady_state, requests_in); subShapes those of tokens_in,
	// which is asked about a subset (the requests meeting an SLO) and
	// would otherwise push the whole list out of shapes.
	shapes, subShapes *measure.Shapes
	// engine is the engine's state from engine_metrics.jsonl; batchLimit
	// and batchLimitSource its configured batch limit (0, "" unknown).
	engine           measure.EngineSeries
	batchLimit       float64
	batchLimitSource string
}

// NewData indexes an archived run for evaluation.
func NewData(run *record.Run) (*Data, error) {
	d := &Data{
		shapes:    &measure.Shapes{},
		subShapes: &measure.Shapes{},
		Meta:      run.Meta,
		engine:    measure.NewEngineSeries(run.EngineMetrics),
		Stages:    make(map[string]*Stage, len(run.Meta.Stages)),
		Events:    make(map[string]float64, len(run.Meta.Events)),
	}
	if err := d.splitPower(run); err != nil {
		return nil, err
	}
	d.Requests = make([]*record.Request, len(run.Requests))
	for i := range run.Requests {
		d.Requests[i] = &run.Requests[i]
	}
	for _, s := range run.Meta.Stages {
		if _, dup := d.Stages[s.Name]; dup {
			continue // the first occurrence wins, as in Meta.StageByName
		}
		d.Stages[s.Name] = &Stage{Name: s.Name, Start: s.Start, End: s.End, Duration: s.End - s.Start}
		if s.Open {
			if d.Open == nil {
				d.Open = map[string]bool{}
			}
			d.Open[s.Name] = true
		}
	}
	for _, e := range run.Meta.Events {
		if _, dup := d.Events[e.Name]; !dup {
			d.Events[e.Name] = e.T
		}
	}
	known := map[string]bool{}
	for _, dev := range run.Meta.Hardware.Devices {
		known[dev.ID] = true
		d.Devices = append(d.Devices, Device{ID: dev.ID, Name: dev.Name, UUID: dev.UUID, Host: dev.Host, Method: dev.Method, Simulated: dev.Simulated,
			PowerLimitW: dev.PowerLimitW, Domain: dev.DomainOrGPU(), Role: dev.Role})
	}
	if d.Power != nil {
		for _, id := range d.Power.Devices() {
			if !known[id] {
				d.Devices = append(d.Devices, Device{ID: id, Domain: record.DomainGPU})
			}
		}
	}
	d.batchLimit, d.batchLimitSource = measure.BatchLimit(run.Meta, run.EngineMetrics)
	m := run.Meta
	d.Run = RunInfo{
		ID: m.RunID, Status: m.Status, Simulated: m.Simulated, Engine: m.Engine.Kind,
		Managed: m.Engine.Managed, Model: m.Engine.Model, Telemetry: m.Telemetry.Source,
		Profile: m.Profile.Name, Labels: m.Labels, StartedAt: m.StartedAt, EndedAt: m.EndedAt,
		HasPower: d.Power != nil, HasCounter: d.Power != nil && d.Power.HasCounter(),
		EngineVersion: m.Engine.Version, ModelFormat: m.Engine.ModelFormat, Quantization: m.Engine.Quantization,
		HWChip: m.Hardware.Chip, OSVersion: m.Host.OSVersion, SampleIntervalS: m.Telemetry.IntervalS,
		Domains: d.domains(), PowerDeclined: m.Telemetry.Declined,
	}
	if d.Run.Labels == nil {
		d.Run.Labels = map[string]string{}
	}
	return d, nil
}

// splitPower indexes power.csv: the GPU devices' samples into Power, each
// other domain's into DomainPower. A device of power.csv missing from
// hardware.devices counts as a GPU (as before domains existed). An archive
// of GPUs only is indexed whole, as it always was.
func (d *Data) splitPower(run *record.Run) error {
	domain := map[string]string{}
	split := false
	for i, dev := range run.Meta.Hardware.Devices {
		dom := dev.DomainOrGPU()
		if !slices.Contains(record.Domains, dom) {
			return fmt.Errorf("run.json: hardware.devices[%d] (%s): domain %q is not one of %s", i, dev.ID, dev.Domain, strings.Join(record.Domains, ", "))
		}
		domain[dev.ID] = dom
		split = split || dom != record.DomainGPU
	}
	if len(run.Power) == 0 {
		return nil
	}
	// The whole file first: its errors name the sample's place in it.
	all, err := measure.NewPowerData(run.Power)
	if err != nil {
		return fmt.Errorf("power.csv: %w", err)
	}
	if !split {
		d.Power = all
		return nil
	}
	rows := map[string][]record.PowerSample{}
	for _, s := range run.Power {
		dom := domain[s.Device]
		if dom == "" {
			dom = record.DomainGPU
		}
		rows[dom] = append(rows[dom], s)
	}
	d.DomainPower = map[string]*measure.PowerData{}
	for dom, rs := range rows {
		pd, err := measure.NewPowerData(rs)
		if err != nil {
			return fmt.Errorf("power.csv, domain %s: %w", dom, err)
		}
		if dom == record.DomainGPU {
			d.Power = pd
		} else {
			d.DomainPower[dom] = pd
		}
	}
	return nil
}

// domains lists the domains with power samples, in record.Domains order.
func (d *Data) domains() []string {
	out := []string{}
	for _, dom := range record.Domains {
		if (dom == record.DomainGPU && d.Power != nil) || d.DomainPower[dom] != nil {
			out = append(out, dom)
		}
	}
	return out
}

// domainPower returns the samples of the named domains ("gpu" included),
// in the order named, and an error naming those absent when none is
// present.
func (d *Data) domainPower(names []any) ([]*measure.PowerData, error) {
	var out []*measure.PowerData
	var want []string
	for i, n := range names {
		dom, ok := n.(string)
		if !ok || !slices.Contains(record.Domains, dom) {
			return nil, fmt.Errorf("domain %d is %v: want one of %s", i+1, n, strings.Join(record.Domains, ", "))
		}
		want = append(want, dom)
		pd := d.DomainPower[dom]
		if dom == record.DomainGPU {
			pd = d.Power
		}
		if pd != nil {
			out = append(out, pd)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no power samples of domain %s in this run", strings.Join(want, " or "))
	}
	return out, nil
}

// baselines returns each device's mean power and max memory over the
// baseline stage.
func (d *Data) baselines() (map[string]float64, map[string]int64, error) {
	if d.Power == nil {
		return nil, nil, fmt.Errorf("no power samples in this run")
	}
	st, ok := d.Stages["baseline"]
	if !ok {
		return nil, nil, fmt.Errorf("run has no baseline stage")
	}
	pw := map[string]float64{}
	mem := map[string]int64{}
	for _, dev := range d.Power.Devices() {
		w, err := d.Power.MeanPower(dev, st.Start, st.End)
		if err != nil {
			return nil, nil, fmt.Errorf("baseline of %s: %w", dev, err)
		}
		pw[dev] = w
		if m, ok := d.Power.MaxMem(dev, st.Start, st.End); ok {
			mem[dev] = m
		}
	}
	return pw, mem, nil
}

type dataKey struct{}

// withData puts the run data where the built-ins find it.
func withData(ctx context.Context, d *Data) context.Context {
	return context.WithValue(ctx, dataKey{}, d)
}

func dataFrom(ctx context.Context) (*Data, error) {
	d, _ := ctx.Value(dataKey{}).(*Data)
	if d == nil {
		return nil, fmt.Errorf("internal: no run data in evaluation context")
	}
	return d, nil
}

func powerFrom(ctx context.Context) (*measure.PowerData, error) {
	d, err := dataFrom(ctx)
	if err != nil {
		return nil, err
	}
	if d.Power == nil {
		return nil, fmt.Errorf("no power source: this run has no power samples")
	}
	return d.Power, nil
}

// toFloat converts any numeric value an expression may produce
// (num.Float).
func toFloat(v any) (float64, bool) { return num.Float(v) }

// toFloats converts a list of numbers ([]float64, []int or []any).
func toFloats(v any) ([]float64, error) {
	switch xs := v.(type) {
	case []float64:
		return xs, nil
	case []int:
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = float64(x)
		}
		return out, nil
	case []any:
		out := make([]float64, len(xs))
		for i, x := range xs {
			f, ok := toFloat(x)
			if !ok {
				return nil, fmt.Errorf("element %d is %T, not a number", i, x)
			}
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("element %d is %v", i, f)
			}
			out[i] = f
		}
		return out, nil
	case nil:
		return nil, fmt.Errorf("list is nil")
	}
	return nil, fmt.Errorf("%T is not a list of numbers", v)
}

func toStrings(v any) ([]string, error) {
	switch xs := v.(type) {
	case []string:
		return xs, nil
	case []any:
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = fmt.Sprint(x)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%T is not a list", v)
}

// toRequests converts a list of requests ([]*record.Request or the []any a
// filter() produces).
func toRequests(v any) ([]*record.Request, error) {
	switch xs := v.(type) {
	case []*record.Request:
		return xs, nil
	case []any:
		out := make([]*record.Request, len(xs))
		for i, x := range xs {
			r, ok := x.(*record.Request)
			if !ok {
				return nil, fmt.Errorf("element %d is %T, not a request", i, x)
			}
			out[i] = r
		}
		return out, nil
	}
	return nil, fmt.Errorf("%T is not a list of requests", v)
}

// sortedKeys is used for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// baselineStats summarizes each device's samples over the baseline stage.
func baselineStats(ctx context.Context) (map[string]measure.BaselineStat, error) {
	d, err := dataFrom(ctx)
	if err != nil {
		return nil, err
	}
	if d.Power == nil {
		return nil, fmt.Errorf("no power samples in this run")
	}
	st, ok := d.Stages["baseline"]
	if !ok {
		return nil, fmt.Errorf("run has no baseline stage")
	}
	return d.Power.BaselineStats(st.Start, st.End)
}

func measureITL(reqs []*record.Request) ([]float64, error) { return measure.ITL(reqs) }
