package ipmi

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

func TestParse(t *testing.T) {
	tests := []struct {
		file    string
		want    Reading
		wantErr string
	}{
		{"activated.txt", Reading{InstantW: 412, MinW: 96, MaxW: 690, AvgW: 388, Active: true}, ""},
		{"deactivated.txt", Reading{}, ""},
		// "lots Watts" is on line 2 (the output starts with an empty line).
		{"garbled.txt", Reading{}, `line 2: Instantaneous power reading: "lots Watts" is not a number of Watts`},
		{"unsupported.txt", Reading{}, `no "Instantaneous power reading" line`},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			r, err := Parse(b)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || r != tc.want {
				t.Fatalf("Parse = %+v, %v; want %+v", r, err, tc.want)
			}
		})
	}
}

// ipmitool run as a subprocess: the fake prints a fixture.
func TestSourceRunsIPMItool(t *testing.T) {
	fake, err := filepath.Abs("testdata/fake-ipmitool")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		fixture string
		rc      string
		args    []string
		wantW   float64
		wantErr string
	}{
		{"in band", "activated.txt", "0", nil, 412, ""},
		{"out of band", "activated.txt", "0", []string{"-I", "lanplus", "-H", "bmc1", "-U", "admin", "-E"}, 412, ""},
		{"deactivated", "deactivated.txt", "0", nil, 0, "power reading state is deactivated"},
		{"no DCMI", "unsupported.txt", "1", nil, 0, "DCMI request failed because: Invalid command (c1)"},
		{"password on the command line", "activated.txt", "0", []string{"-H", "bmc1", "-P", "hunter2"}, 0, "put it in IPMI_PASSWORD and pass -E"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fixture, _ := filepath.Abs(filepath.Join("testdata", tc.fixture))
			t.Setenv("FAKE_IPMITOOL_OUT", fixture)
			t.Setenv("FAKE_IPMITOOL_RC", tc.rc)
			src, err := Open(context.Background(), Options{Binary: fake, Args: tc.args})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("error %v, want %q (and no password)", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rs, err := src.Read(context.Background())
			if err != nil || len(rs) != 1 || rs[0].PowerW != tc.wantW || rs[0].Device != "ipmi0" {
				t.Fatalf("read %+v, %v; want %g W", rs, err, tc.wantW)
			}
			devs, _ := src.Devices(context.Background())
			if devs[0].Domain != record.DomainNode {
				t.Errorf("device %+v, want domain node", devs[0])
			}
			if tc.args != nil && devs[0].Host != "bmc1" {
				t.Errorf("host %q, want bmc1", devs[0].Host)
			}
		})
	}
}

func TestMissingBinary(t *testing.T) {
	_, err := Open(context.Background(), Options{Binary: "joulebench-no-such-ipmitool"})
	if err == nil || !strings.Contains(err.Error(), "not found (install ipmitool, or give its path with --ipmitool)") {
		t.Fatalf("error %v", err)
	}
}
