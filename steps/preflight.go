package steps

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/process"
	"github.com/joulebench/joulebench/workflow"
)

// PreflightConfig is the `with:` of a preflight step: what to confirm before
// anything starts (spec step 1, preparation).
type PreflightConfig struct {
	// Check lists the checks to run: engine, model, requests, gpus,
	// processes, disk.
	Check []string `yaml:"check"`
	// MinFreeDiskMB is the free space the archive directory needs.
	MinFreeDiskMB int `yaml:"min_free_disk_mb"`
	// MaxGPUMemUsedMB is the most memory a device may already hold before
	// the engine starts (check gpus); 0 disables the limit.
	MaxGPUMemUsedMB int `yaml:"max_gpu_mem_used_mb"`
	// Leftovers says what other inference servers and running containers
	// found by the processes check do: warn (the default: they are named
	// in the log) or fail. An engine a killed joulebench left running, or
	// the engine's port in use, always fails.
	Leftovers string `yaml:"leftovers"`
}

var preflightChecks = map[string]bool{"engine": true, "model": true, "requests": true, "gpus": true, "processes": true, "disk": true}

// Validate rejects unknown checks.
func (c *PreflightConfig) Validate() error {
	for _, k := range c.Check {
		if !preflightChecks[k] {
			return fmt.Errorf("unknown preflight check %q (valid: disk, engine, gpus, model, processes, requests)", k)
		}
	}
	if c.MinFreeDiskMB < 0 || c.MaxGPUMemUsedMB < 0 {
		return fmt.Errorf("min_free_disk_mb and max_gpu_mem_used_mb must not be negative")
	}
	switch c.Leftovers {
	case "", leftoversWarn, leftoversFail:
	default:
		return fmt.Errorf("leftovers %q: want warn or fail", c.Leftovers)
	}
	return nil
}

// What leftover servers and containers do (PreflightConfig.Leftovers).
const (
	leftoversWarn = "warn"
	leftoversFail = "fail"
)

var preflightKind = workflow.NewStepKind("preflight",
	"check engine, model, request set, GPUs, leftover processes and disk before anything starts",
	func() *PreflightConfig {
		return &PreflightConfig{Check: []string{"engine", "model", "requests", "gpus", "processes", "disk"}, MinFreeDiskMB: 100, MaxGPUMemUsedMB: 4096, Leftovers: leftoversWarn}
	},
	runPreflight)

func runPreflight(ctx context.Context, rc *workflow.RunContext, d *Deps, c *PreflightConfig) error {
	var problems []string
	for _, check := range c.Check {
		switch check {
		case "engine":
			if d.Engine == nil {
				problems = append(problems, "no engine configured")
			}
		case "model":
			if d.Model == "" {
				problems = append(problems, "no model requested")
			}
			// Weights are loaded, never downloaded, inside startup: an
			// engine that can say confirms they are on this machine now,
			// before the baseline, and records which they are.
			if wc, ok := d.Engine.(engines.WeightsChecker); ok && !d.External {
				if _, err := wc.CheckWeights(ctx); err != nil {
					problems = append(problems, err.Error())
				}
			}
		case "disk":
			var st syscall.Statfs_t
			if err := syscall.Statfs(rc.Out.Dir(), &st); err == nil {
				free := int64(st.Bavail) * int64(st.Bsize) / (1 << 20)
				if free < int64(c.MinFreeDiskMB) {
					problems = append(problems, fmt.Sprintf("only %d MB free for the archive, need %d", free, c.MinFreeDiskMB))
				}
			}
		case "gpus":
			if d.Source == nil {
				rc.Log.Warn().Msg("preflight: no power source; energy metrics will be not applicable")
				continue
			}
			problems = append(problems, busyGPUs(ctx, d, c.MaxGPUMemUsedMB)...)
		case "processes":
			problems = append(problems, leftovers(ctx, rc, d, c)...)
		case "requests":
			// Frozen and checked by Prepare before the run started.
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("preflight failed: %s", strings.Join(problems, "; "))
	}
	return nil
}

// busyGPUs names the devices that already hold more memory than maxMB
// (0: no limit) before the engine starts. An external engine (a server
// already running) holds its GPUs' memory already: nothing is checked.
func busyGPUs(ctx context.Context, d *Deps, maxMB int) []string {
	if maxMB <= 0 || d.External {
		return nil
	}
	rs, err := d.Source.Read(ctx)
	if err != nil {
		return []string{fmt.Sprintf("reading the GPUs: %v", err)}
	}
	var out []string
	for _, r := range rs {
		if r.MemUsedBytes > int64(maxMB)<<20 {
			out = append(out, fmt.Sprintf("device %s already has %d MB of memory in use (limit %d MB: a leftover process?)", r.Device, r.MemUsedBytes>>20, maxMB))
		}
	}
	return out
}

// leftovers is the processes check: what else may hold the GPUs or the
// engine's port before the run. A managed engine's port must be free
// (something answering there is a leftover server), and an engine a killed
// joulebench left running is named with how to stop it: both are
// problems. Other inference servers (by their process names) and running
// containers are named in the log, and are problems when c.Leftovers is
// fail (for a managed engine: the server of --engine-url is expected).
// The server of --engine-url on this machine (the processes listening on
// its port, and their process groups) is the server under test, never
// "another" one.
func leftovers(ctx context.Context, rc *workflow.RunContext, d *Deps, c *PreflightConfig) []string {
	var problems, found []string
	if d.Engine != nil && !d.External {
		if u, err := url.Parse(d.Engine.BaseURL()); err == nil && u.Host != "" {
			if conn, err := net.DialTimeout("tcp", u.Host, 300*time.Millisecond); err == nil {
				conn.Close()
				problems = append(problems, fmt.Sprintf("%s is already in use (a leftover engine process?)", u.Host))
			}
		}
	}
	if d.PidDir != "" {
		orphans, err := process.Orphans(d.PidDir)
		if err != nil {
			rc.Log.Warn().Err(err).Msg("preflight: engine pid files")
		}
		for _, o := range orphans {
			problems = append(problems, "a leftover "+o.String())
		}
	}
	var looked []string
	if len(d.ServerNames) > 0 {
		servers, ok := process.FindServers(d.ServerNames)
		if !ok {
			rc.Log.Info().Msg("preflight: this system cannot list processes: other inference servers not looked for")
		} else {
			looked = append(looked, "other inference server")
		}
		target, others := process.SplitUnderTest(servers, externalListeners(d))
		for _, p := range target {
			rc.Log.Info().Msg("preflight: the server under test (--engine-url): " + p.String())
		}
		for _, p := range others {
			found = append(found, "inference server "+p.String())
		}
	}
	containers, listed := runningContainers(ctx, rc, d.ContainerTools)
	found = append(found, containers...)
	if len(listed) > 0 {
		looked = append(looked, "running container ("+strings.Join(listed, ", ")+")")
	}
	for _, f := range found {
		rc.Log.Warn().Msg("preflight: found " + f)
	}
	if len(found) == 0 && len(looked) > 0 {
		// Only what could be looked for: a tool that cannot list its
		// containers said so above.
		rc.Log.Info().Msg("preflight: no " + strings.Join(looked, " or ") + " found")
	}
	if c.Leftovers == leftoversFail && !d.External && len(found) > 0 {
		problems = append(problems, fmt.Sprintf("found %s (leftovers: fail)", strings.Join(found, "; ")))
	}
	return problems
}

// externalListeners are the processes listening on the port of an
// external engine's URL when its host is this machine (nil for a managed
// engine, a remote host, or a system that cannot say).
func externalListeners(d *Deps) []int {
	if d.Engine == nil || !d.External {
		return nil
	}
	return process.URLListeners(d.Engine.BaseURL())
}

// runningContainers lists the running containers of each container tool
// installed ("docker: 1a2b3c image (name)") and the tools that listed
// them; a tool that cannot list them (no daemon, no permission) is noted
// in the log and is not among listed.
func runningContainers(ctx context.Context, rc *workflow.RunContext, tools []string) (out, listed []string) {
	for _, tool := range tools {
		path, err := exec.LookPath(tool)
		if err != nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		b, err := exec.CommandContext(cctx, path, "ps", "--format", "{{.ID}} {{.Image}} ({{.Names}})").Output()
		cancel()
		if err != nil {
			rc.Log.Info().Str("tool", tool).Err(err).Msg("preflight: cannot list running containers: containers not looked for")
			continue
		}
		listed = append(listed, filepath.Base(tool))
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, "container "+filepath.Base(tool)+": "+l)
			}
		}
	}
	return out, listed
}

// reportedTensorParallel is the engine.extra key that keeps the tensor
// parallel a started engine reported when the devices measured cannot
// hold it (devicesHeld).
const reportedTensorParallel = "reported_tensor_parallel"

// devicesHeld holds run.json as it now stands to the rules the archive's
// reader holds its devices to (archive.CheckDevices); the steps call it
// where what it says changes once the run has begun: the engine's tensor
// parallel, once started (start_engine, verify_engine), and the devices,
// once listed (monitor). The runner checked what it knew before anything
// was measured (a deployment's devices, the parallelism the options
// give). A tensor parallel the devices measured cannot hold fails the
// run, its reason naming the parallelism and the devices; the value moves
// to engine.extra.reported_tensor_parallel, so that the failed run's
// archive, raw data kept, is still read. Any other rule broken fails the
// run as it is.
func devicesHeld(rc *workflow.RunContext) error {
	m := rc.Out.Meta()
	err := archive.CheckDevices(&m)
	if err == nil {
		return nil
	}
	tp := m.Engine.TensorParallel
	m.Engine.TensorParallel = 0
	if tp == 0 || archive.CheckDevices(&m) != nil {
		return fmt.Errorf("the run's devices: %w", err)
	}
	if uerr := rc.Out.UpdateMeta(func(m *record.Meta) {
		if m.Engine.Extra == nil {
			m.Engine.Extra = map[string]any{}
		}
		m.Engine.Extra[reportedTensorParallel] = tp
		m.Engine.TensorParallel = 0
	}); uerr != nil {
		return errors.Join(fmt.Errorf("the engine's parallelism: %w", err), archiveErr(rc, uerr))
	}
	return fmt.Errorf("the engine's parallelism: %w", err)
}
