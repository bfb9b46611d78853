package telemetry

import (
	"bytes"
	"testing"
)

func TestListingWrite(t *testing.T) {
	yes, no := true, false
	two := Listing{Source: "dcgm", Detail: "http://127.0.0.1:9400/metrics", Devices: []DeviceInfo{
		{ID: "node7/gpu0", Domain: "gpu", Name: "H100", Architecture: "Hopper", UUID: "GPU-aaaa", Host: "node7",
			Energy: "counter", PowerField: "DCGM_FI_DEV_POWER_USAGE", Memory: "yes", ClockEvents: &yes},
		{ID: "node7/gpu1", Name: "H100", Architecture: "unknown", Energy: "power", EnergyNote: "no energy counter series",
			Memory: "no", ClockEvents: &no, Simulated: true},
	}}
	for _, c := range []struct {
		name        string
		l           Listing
		table, json string
		failed      bool
	}{
		// Columns are two spaces apart, each as wide as its widest cell
		// (text/tabwriter: NAME is 16+2 wide, "H100 [SIMULATED]"); "-" for
		// what is unknown.
		{name: "two devices", l: two,
			table: "source: dcgm (http://127.0.0.1:9400/metrics)\n" +
				"ID          DOMAIN  NAME              UUID      ENERGY                   POWER FIELD              MEMORY  THROTTLE REASONS\n" +
				"node7/gpu0  gpu     H100 (Hopper)     GPU-aaaa  counter                  DCGM_FI_DEV_POWER_USAGE  yes     yes\n" +
				"node7/gpu1  -       H100 [SIMULATED]  -         power only (integrated)  -                        no      no\n" +
				"node7/gpu1: no energy counter series\n",
			json: `{
  "source": "dcgm",
  "detail": "http://127.0.0.1:9400/metrics",
  "devices": [
    {
      "id": "node7/gpu0",
      "domain": "gpu",
      "name": "H100",
      "uuid": "GPU-aaaa",
      "host": "node7",
      "architecture": "Hopper",
      "energy": "counter",
      "power_field": "DCGM_FI_DEV_POWER_USAGE",
      "memory": "yes",
      "clock_events": true
    },
    {
      "id": "node7/gpu1",
      "domain": "",
      "name": "H100",
      "architecture": "unknown",
      "energy": "power",
      "energy_note": "no energy counter series",
      "memory": "no",
      "clock_events": false,
      "simulated": true
    }
  ]
}
`},
		{name: "declined", l: Listing{Source: "none", Declined: true, Detail: "--telemetry none: nothing is measured", Devices: []DeviceInfo{}},
			table: "--telemetry none: nothing is measured\n",
			json:  "{\n  \"source\": \"none\",\n  \"detail\": \"--telemetry none: nothing is measured\",\n  \"devices\": null\n}\n"},
		{name: "none found", l: Listing{Source: "none", Detail: "no GPU telemetry", Why: []string{"nvml: no driver", "powermetrics: macOS only"}},
			table:  "no GPU telemetry.\nWhy:\n  - nvml: no driver\n  - powermetrics: macOS only\n",
			json:   "{\n  \"source\": \"none\",\n  \"detail\": \"no GPU telemetry\",\n  \"devices\": null,\n  \"why\": [\n    \"nvml: no driver\",\n    \"powermetrics: macOS only\"\n  ]\n}\n",
			failed: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var table, js bytes.Buffer
			if err := c.l.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			if err := c.l.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			if table.String() != c.table {
				t.Errorf("table:\n%s\nwant:\n%s", table.String(), c.table)
			}
			if js.String() != c.json {
				t.Errorf("json:\n%s\nwant:\n%s", js.String(), c.json)
			}
			if c.l.Failed() != c.failed {
				t.Errorf("Failed() = %v, want %v", c.l.Failed(), c.failed)
			}
		})
	}
}
