package report

import (
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

func hostsRun(devs ...record.Device) *record.Run {
	return &record.Run{Meta: record.Meta{RunID: "r", Hardware: record.Hardware{Devices: devs}}}
}

// SeveralHosts: GPUs over more than one host, or any with a role; other
// domains (a node meter on another host) do not count.
func TestSeveralHosts(t *testing.T) {
	for _, tc := range []struct {
		name string
		devs []record.Device
		want bool
	}{
		{"no device", nil, false},
		{"one host", []record.Device{{ID: "a", Host: "h"}, {ID: "b", Host: "h"}}, false},
		{"two hosts", []record.Device{{ID: "a", Host: "h"}, {ID: "b", Host: "k"}}, true},
		{"a role on one host", []record.Device{{ID: "a", Host: "h", Role: record.RoleReplica}}, true},
		{"a node meter elsewhere", []record.Device{{ID: "a", Host: "h"}, {ID: "n", Host: "k", Domain: record.DomainNode}}, false},
	} {
		if got := SeveralHosts(hostsRun(tc.devs...).Meta); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Hosts reads the profile's energy_by_host: shares of the total; the
// J/token share only without prefill/decode roles; a note instead of rows
// when the value is missing or not applicable.
//
//	a: 600 J, b: 400 J: shares 0.6 and 0.4 of 1000 J; 100 tokens: 6 and
//	4 J/token.
func TestHosts(t *testing.T) {
	two := []record.Device{{ID: "g0", Host: "a"}, {ID: "g1", Host: "b"}}
	list := []any{
		map[string]any{"host": "a", "role": "", "devices": []any{"g0"}, "energy_j": 600.0, "mean_power_w": 60.0},
		map[string]any{"host": "b", "role": "", "devices": []any{"g1"}, "energy_j": 400.0, "mean_power_w": 40.0},
	}
	res := &record.Results{Values: map[string]record.Result{HostEnergyName: {Value: list}, tokensName: {Value: int64(100)}}}
	if Hosts(hostsRun(two[:1]...), res) != nil {
		t.Error("a run on one host has an energy by host")
	}
	b := Hosts(hostsRun(two...), res)
	if b == nil || len(b.Hosts) != 2 || b.TotalJ != 1000 || *b.Hosts[0].Share != 0.6 || *b.Hosts[1].Share != 0.4 ||
		*b.Hosts[0].JPerTokenShare != 6 || *b.Hosts[1].JPerTokenShare != 4 {
		t.Fatalf("got %+v", b)
	}
	roles := []record.Device{{ID: "g0", Host: "a", Role: record.RolePrefill}, {ID: "g1", Host: "b", Role: record.RoleDecode}}
	if b := Hosts(hostsRun(roles...), res); b.Hosts[0].JPerTokenShare != nil {
		t.Errorf("a disaggregated run has a J/token share per host: %+v", b.Hosts[0])
	}
	for _, tc := range []struct {
		name string
		res  *record.Results
		note string
	}{
		{"not evaluated", nil, "run not evaluated"},
		{"no such value", &record.Results{Values: map[string]record.Result{}}, "the profile has no energy_by_host"},
		{"not applicable", &record.Results{Values: map[string]record.Result{HostEnergyName: {Note: "not applicable: no power source for the GPUs"}}}, "no power source"},
		{"broken element", &record.Results{Values: map[string]record.Result{HostEnergyName: {Value: []any{map[string]any{"host": "a"}}}}}, "not a number"},
	} {
		b := Hosts(hostsRun(two...), tc.res)
		if b == nil || len(b.Hosts) != 0 || !strings.Contains(b.Note, tc.note) {
			t.Errorf("%s: %+v, want no rows and a note with %q", tc.name, b, tc.note)
		}
	}
}
