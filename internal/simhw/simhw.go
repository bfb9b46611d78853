// Package simhw is the simulator's physical model of a GPU serving a
// transformer: how long a scheduler step takes and how much power the GPU
// draws during it, at a clock that a locked-clock setting or a power limit
// may hold down. It is a model, not a measurement: every constant cites a
// spec sheet or a paper, or says that it is a calibration parameter chosen
// so that the model lands near published measurements
// (docs/methodology.md, "The simulator's hardware model").
//
// A step on one GPU of a tensor-parallel group of TP GPUs moves B bytes
// through memory and does F floating-point operations:
//
//	B = (weight bytes read + KV-cache bytes read and written) / TP
//	F = (2·active parameters·tokens + attention FLOPs) / TP
//
// At SM clock ratio r = f/f_max (memory clock fixed) the memory and compute
// times are
//
//	t_mem  = B / (BW·η_bw)
//	t_comp = F / (FLOPS·η_f·r)
//
// and the GPU time overlaps them imperfectly: t_gpu = (t_mem^4 +
// t_comp^4)^(1/4), within 19 % of the larger at the crossover and equal to
// it far from it (the roofline with a soft knee). The step adds a host
// time t_host (scheduling, sampling, launch gaps) during which the GPU
// waits: t_step = t_gpu + t_host. Memory-bound decode is therefore
// nearly insensitive to the clock until t_comp reaches t_mem; prefill is
// compute-bound and takes ~1/r longer.
//
// Power during the step, averaged over it:
//
//	P = P_idle + e_mem·B/t_step + P_sm·r·v(r)²·t_gpu/t_step + e_flop·v(r)²·F/t_step
//
// P_idle is the board at rest (leakage, fans, memory refresh); e_mem the
// energy per byte of HBM traffic; P_sm the power of SMs busy at full clock
// apart from their arithmetic (dynamic power ∝ f·V²); e_flop the energy of
// one tensor-core FLOP at full voltage (∝ V²). The voltage v(r), relative
// to its value at f_max, is flat at v_min below the knee of the DVFS curve
// and rises linearly to 1 above it. A power limit L lowers r to the highest
// ratio whose P is at most L, only when the demand at the allowed clock
// exceeds L; a locked clock caps r directly, bound or not.
package simhw

import (
	"fmt"
	"math"
)

// GPU is one simulated accelerator model: its spec-sheet figures and the
// model's power constants.
type GPU struct {
	// Name is the preset's name (--sim-gpu).
	Name string
	// Product is the board it models, for labels.
	Product string
	// MemBandwidth is peak HBM bandwidth, bytes/s (spec sheet).
	MemBandwidth float64
	// PeakFLOPS is dense BF16 tensor throughput at MaxClockMHz, FLOP/s
	// (spec sheet, without sparsity).
	PeakFLOPS float64
	// MemoryBytes is the device memory (spec sheet).
	MemoryBytes int64
	// TDPW is the default and highest power limit; MinLimitW the lowest.
	TDPW, MinLimitW float64
	// IdleW is the board at rest with no context; LoadW while weights
	// load; ReadyExtraW a loaded engine with no work above IdleW.
	IdleW, LoadW, ReadyExtraW float64
	// MaxClockMHz, MinClockMHz: the SM clock range; IdleClockMHz the
	// clock with no work.
	MaxClockMHz, MinClockMHz, IdleClockMHz float64
	// KneeRatio is the clock ratio below which the voltage stays at VMin
	// (relative to the voltage at MaxClockMHz).
	KneeRatio, VMin float64
	// SMActiveW is P_sm: SMs busy at full clock and voltage, apart from
	// tensor arithmetic.
	SMActiveW float64
	// FLOPEnergyJ is e_flop: one dense BF16 FLOP at full voltage.
	FLOPEnergyJ float64
	// MemEnergyJPerByte is e_mem: one byte of HBM traffic.
	MemEnergyJPerByte float64
	// Sources cites each figure.
	Sources []string
}

// Model is a served transformer: what a step reads and computes.
type Model struct {
	// Name is the preset's name (--sim-model); ServedName the model id
	// the simulated engine serves.
	Name, ServedName string
	// Params is every parameter; ActiveParams those one token uses (a
	// mixture of experts uses ExpertsPerToken of Experts).
	Params, ActiveParams float64
	// Experts and ExpertsPerToken describe a mixture of experts (0 for a
	// dense model); ExpertParams is the parameters of one expert summed
	// over layers.
	Experts, ExpertsPerToken int
	ExpertParams             float64
	// Layers, Heads, KVHeads and HeadDim give the KV cache and attention.
	Layers, Heads, KVHeads, HeadDim int
	// BytesPerParam of the weights and of the KV cache (2: BF16).
	BytesPerParam float64
	// TensorParallel is the GPUs it is served on by default.
	TensorParallel int
	// MaxModelLen is its context length.
	MaxModelLen int
	// Sources cites each figure.
	Sources []string
}

// Efficiencies are the model's calibration parameters: what share of the
// spec-sheet peaks a serving engine reaches, and its host time per step.
// They are not measured here: chosen so that the model lands near the
// published figures the calibration tests name.
type Efficiencies struct {
	// Bandwidth is η_bw, the share of peak HBM bandwidth decode kernels
	// reach.
	Bandwidth float64
	// DecodeFLOPs and PrefillFLOPs are η_f for small-batch decode GEMMs
	// and for large prefill GEMMs.
	DecodeFLOPs, PrefillFLOPs float64
	// HostS is t_host, seconds per step.
	HostS float64
}

// DefaultEfficiencies are the calibration used by every preset.
func DefaultEfficiencies() Efficiencies {
	return Efficiencies{Bandwidth: 0.7, DecodeFLOPs: 0.5, PrefillFLOPs: 0.7, HostS: 0.003}
}

// Setup is a model served on TP GPUs of one kind.
type Setup struct {
	GPU   GPU
	Model Model
	// TP is the tensor-parallel size (0: the model's default).
	TP  int
	Eff Efficiencies
}

// NewSetup is model served on gpu at the model's default parallelism with
// the default efficiencies; an error when its weights do not fit.
func NewSetup(gpu GPU, model Model) (Setup, error) {
	s := Setup{GPU: gpu, Model: model, TP: model.TensorParallel, Eff: DefaultEfficiencies()}
	if s.TP <= 0 {
		s.TP = 1
	}
	if w := s.WeightBytesPerGPU(); w > 0.9*float64(gpu.MemoryBytes) {
		return Setup{}, fmt.Errorf("simhw: %s does not fit on %d × %s: %.0f GB of weights per GPU of %.0f GB",
			model.Name, s.TP, gpu.Name, w/1e9, float64(gpu.MemoryBytes)/1e9)
	}
	return s, nil
}

// Work is what one scheduler step does.
type Work struct {
	// Decoding is the sequences producing one token; ContextTokens the
	// sum of their context lengths (prompt and tokens so far).
	Decoding, ContextTokens int
	// PrefillTokens is the prompt tokens prefilled in the step;
	// PrefillContext the sum over them of the tokens each attends to.
	PrefillTokens  int
	PrefillContext int
}

// Tokens is the tokens the step computes through the whole model.
func (w Work) Tokens() int { return w.Decoding + w.PrefillTokens }

// Point is a step at one clock: its time and one GPU's power.
type Point struct {
	// StepS is t_step; MemS, ComputeS and GPUS its parts.
	StepS, MemS, ComputeS, GPUS float64
	// PowerW is one GPU's mean power over the step (idle included).
	PowerW float64
	// Ratio is the SM clock ratio r; ClockMHz the clock.
	Ratio, ClockMHz float64
	// PowerCapped says the power limit held the clock below what was
	// allowed.
	PowerCapped bool
}

// KVBytesPerToken is the KV cache of one token over all layers and GPUs.
func (m Model) KVBytesPerToken() float64 {
	return 2 * float64(m.Layers*m.KVHeads*m.HeadDim) * m.BytesPerParam
}

// WeightBytesPerGPU is one GPU's share of the weights.
func (s Setup) WeightBytesPerGPU() float64 {
	return s.Model.Params * s.Model.BytesPerParam / float64(s.TP)
}

// weightBytesRead is the weight bytes one step reads (all GPUs): every
// dense weight, and of a mixture of experts the experts that its tokens
// route to, E·(1-(1-k/E)^n) expected of E for n tokens picking k each.
func (m Model) weightBytesRead(tokens int) float64 {
	if tokens <= 0 {
		return 0
	}
	if m.Experts <= 0 {
		return m.Params * m.BytesPerParam
	}
	e, k := float64(m.Experts), float64(m.ExpertsPerToken)
	touched := e * (1 - math.Pow(1-k/e, float64(tokens)))
	dense := m.Params - e*m.ExpertParams
	return (dense + touched*m.ExpertParams) * m.BytesPerParam
}

// bytesFLOPs is one GPU's B and F for w.
func (s Setup) bytesFLOPs(w Work) (b, f float64) {
	m := s.Model
	kv := m.KVBytesPerToken()
	b = m.weightBytesRead(w.Tokens()) + kv*float64(w.ContextTokens+w.Tokens())
	// Attention: QK^T and AV, 2 FLOPs a multiply-add, per attended token.
	attn := 4 * float64(m.Layers*m.Heads*m.HeadDim) * float64(w.ContextTokens+w.PrefillContext)
	f = 2*m.ActiveParams*float64(w.Tokens()) + attn
	tp := float64(s.TP)
	return b / tp, f / tp
}

// voltage is v(r), relative to the voltage at the highest clock.
func (g GPU) voltage(r float64) float64 {
	if r <= g.KneeRatio {
		return g.VMin
	}
	return g.VMin + (1-g.VMin)*math.Min(1, (r-g.KneeRatio)/(1-g.KneeRatio))
}

// MinRatio is the lowest clock ratio.
func (g GPU) MinRatio() float64 { return g.MinClockMHz / g.MaxClockMHz }

// At is w at clock ratio r (clamped to the GPU's range), with no power
// limit.
func (s Setup) At(w Work, r float64) Point {
	g := s.GPU
	r = math.Max(g.MinRatio(), math.Min(1, r))
	b, f := s.bytesFLOPs(w)
	p := Point{Ratio: r, ClockMHz: r * g.MaxClockMHz}
	if w.Tokens() == 0 {
		p.PowerW = g.IdleW + g.ReadyExtraW
		return p
	}
	eta := s.Eff.DecodeFLOPs
	if w.PrefillTokens > w.Decoding {
		eta = s.Eff.PrefillFLOPs
	}
	p.MemS = b / (g.MemBandwidth * s.Eff.Bandwidth)
	p.ComputeS = f / (g.PeakFLOPS * eta * r)
	p.GPUS = math.Pow(math.Pow(p.MemS, 4)+math.Pow(p.ComputeS, 4), 0.25)
	p.StepS = p.GPUS + s.Eff.HostS
	v2 := g.voltage(r) * g.voltage(r)
	p.PowerW = g.IdleW + (g.MemEnergyJPerByte*b+g.SMActiveW*r*v2*p.GPUS+g.FLOPEnergyJ*v2*f)/p.StepS
	return p
}

// Operate is w under a locked clock (lockRatio, 0 or ≥1: not locked) and
// a power limit limitW (0: the TDP): the highest allowed clock, lowered
// by the limit only when the demand there exceeds it (bisection on r:
// power rises with the clock).
func (s Setup) Operate(w Work, lockRatio, limitW float64) Point {
	g := s.GPU
	hi := 1.0
	if lockRatio > 0 && lockRatio < 1 {
		hi = math.Max(g.MinRatio(), lockRatio)
	}
	if limitW <= 0 {
		limitW = g.TDPW
	}
	p := s.At(w, hi)
	if p.PowerW <= limitW || w.Tokens() == 0 {
		return p
	}
	lo := g.MinRatio()
	if s.At(w, lo).PowerW > limitW {
		p = s.At(w, lo) // the limit is below what the lowest clock draws: the firmware holds the lowest clock
		p.PowerCapped = true
		return p
	}
	for range 40 {
		mid := (lo + hi) / 2
		if s.At(w, mid).PowerW > limitW {
			hi = mid
		} else {
			lo = mid
		}
	}
	p = s.At(w, lo)
	p.PowerCapped = true
	return p
}
