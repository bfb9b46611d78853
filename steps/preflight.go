package steps

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/joulebench/joulebench/engines"
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
	return nil
}

var preflightKind = workflow.NewStepKind("preflight",
	"check engine, model, request set, GPUs, leftover processes and disk before anything starts",
	func() *PreflightConfig {
		return &PreflightConfig{Check: []string{"engine", "model", "requests", "gpus", "processes", "disk"}, MinFreeDiskMB: 100, MaxGPUMemUsedMB: 4096}
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
			// A managed engine's port must be free: something answering
			// there is a leftover server that would share the GPUs.
			if d.Engine == nil || d.External {
				continue
			}
			if u, err := url.Parse(d.Engine.BaseURL()); err == nil && u.Host != "" {
				if conn, err := net.DialTimeout("tcp", u.Host, 300*time.Millisecond); err == nil {
					conn.Close()
					problems = append(problems, fmt.Sprintf("%s is already in use (a leftover engine process?)", u.Host))
				}
			}
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
// (0: no limit) before the engine starts.
func busyGPUs(ctx context.Context, d *Deps, maxMB int) []string {
	if maxMB <= 0 {
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
