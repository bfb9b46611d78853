package record

import "math"

// Physical bounds of a power reading, the one place the live sampler
// (telemetry), the archive reader and the importer take them from. They
// are what one device of a domain can draw at all, far above any
// plausible reading (the profiles' power checks judge plausibility): a
// value above them is a broken reading or an edited file, never power.
// docs/archive-v1.md ("Bounds") states them.
const (
	// MaxGPUPowerW bounds one GPU board (the largest boards today draw
	// under 1.5 kW; a module with its CPU under 3 kW).
	MaxGPUPowerW = 5_000.0
	// MaxCPUPowerW bounds one CPU package (today's largest: about 500 W).
	MaxCPUPowerW = 2_000.0
	// MaxDRAMPowerW bounds the memory of one CPU package.
	MaxDRAMPowerW = 2_000.0
	// MaxNodePowerW bounds one node (a host with eight 1 kW GPUs draws
	// about 15 kW).
	MaxNodePowerW = 100_000.0
	// MaxEnergyJ bounds the magnitude of a cumulative energy counter
	// (power.csv energy_j): 2^43 J, where the spacing of float64 values
	// reaches 1 mJ (2^43 × 2^-52 = 2^-9 J ≈ 2 mJ just above it), so that a
	// stage's energy, a difference of two readings, is still exact to the
	// millijoule. A GPU at 1 kW takes 279 years to count that far.
	MaxEnergyJ = 1 << 43
)

// MaxPowerW is the physical bound in W of one device of domain (""
// reads as DomainGPU); ok is false for a domain that is not one of
// Domains.
func MaxPowerW(domain string) (w float64, ok bool) {
	switch domain {
	case DomainGPU, "":
		return MaxGPUPowerW, true
	case DomainCPU:
		return MaxCPUPowerW, true
	case DomainDRAM:
		return MaxDRAMPowerW, true
	case DomainNode:
		return MaxNodePowerW, true
	}
	return math.NaN(), false
}
