package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// report --format llmd writes an imported run as an llm-d Benchmark
// Report v0.2 (the schema's rules are checked in report/llmd_test.go):
// two GPUs at 100 W and 50 W give power_consumption 150 W; two runs in
// one report are refused, exit 2.
func TestReportLLMD(t *testing.T) {
	tmp := t.TempDir()
	var csv strings.Builder
	csv.WriteString("ts,gpu,w\n")
	for i := range 11 {
		fmt.Fprintf(&csv, "%d,g0,100\n%d,g1,50\n", 1760875200+i, 1760875200+i)
	}
	writeFile(t, filepath.Join(tmp, "p.csv"), csv.String())
	dir := filepath.Join(tmp, "run")
	if _, errOut, code := runCLI(t, "import", "csv", filepath.Join(tmp, "p.csv"), "--map", "time=ts,device=gpu,watts=w",
		"--out", dir, "--output-tokens", "300"); code != exitOK {
		t.Fatalf("import: exit %d %s", code, errOut)
	}
	out, errOut, code := runCLI(t, "report", dir, "--format", "llmd")
	if code != exitOK {
		t.Fatalf("report --format llmd: exit %d\n%s\n%s", code, out, errOut)
	}
	var br struct {
		Version string
		Results struct {
			Observability struct {
				Components []struct {
					Aggregate struct {
						PowerConsumption struct {
							Units string
							Mean  float64
						} `json:"power_consumption"`
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &br); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if c := br.Results.Observability.Components; br.Version != "0.2" || len(c) != 1 ||
		c[0].Aggregate.PowerConsumption.Units != "Watts" || c[0].Aggregate.PowerConsumption.Mean != 150 {
		t.Errorf("version %q, observability %+v; want 0.2 and 150 Watts\n%s", br.Version, c, out)
	}
	if _, errOut, code := runCLI(t, "report", dir, dir, "--format", "llmd"); code != exitInvalid || !strings.Contains(errOut, "holds one run") {
		t.Errorf("two runs: exit %d %q, want 2", code, errOut)
	}
}
