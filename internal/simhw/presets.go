package simhw

import (
	"fmt"
	"slices"
	"strings"
)

// Sources named by the presets (docs/methodology.md lists them in full).
const (
	srcH100   = "NVIDIA H100 Tensor Core GPU datasheet (SXM5: 80 GB HBM3, 3.35 TB/s, 989 TFLOPS dense BF16, up to 700 W)"
	srcH200   = "NVIDIA H200 Tensor Core GPU datasheet (SXM: 141 GB HBM3e, 4.8 TB/s, 989 TFLOPS dense BF16, up to 700 W)"
	srcA100   = "NVIDIA A100 Tensor Core GPU datasheet (SXM4 80 GB: HBM2e 2,039 GB/s, 312 TFLOPS dense BF16, 400 W)"
	srcB200   = "NVIDIA HGX B200 specifications (per GPU: 180 GB HBM3e, 8 TB/s, 2.25 PFLOPS dense BF16, 1,000 W)"
	srcClocks = "nvidia-smi -q -d CLOCK on an H200 SXM (awslabs/amazon-eks-ami#1985): 345 MHz idle, 1,980 MHz max graphics clock"
	srcHBM    = "HBM access energy about 3.9 pJ/bit (O'Connor et al., Fine-Grained DRAM, MICRO 2017): 31 pJ/byte"
	srcDVFS   = "voltage flat at the bottom of the DVFS range and rising with the clock above it: the U-shaped energy-frequency curve of arXiv 2501.08219 (42 % less energy for 1-6 % more latency) and the decode power of arXiv 2605.11999 (137-300 W of 700 W on H200); knee and v_min are assumptions"
	srcIdle   = "idle, loading and ready power are typical readings, assumptions of the model (joulebench measures the real idle baseline on hardware)"
	srcFLOPE  = "e_flop chosen so that a compute-bound prefill at full clock draws about the TDP (firmware holds large GEMMs at the limit): e_flop = (TDP - idle - P_sm)/(peak FLOPS · 0.7)"
)

// hbmJPerByte is e_mem for every preset (srcHBM).
const hbmJPerByte = 3.9e-12 * 8

// GPUs are the GPU presets, in the order `devices --sim` lists them.
func GPUs() []GPU {
	return []GPU{
		{
			Name: "h100-sxm", Product: "H100 SXM5 80GB",
			MemBandwidth: 3.35e12, PeakFLOPS: 989e12, MemoryBytes: 80e9,
			TDPW: 700, MinLimitW: 200, IdleW: 70, LoadW: 160, ReadyExtraW: 20,
			MaxClockMHz: 1980, MinClockMHz: 210, IdleClockMHz: 345,
			KneeRatio: 0.5, VMin: 0.7,
			SMActiveW:   80,
			FLOPEnergyJ: (700 - 70 - 80) / (989e12 * 0.7), // 0.79 pJ (srcFLOPE)
			// e_mem: srcHBM.
			MemEnergyJPerByte: hbmJPerByte,
			Sources:           []string{srcH100, srcClocks, srcHBM, srcDVFS, srcIdle, srcFLOPE},
		},
		{
			Name: "h200-sxm", Product: "H200 SXM 141GB",
			MemBandwidth: 4.8e12, PeakFLOPS: 989e12, MemoryBytes: 141e9,
			TDPW: 700, MinLimitW: 200, IdleW: 75, LoadW: 165, ReadyExtraW: 20,
			MaxClockMHz: 1980, MinClockMHz: 210, IdleClockMHz: 345,
			KneeRatio: 0.5, VMin: 0.7,
			SMActiveW:         80,
			FLOPEnergyJ:       (700 - 75 - 80) / (989e12 * 0.7), // 0.79 pJ (srcFLOPE)
			MemEnergyJPerByte: hbmJPerByte,
			Sources:           []string{srcH200, srcClocks, srcHBM, srcDVFS, srcIdle, srcFLOPE},
		},
		{
			Name: "a100-sxm4", Product: "A100 SXM4 80GB",
			MemBandwidth: 2.039e12, PeakFLOPS: 312e12, MemoryBytes: 80e9,
			TDPW: 400, MinLimitW: 100, IdleW: 55, LoadW: 110, ReadyExtraW: 15,
			MaxClockMHz: 1410, MinClockMHz: 210, IdleClockMHz: 210,
			KneeRatio: 0.6, VMin: 0.7,
			SMActiveW:         40,
			FLOPEnergyJ:       (400 - 55 - 40) / (312e12 * 0.7), // 1.40 pJ (srcFLOPE)
			MemEnergyJPerByte: hbmJPerByte,
			Sources:           []string{srcA100, srcHBM, srcDVFS, srcIdle, srcFLOPE},
		},
		{
			Name: "b200", Product: "B200 (HGX) 180GB",
			MemBandwidth: 8e12, PeakFLOPS: 2250e12, MemoryBytes: 180e9,
			TDPW: 1000, MinLimitW: 300, IdleW: 140, LoadW: 260, ReadyExtraW: 30,
			MaxClockMHz: 1965, MinClockMHz: 210, IdleClockMHz: 345,
			KneeRatio: 0.5, VMin: 0.7,
			SMActiveW:         90,
			FLOPEnergyJ:       (1000 - 140 - 90) / (2250e12 * 0.7), // 0.49 pJ (srcFLOPE)
			MemEnergyJPerByte: hbmJPerByte,
			Sources:           []string{srcB200, srcHBM, srcDVFS, srcIdle, srcFLOPE},
		},
	}
}

// Model sources.
const (
	srcLlama8B  = "meta-llama/Llama-3.1-8B config.json: 32 layers, 32 heads, 8 KV heads, head dim 128, 8.03 B parameters, 131,072 context"
	srcLlama70B = "meta-llama/Llama-3.1-70B config.json: 80 layers, 64 heads, 8 KV heads, head dim 128, 70.6 B parameters; served on 4 GPUs of 80 GB (141 GB of BF16 weights)"
	srcMixtral  = "mistralai/Mixtral-8x7B-v0.1 config.json: 32 layers, 32 heads, 8 KV heads, head dim 128, 8 experts, 2 per token; 46.7 B parameters, 12.9 B active (Mixtral of Experts, arXiv 2401.04088)"
)

// Models are the model presets, in the order `devices --sim` lists them.
func Models() []Model {
	// Mixtral: total = shared + 8·e, active = shared + 2·e, so
	// e = (46.7 - 12.9)/6 = 5.633 B per expert (over all layers).
	const mixtralExpert = (46.7e9 - 12.9e9) / 6
	return []Model{
		{Name: "llama-3.1-8b", ServedName: "sim-llama-3.1-8b", Params: 8.03e9, ActiveParams: 8.03e9,
			Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, BytesPerParam: 2, TensorParallel: 1, MaxModelLen: 131072,
			Sources: []string{srcLlama8B}},
		{Name: "llama-3.1-70b", ServedName: "sim-llama-3.1-70b", Params: 70.6e9, ActiveParams: 70.6e9,
			Layers: 80, Heads: 64, KVHeads: 8, HeadDim: 128, BytesPerParam: 2, TensorParallel: 4, MaxModelLen: 131072,
			Sources: []string{srcLlama70B}},
		{Name: "mixtral-8x7b", ServedName: "sim-mixtral-8x7b", Params: 46.7e9, ActiveParams: 12.9e9,
			Experts: 8, ExpertsPerToken: 2, ExpertParams: mixtralExpert,
			Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, BytesPerParam: 2, TensorParallel: 2, MaxModelLen: 32768,
			Sources: []string{srcMixtral}},
	}
}

// FindGPU is the GPU preset name, or an error listing them.
func FindGPU(name string) (GPU, error) {
	gs := GPUs()
	if i := slices.IndexFunc(gs, func(g GPU) bool { return g.Name == name }); i >= 0 {
		return gs[i], nil
	}
	names := make([]string, len(gs))
	for i, g := range gs {
		names[i] = g.Name
	}
	return GPU{}, fmt.Errorf("%q is not a simulated GPU (%s)", name, strings.Join(names, ", "))
}

// FindModel is the model preset name, or an error listing them.
func FindModel(name string) (Model, error) {
	ms := Models()
	if i := slices.IndexFunc(ms, func(m Model) bool { return m.Name == name }); i >= 0 {
		return ms[i], nil
	}
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return Model{}, fmt.Errorf("%q is not a simulated model (%s)", name, strings.Join(names, ", "))
}
