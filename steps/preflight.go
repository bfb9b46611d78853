package steps

import (
	"fmt"

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

var preflightKind = workflow.StepKind{
	Name: "preflight",
	Doc:  "check engine, model, request set, GPUs, leftover processes and disk before anything starts",
	NewConfig: func() any {
		return &PreflightConfig{Check: []string{"engine", "model", "requests", "gpus", "processes", "disk"}, MinFreeDiskMB: 100, MaxGPUMemUsedMB: 4096}
	},
}
