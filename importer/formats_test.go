package importer

import (
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

func TestParseMapping(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"time=ts,device=gpu,watts=p", "time=ts,device=gpu,watts=p", ""},
		{"time_ms=ms,joules=e", "time_ms=ms,joules=e", ""},
		{"watts=p", "", "exactly one of time="},
		{"time=a,time_ms=b,watts=p", "", "exactly one of time="},
		{"time=ts", "", "give watts= or joules="},
		{"time=ts,volts=v", "", `unknown key "volts"`},
		{"time=ts,watts", "", "want KEY=COLUMN"},
	} {
		m, err := ParseMapping(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want %q", c.in, err, c.err)
		case c.err == "" && (err != nil || m.String() != c.want):
			t.Errorf("%q: %q, %v; want %q", c.in, m.String(), err, c.want)
		}
	}
}

func TestCSV(t *testing.T) {
	in := "ts,gpu,power,other\n" +
		"2025-10-19T12:00:00Z,a,100,x\n" +
		"1760875200,b,200,x\n" +
		"2025-10-19T12:00:01Z,a,,x\n" + // an empty cell: a failed sample
		"1760875201.5,b,210,x\n"
	m, _ := ParseMapping("time=ts,device=gpu,watts=power")
	rec, err := CSV(strings.NewReader(in), "p.csv", m)
	if err != nil {
		t.Fatal(err)
	}
	want := []record.PowerSample{
		{T: t0, Device: "a", PowerW: 100, MemUsedBytes: -1},
		{T: t0, Device: "b", PowerW: 200, MemUsedBytes: -1},
		{T: t0 + 1.5, Device: "b", PowerW: 210, MemUsedBytes: -1},
	}
	if len(rec.Samples) != len(want) || rec.FailedSamples != 1 || len(rec.Devices) != 2 {
		t.Fatalf("samples %+v, failed %d, devices %+v", rec.Samples, rec.FailedSamples, rec.Devices)
	}
	for i := range want {
		if rec.Samples[i] != want[i] {
			t.Errorf("sample %d = %+v, want %+v", i, rec.Samples[i], want[i])
		}
	}
}

// Joules only: power is the counter's increase over time; the first row
// takes the second's. Rows at 0, 2, 3 s with 1000, 1400, 1700 J:
// (1400-1000)/2 = 200 W at 0 and 2 s, (1700-1400)/1 = 300 W at 3 s.
func TestCSVJoules(t *testing.T) {
	in := "ms,e\n1760875200000,1000\n1760875202000,1400\n1760875203000,1700\n"
	m, _ := ParseMapping("time_ms=ms,joules=e")
	rec, err := CSV(strings.NewReader(in), "e.csv", m)
	if err != nil {
		t.Fatal(err)
	}
	got := []float64{}
	for _, s := range rec.Samples {
		got = append(got, s.PowerW)
		if !s.HasEnergy || s.Device != DefaultDevice {
			t.Errorf("sample %+v", s)
		}
	}
	if len(got) != 3 || got[0] != 200 || got[1] != 200 || got[2] != 300 || rec.Devices[0].Method != "counter" {
		t.Errorf("power %v, devices %+v", got, rec.Devices)
	}
}

func TestCSVErrors(t *testing.T) {
	m, _ := ParseMapping("time=ts,watts=p")
	for _, c := range []struct{ name, in, want string }{
		{"missing column", "t,p\n1,2\n", `p.csv:1: no column "ts"`},
		{"bad number", "ts,p\n1760875200,2\n1760875201,abc\n", `p.csv:3:12: column "abc": not a finite number`},
		{"negative", "ts,p\n1760875200,-2\n", `p.csv:2:12: column "-2": negative power`},
		{"bad time", "ts,p\nyesterday,2\n", `p.csv:2:1: column "yesterday"`},
		{"twice", "ts,p\n1760875200,2\n1760875200,3\n", "p.csv:3: device dev0 has a second row at 2025-10-19T12:00:00Z (line 2)"},
		{"ragged", "ts,p\n1760875200,2,3\n", "p.csv"},
		// Seconds since the start, not absolute times (1970-01-01).
		{"relative time", "ts,p\n0,2\n1,2\n", `p.csv:2:1: column "0": time 0 (1970-01-01T00:00:00Z) is outside 2000-01-01T00:00:00Z .. 2100-01-01T00:00:00Z`},
		{"above 100 kW", "ts,p\n1760875200,100000.5\n", `p.csv:2:12: column "100000.5": power 100000.5 W is above 100000 W`},
		{"infinite", "ts,p\n1760875200,+Inf\n", `p.csv:2:12: column "+Inf": not a finite number`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := CSV(strings.NewReader(c.in), "p.csv", m)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

const promAnswer = `{"status":"success","data":{"resultType":"matrix","result":[
 {"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","gpu":"0","instance":"h:9400"},"values":[[1760875200,"300"],[1760875201,"NaN"],[1760875202,"310.5"]]},
 {"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","gpu":"1","instance":"h:9400"},"values":[[1760875200,"280"],[1760875202,"290"]]}]}}`

func TestPrometheus(t *testing.T) {
	rec, err := Prometheus(strings.NewReader(promAnswer), "q.json", PromOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Samples) != 4 || rec.FailedSamples != 1 || len(rec.Devices) != 2 || rec.Devices[0].ID != "0" || rec.Devices[1].ID != "1" {
		t.Fatalf("samples %+v, failed %d, devices %+v", rec.Samples, rec.FailedSamples, rec.Devices)
	}
	if s := rec.Samples[1]; s.T != t0+2 || s.PowerW != 310.5 || s.Device != "0" {
		t.Errorf("sample 1 = %+v", s)
	}
	// The data object alone and the bare list read the same.
	data := promAnswer[strings.Index(promAnswer, `{"resultType"`) : len(promAnswer)-1]
	list := data[strings.Index(data, "[") : len(data)-1]
	for _, in := range []string{data, list} {
		r2, err := Prometheus(strings.NewReader(in), "q.json", PromOptions{})
		if err != nil || len(r2.Samples) != 4 {
			t.Errorf("%.40s…: %v, %d samples", in, err, len(r2.Samples))
		}
	}
}

// A counter in millijoules: 0 → 500 000 mJ over 2 s is 250 W.
func TestPrometheusCounter(t *testing.T) {
	in := `[{"metric":{"gpu":"0"},"values":[[1760875200,"0"],[1760875202,"500000"]]}]`
	rec, err := Prometheus(strings.NewReader(in), "e.json", PromOptions{Unit: "millijoules"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Samples) != 2 || rec.Samples[0].PowerW != 250 || rec.Samples[1].EnergyJ != 500 || !rec.Samples[1].HasEnergy {
		t.Errorf("samples %+v", rec.Samples)
	}
}

func TestPrometheusErrors(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"failed query", `{"status":"error","error":"bad query"}`, `status "error"): bad query`},
		{"vector", `{"status":"success","data":{"resultType":"vector","result":[]}}`, `resultType is "vector"`},
		{"bad value", `[{"metric":{"gpu":"0"},"values":[[1760875200,"x"]]}]`, `series 1 {gpu="0"}, point 1: value "x" is not a number`},
		{"negative", `[{"metric":{"gpu":"0"},"values":[[1760875200,"-3"]]}]`, "negative power"},
		{"time back", `[{"metric":{"gpu":"0"},"values":[[1760875202,"1"],[1760875201,"1"]]}]`, "point 2: time 2025-10-19T12:00:01Z does not increase"},
		{"relative time", `[{"metric":{"gpu":"0"},"values":[[0,"1"],[1,"1"]]}]`, "point 1: time 0 (1970-01-01T00:00:00Z) is outside"},
		{"infinite", `[{"metric":{"gpu":"0"},"values":[[1760875200,"+Inf"]]}]`, `point 1: value "+Inf" is not finite`},
		{"above 100 kW", `[{"metric":{"gpu":"0"},"values":[[1760875200,"250000"]]}]`, "point 1: power 250000 W is above 100000 W"},
		{"not json", `{`, "q.json: invalid JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Prometheus(strings.NewReader(c.in), "q.json", PromOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
	if _, err := Prometheus(strings.NewReader(promAnswer), "q.json", PromOptions{DeviceLabel: "instance"}); err == nil ||
		!strings.Contains(err.Error(), `distinct label "instance"`) {
		t.Errorf("same instance for two series: %v", err)
	}
}
