package nvml

import (
	"strings"
	"testing"
)

func TestParseGPUs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "|"-joined, or "error: substring"
	}{
		{"", ""},
		{"all", ""},
		{" 0, 2 ,GPU-ab", "0|2|GPU-ab"},
		{"01", "1"},
		{"MIG-1234", "MIG-1234"},
		{"0,x", "error: neither an index nor a UUID"},
		{"0,,1", "error: empty entry"},
		{"-1", "error: negative index"},
		{"1,01", "error: listed twice"},
	} {
		got, err := ParseGPUs(tc.in)
		if wantErr, ok := strings.CutPrefix(tc.want, "error: "); ok {
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Errorf("ParseGPUs(%q) = %v, %v; want error %q", tc.in, got, err, wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, "|") != tc.want {
			t.Errorf("ParseGPUs(%q) = %v, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestInventorySummary(t *testing.T) {
	inv := Inventory{Driver: "550.54.15", CUDA: "12.4", Devices: []DeviceInfo{
		{ID: "gpu0", Name: "NVIDIA H100 80GB HBM3", Architecture: "hopper", Method: MethodCounter, PowerField: PowerFieldInstant},
		{ID: "gpu1", Name: "Tesla P100", Architecture: "pascal", Method: MethodPower, PowerField: PowerFieldUsage},
	}}
	want := "driver 550.54.15 (CUDA 12.4); gpu0 NVIDIA H100 80GB HBM3 (hopper): counter, NVML_FI_DEV_POWER_INSTANT; gpu1 Tesla P100 (pascal): power, nvmlDeviceGetPowerUsage"
	if got := inv.Summary(); got != want {
		t.Errorf("Summary =\n%s\nwant\n%s", got, want)
	}
}
