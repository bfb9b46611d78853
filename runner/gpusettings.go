package runner

import (
	"context"
	"errors"
	"fmt"
	"github.com/joulebench/joulebench/engines/all"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry/gpusettings"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
	"github.com/joulebench/joulebench/workflow"
)

// GPUOptions are the GPU settings a run applies (--gpu-power-limit,
// --gpu-clocks, or the --set parameters gpu_power_limit_w and gpu_clocks)
// and where their journal goes.
type GPUOptions struct {
	// GPUSettingValues are the settings' values (record.GPUSettingsTable):
	// W for every GPU or INDEX=W,... of the power limit, MIN,MAX (MHz) of
	// a lock. Empty: unchanged.
	record.GPUSettingValues
	// Journals are the restore journals' places
	// (gpusettings.DefaultJournals). Every run refuses to start while one
	// is outstanding. None: no journal is looked for, and real GPUs
	// cannot be changed.
	Journals gpusettings.Journals
	// Open opens the controller of the machine's GPUs (NVML). The
	// simulated engine's GPUs are changed through the simulator's own
	// controller unless Open returns one for them (simulated true: tests).
	// Nil: real GPUs cannot be changed.
	Open func(simulated bool) (gpusettings.Controller, error)
}

// gpuRun is a run's GPU settings: the request, its controller and, once
// applied, the session that restores them.
type gpuRun struct {
	req     gpusettings.Request
	ctl     gpusettings.Controller
	sim     *simtel.GPUSettings
	session *gpusettings.Session
	// restored: restoreGPU ran.
	restored bool
}

// monitorInterval is how often the clock and clock-event reasons of a GPU
// under a setting are read.
const monitorInterval = 100 * time.Millisecond

// gpuRequest is the run's request: the options or the --set values (not both),
// else the profile's own parameters of the settings (record.GPUSettingsTable).
func (e *engineRun) gpuRequest() (gpusettings.Request, error) {
	v := e.gpuValues()
	table := record.GPUSettingsTable()
	if e.r.gpuSetsGiven && e.s.GPU.GPUSettingValues != (record.GPUSettingValues{}) {
		flags, params := make([]string, len(table)), make([]string, len(table))
		for i, s := range table {
			flags[i], params[i] = "--"+s.Flag, s.Param
		}
		return gpusettings.Request{}, Invalidf("GPU settings given twice: %s and --set %s; give one", strings.Join(flags, "/"), strings.Join(params, "/"))
	}
	if v == (record.GPUSettingValues{}) && e.l != nil {
		for _, s := range table {
			*s.Value(&v) = paramString(e.l.Params[s.Param])
		}
	}
	req, err := gpusettings.ParseRequest(v)
	if err != nil {
		return req, WithCode(CodeInvalid, err)
	}
	return req, nil
}

func paramString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		if x == 0 {
			return ""
		}
		return fmt.Sprint(x)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// prepareGPU refuses, before anything changes or is created, a run while a
// restore journal is outstanding and a request some GPU cannot take (no
// controller, a value out of range, an unsupported device).
func (e *engineRun) prepareGPU() error {
	o := e.s.GPU
	if len(o.Journals.Dirs) > 0 {
		if err := o.Journals.Check(); err != nil {
			return WithCode(CodeInvalid, err)
		}
	}
	req, err := e.gpuRequest()
	if err != nil || req.Empty() {
		return err
	}
	e.gpu = &gpuRun{req: req}
	var ctl gpusettings.Controller
	if o.Open != nil {
		if ctl, err = o.Open(e.simulated); err != nil {
			return WithCode(CodeInvalid, fmt.Errorf("GPU settings: %w; nothing changed", err))
		}
	}
	switch {
	case ctl != nil:
		e.onClose("the GPU settings controller", ctl.Close)
	case e.simulated:
		cfg, err := all.SimGPUConfig(e.s.Engine.Settings, e.s.Engine.Seed)
		if err != nil {
			return Invalidf("GPU settings: %v; nothing changed", err)
		}
		e.gpu.sim = simtel.NewGPUSettings(cfg)
		ctl = e.gpu.sim
	default:
		return Invalidf("--gpu-power-limit/--gpu-clocks: this build cannot change GPU settings (no NVML controller); nothing changed")
	}
	e.gpu.ctl = ctl
	devs, err := ctl.Devices()
	if err != nil {
		return WithCode(CodeInvalid, fmt.Errorf("GPU settings: %w; nothing changed", err))
	}
	if err := gpusettings.Check(req, devs); err != nil {
		return WithCode(CodeInvalid, err)
	}
	return nil
}

// applyGPU applies the request to every GPU or to none, after the checks
// and before the run's directory exists, and restores the previous values
// when the run ends, whatever the path (success, failure, interrupt,
// panic: the closers run in runEngine's deferred close). A refusal by the
// driver (no permission) is invalid input; a read-back that differs is a
// failure. Either way nothing stays changed.
func (e *engineRun) applyGPU() error {
	if e.gpu == nil {
		return nil
	}
	s, err := gpusettings.Apply(e.gpu.ctl, e.gpu.req, gpusettings.ApplyOptions{Journals: e.s.GPU.Journals, RunID: e.runIDBase(), Now: e.now})
	if err != nil {
		if errors.Is(err, gpusettings.ErrNoPermission) || errors.Is(err, gpusettings.ErrNotSupported) {
			return WithCode(CodeInvalid, err)
		}
		return WithCode(CodeFailure, err)
	}
	e.gpu.session = s
	e.onClose("the GPU settings (restore)", e.restoreGPU)
	fmt.Fprintf(e.s.Messages, "GPU settings applied (%s): %s; restored when the run ends\n", e.gpu.ctl.Name(), describeRequest(e.gpu.req))
	if dirs := e.s.GPU.Journals.Dirs; len(dirs) > 1 && s.JournalDir() != "" && s.JournalDir() != dirs[0] {
		fmt.Fprintf(e.s.Messages, "GPU settings: %s cannot be written: the restore journal is in %s, which only this user's runs see\n", dirs[0], s.JournalDir())
	}
	return nil
}

// archiveGPU follows the archive's creation: the journal names the run's
// id (a counter may follow the one it was written with), and the restore
// runs before the archive's files close, so that run.json records its
// outcome (gpu_settings.restore) whatever path the run takes.
func (e *engineRun) archiveGPU() error {
	if e.gpu == nil || e.gpu.session == nil {
		return nil
	}
	e.onClose("the GPU settings (restore)", e.restoreGPU)
	if err := e.gpu.session.SetRunID(e.runID); err != nil {
		return WithCode(CodeFailure, err)
	}
	return nil
}

// restoreGPU restores the GPU settings once, says so on the console and,
// once the archive exists, records the outcome in run.json. A failed
// restore is the run's error too (it names the journal to restore from).
func (e *engineRun) restoreGPU() error {
	g := e.gpu
	if g == nil || g.session == nil || g.restored {
		return nil
	}
	g.restored = true
	err := g.session.Restore()
	if err != nil {
		fmt.Fprintf(e.s.Messages, "GPU settings NOT restored (%s): %v\n", g.ctl.Name(), err)
	} else {
		fmt.Fprintf(e.s.Messages, "GPU settings restored (%s): %s\n", g.ctl.Name(), g.session.Restored())
	}
	if e.out != nil {
		rec := g.session.Record()
		if uerr := e.out.UpdateMeta(func(m *record.Meta) { m.GPUSettings = &rec }); uerr != nil {
			err = errors.Join(err, fmt.Errorf("record the GPU settings' restore: %w", uerr))
		}
	}
	return err
}

func describeRequest(r gpusettings.Request) string {
	var parts []string
	for _, s := range record.GPUSettingsTable() {
		switch v := r.String(s); {
		case v == "":
		case s.Kind == record.GPULimit:
			parts = append(parts, s.Name+" "+v+" "+s.Unit)
		default:
			parts = append(parts, s.Name+" locked at "+v+" "+s.Unit)
		}
	}
	return strings.Join(parts, ", ")
}

// recordGPU records the settings in run.json, warns when the power source
// cannot see the GPUs, and starts reading their clocks.
func (e *engineRun) recordGPU(ctx context.Context) error {
	if e.gpu == nil {
		return nil
	}
	s := e.gpu.session
	if src := e.deps.Source; src != nil {
		devs, err := src.Devices(ctx)
		gpu := false
		for _, d := range devs {
			gpu = gpu || d.DomainOrGPU() == record.DomainGPU
		}
		if err == nil && !gpu {
			msg := "the power source sees no GPU (" + src.Name() + "): it cannot tell the GPU settings' effect apart from the rest of its boundary"
			s.Note(msg)
			e.log.Warn().Str("component", "gpu-settings").Msg(msg)
		}
	}
	s.StartMonitor(context.WithoutCancel(ctx), e.clock.Now, monitorInterval)
	rec := s.Record()
	return e.out.UpdateMeta(func(m *record.Meta) { m.GPUSettings = &rec })
}

// summariseGPU records whether the setting bound in the formal stage.
func (e *engineRun) summariseGPU() error {
	if e.gpu == nil || e.out == nil {
		return nil
	}
	s := e.gpu.session
	meta := e.out.Meta()
	st, ok := meta.StageByName("formal")
	if !ok {
		s.StopMonitor()
		return nil
	}
	s.SummariseFormal(st.Start, st.End)
	rec := s.Record()
	for _, d := range rec.Devices {
		if b := d.Formal; b != nil && b.Samples > 0 {
			fmt.Fprintf(e.s.Messages, "GPU settings: GPU %d: %s, mean SM clock %.0f MHz%s\n",
				d.Index, capShare(b), b.MeanSMClockMHz, otherReasons(b.OtherReasons))
		}
	}
	for _, n := range rec.Notes {
		fmt.Fprintln(e.s.Messages, "GPU settings: "+n)
	}
	return e.out.UpdateMeta(func(m *record.Meta) { m.GPUSettings = &rec })
}

// capShare says in how many of the formal stage's clock readings the power
// cap was active, and how many readings' reasons were not read.
func capShare(b *record.GPUSettingsBound) string {
	if b.PowerCapShare == nil {
		return fmt.Sprintf("power cap unknown: the clock-event reasons of the formal stage's %d clock readings were not read", b.Samples)
	}
	msg := fmt.Sprintf("power cap active in %.0f %% of the formal stage's %d clock readings", 100**b.PowerCapShare, b.Samples-b.ReasonsUnread)
	if b.ReasonsUnread > 0 {
		msg += fmt.Sprintf(" whose reasons were read (%d not read)", b.ReasonsUnread)
	}
	return msg
}

// simGPU is the simulated GPUs' settings for the engine's setup (nil:
// none asked, or not the simulator's controller).
func (e *engineRun) simGPU() *simtel.GPUSettings {
	if e.gpu == nil {
		return nil
	}
	return e.gpu.sim
}

// otherReasons lists the other clock-event reasons with their shares.
func otherReasons(m map[string]float64) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.0f %%", r, 100*m[r]))
	}
	return "; other reasons: " + strings.Join(parts, ", ")
}

// gpuValues are the GPU settings given: the --set values when any was
// given, else the options (one value per setting of record.GPUSettingsTable).
func (e *engineRun) gpuValues() record.GPUSettingValues {
	if e.r.gpuSetsGiven {
		return e.r.gpuSets
	}
	return e.s.GPU.GPUSettingValues
}

// declaredGPUSets are --set values for the GPU settings' parameters that
// the profile l declares, from the options or the --set values, so that
// run.json's parameters say what the run applied.
func (e *engineRun) declaredGPUSets(l *workflow.Loaded) []string {
	var out []string
	v := e.gpuValues()
	for _, s := range record.GPUSettingsTable() {
		if _, declared := l.Params[s.Param]; declared && *s.Value(&v) != "" {
			out = append(out, s.Param+"="+*s.Value(&v))
		}
	}
	return out
}
