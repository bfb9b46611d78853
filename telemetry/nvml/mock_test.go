//go:build cgo

package nvml

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
)

// gpuModel is the identity a simulated device is given.
type gpuModel struct {
	name   string
	arch   gonvml.DeviceArchitecture
	memMiB uint64
}

// The H100 and H200 as go-nvml v0.13's mock/gpus describes them (h100.go:
// 81920 MB, h200.go: 144384 MB) and as nvidia-smi names them.
func h100() gpuModel { return gpuModel{"NVIDIA H100 80GB HBM3", gonvml.DEVICE_ARCH_HOPPER, 81920} }
func h200() gpuModel { return gpuModel{"NVIDIA H200 141GB HBM3e", gonvml.DEVICE_ARCH_HOPPER, 144384} }

// newDGX is go-nvml's simulated DGX A100 (8 GPUs, driver 550.54.15, CUDA
// 12.4) with every device renamed to m. go-nvml v0.12.9-0, the version
// joulebench builds with, has no DGX H100/H200 servers; its dgxa100 devices
// read Name, Architecture and MemoryInfo from their fields on every call,
// so setting the fields changes what NVML reports.
func newDGX(m gpuModel) *dgxa100.Server {
	srv := dgxa100.New()
	for _, nd := range srv.Devices {
		d := nd.(*dgxa100.Device)
		d.Name = m.name
		d.Architecture = m.arch
		d.MemoryInfo = gonvml.Memory{Total: m.memMiB << 20, Free: m.memMiB << 20}
	}
	return srv
}

func newDGXH100() *dgxa100.Server { return newDGX(h100()) }
func newDGXH200() *dgxa100.Server { return newDGX(h200()) }

// The fixture changes what the mock reports, for every device: a test
// that the overrides are read through the NVML interface.
func TestNewDGX(t *testing.T) {
	for _, tc := range []struct {
		srv      *dgxa100.Server
		name     string
		arch     gonvml.DeviceArchitecture
		totalMem uint64
	}{
		// 81920 MiB · 2^20 = 85 899 345 920 B; 144384 MiB · 2^20 = 151 397 597 184 B.
		{newDGXH100(), "NVIDIA H100 80GB HBM3", gonvml.DEVICE_ARCH_HOPPER, 85899345920},
		{newDGXH200(), "NVIDIA H200 141GB HBM3e", gonvml.DEVICE_ARCH_HOPPER, 151397597184},
	} {
		n, ret := tc.srv.DeviceGetCount()
		if ret != gonvml.SUCCESS || n != 8 {
			t.Fatalf("%s: %d devices, %v", tc.name, n, ret)
		}
		for i := range n {
			h, _ := tc.srv.DeviceGetHandleByIndex(i)
			name, _ := h.GetName()
			arch, _ := h.GetArchitecture()
			mem, _ := h.GetMemoryInfo()
			if name != tc.name || arch != tc.arch || mem.Total != tc.totalMem {
				t.Errorf("device %d = %q arch %d mem %d, want %q arch %d mem %d", i, name, arch, mem.Total, tc.name, tc.arch, tc.totalMem)
			}
		}
	}
}
