// Package nvmltest is go-nvml's simulated DGX A100 (its mock) with GPUs
// whose power limits and locked clocks hold state, for tests of GPU
// settings against NVML's interface. It needs cgo, as go-nvml does.
package nvmltest
