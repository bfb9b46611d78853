package sim

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/joulebench/joulebench/internal/simhw"
	"github.com/joulebench/joulebench/telemetry"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// The hardware model's settings: which GPU and which model the simulator
// stands for (internal/simhw presets). Neither given: the toy model of
// the default run (DefaultConfig), named ToyPreset.
const (
	FlagGPU   = "sim-gpu"
	FlagModel = "sim-model"
	// ToyPreset names the default run's model in run.json and listings:
	// fixed step times and a power that follows the batch, not derived
	// from any hardware.
	ToyPreset = "toy"
	// DefaultHWGPU and DefaultHWModel complete a hardware preset when only
	// one of the two is given.
	DefaultHWGPU   = "h100-sxm"
	DefaultHWModel = "llama-3.1-8b"
)

// Serving constants of a hardware preset, as vLLM serves by default.
const (
	// hwMemUtil is the share of each GPU's memory the engine takes
	// (vLLM's --gpu-memory-utilization default, 0.9): weights, then the
	// KV cache in what is left.
	hwMemUtil = 0.9
	// hwSlots is the most sequences in a batch (vLLM's --max-num-seqs
	// default, 256).
	hwSlots = 256
)

// WithHW returns c and g set up for gpuName and modelName (either may be
// empty: DefaultHWGPU, DefaultHWModel): the engine's steps and the GPUs'
// power follow the hardware model, at real time (Speed 1), with its
// tensor parallelism, KV cache and model id; g's devices are the preset's
// boards, as many as the tensor-parallel size.
func WithHW(c Config, g simtel.Config, gpuName, modelName string) (Config, simtel.Config, error) {
	if gpuName == "" {
		gpuName = DefaultHWGPU
	}
	if modelName == "" {
		modelName = DefaultHWModel
	}
	gpu, err := simhw.FindGPU(gpuName)
	if err != nil {
		return c, g, fmt.Errorf("--%s: %w", FlagGPU, err)
	}
	model, err := simhw.FindModel(modelName)
	if err != nil {
		return c, g, fmt.Errorf("--%s: %w", FlagModel, err)
	}
	setup, err := simhw.NewSetup(gpu, model)
	if err != nil {
		return c, g, fmt.Errorf("--%s %s --%s %s: %w", FlagGPU, gpuName, FlagModel, modelName, err)
	}
	c.HW = &setup
	c.Model = model.ServedName
	c.TensorParallel = setup.TP
	c.Speed = 1
	c.Slots = hwSlots
	c.MemFrac = hwMemUtil
	free := float64(setup.TP)*hwMemUtil*float64(gpu.MemoryBytes) - model.Params*model.BytesPerParam
	c.KVCacheTokens = int(free / model.KVBytesPerToken())
	c.MaxModelLen = min(model.MaxModelLen, c.KVCacheTokens)

	g.Devices = setup.TP
	g.IdleW, g.MaxW, g.LoadW, g.ReadyExtraW = gpu.IdleW, gpu.TDPW, gpu.LoadW, gpu.ReadyExtraW
	g.MemTotalBytes = gpu.MemoryBytes
	g.DeviceName = "Simulated " + gpu.Product
	g.ClockMaxMHz, g.ClockMinMHz, g.ClockIdleMHz, g.LimitMinW = gpu.MaxClockMHz, gpu.MinClockMHz, gpu.IdleClockMHz, gpu.MinLimitW
	return c, g, nil
}

// hwExtra is what run.json's engine.extra says of the hardware model.
func (c Config) hwExtra(extra map[string]any) {
	if c.HW == nil {
		extra["sim_hardware"] = ToyPreset
		return
	}
	s := c.HW
	extra["sim_hardware"] = s.GPU.Name + "/" + s.Model.Name
	extra["sim_gpu"] = s.GPU.Name
	extra["sim_model"] = s.Model.Name
	extra["sim_gpu_product"] = s.GPU.Product
	extra["sim_efficiency"] = map[string]any{
		"bandwidth": s.Eff.Bandwidth, "decode_flops": s.Eff.DecodeFLOPs, "prefill_flops": s.Eff.PrefillFLOPs, "host_s": s.Eff.HostS,
	}
}

// GPUConfigFor is the configuration of the simulated GPUs that a run with
// the engine settings s gets, known before its engine is built (the GPU
// settings are checked against their range first): a hardware preset's
// boards, else the toy model's GPUs; seeded with seed.
func GPUConfigFor(s map[string]string, seed int64) (simtel.Config, error) {
	g := simtel.DefaultConfig()
	g.Seed = seed
	if gpu, model := s[FlagGPU], s[FlagModel]; gpu != "" || model != "" {
		_, hw, err := WithHW(DefaultConfig(), g, gpu, model)
		return hw, err
	}
	return g, nil
}

// AgentGPUs are the simulated GPUs an agent serves (joulebench agent
// --telemetry sim): the hardware preset gpu/model's boards (the toy
// model's when both are empty), following the simulated engine whose
// server root is engineURL (joulebench serve-sim on that node; empty: no
// engine, idle GPUs), read every 200 ms until ctx is done.
func AgentGPUs(ctx context.Context, gpu, model, engineURL string) (func(telemetry.Clock) telemetry.Source, error) {
	cfg, err := GPUConfigFor(map[string]string{FlagGPU: gpu, FlagModel: model}, 1)
	if err != nil {
		return nil, err
	}
	u := strings.TrimSuffix(strings.TrimSpace(engineURL), "/")
	if u != "" {
		u += "/metrics"
	}
	load := simtel.Follow(ctx, &http.Client{Timeout: 2 * time.Second}, u, 200*time.Millisecond)
	return simtel.GPUs(cfg, load), nil
}
