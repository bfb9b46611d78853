package telemetry

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"
)

// scriptSource returns one scripted batch of readings per Read.
type scriptSource struct {
	reads [][]Reading
	n     int
}

func (s *scriptSource) Name() string { return "script" }
func (s *scriptSource) Devices(context.Context) ([]record.Device, error) {
	return []record.Device{{ID: "g", PowerLimitW: 700}, {ID: "u"}, {ID: "h", PowerLimitW: 3000}, {ID: "n", Domain: record.DomainNode}}, nil
}
func (s *scriptSource) Read(context.Context) ([]Reading, error) {
	if s.n >= len(s.reads) {
		return nil, nil
	}
	s.n++
	return s.reads[s.n-1], nil
}
func (s *scriptSource) Close() error { return nil }

// csvOf writes rows as power.csv does (shortest exact decimals).
func csvOf(rows []record.PowerSample) string {
	var b strings.Builder
	b.WriteString("t,device,power_w,energy_j,mem_used_bytes\n")
	for _, r := range rows {
		e := ""
		if r.HasEnergy {
			e = strconv.FormatFloat(r.EnergyJ, 'f', -1, 64)
		}
		fmt.Fprintf(&b, "%s,%s,%s,%s,\n", strconv.FormatFloat(r.T, 'f', -1, 64), r.Device, strconv.FormatFloat(r.PowerW, 'f', -1, 64), e)
	}
	return b.String()
}

// TestSamplerPowerReadings runs each kind of bad reading through the
// sampler between good ones: the row is refused (never reaches the sink,
// so the archive reader and the analysis accept what was written) or kept
// and flagged, and each is reported once per device and kind.
func TestSamplerPowerReadings(t *testing.T) {
	// good is device g (limit 700 W) at time t, 300 W, counter 300·t J.
	good := func(t float64) Reading {
		return Reading{Device: "g", PowerW: 300, EnergyJ: 300 * t, HasEnergy: true, MemUsedBytes: -1, T: t}
	}
	with := func(t float64, f func(*Reading)) Reading { r := good(t); f(&r); return r }
	cases := []struct {
		name string
		bad  Reading // read between good(1) and good(3)
		// kept: the bad row reaches the sink; kind: the anomaly reported
		// ("" none).
		kept   bool
		kind   string
		detail string
	}{
		{"negative power (dcgm −50 W)", with(2, func(r *Reading) { r.PowerW = -50 }), false, AnomalyPowerInvalid, "power -50 W is negative"},
		{"NaN power", with(2, func(r *Reading) { r.PowerW = math.NaN() }), false, AnomalyPowerInvalid, "power NaN W is not a number"},
		{"+Inf power", with(2, func(r *Reading) { r.PowerW = math.Inf(1) }), false, AnomalyPowerInvalid, "not a number"},
		{"−Inf power", with(2, func(r *Reading) { r.PowerW = math.Inf(-1) }), false, AnomalyPowerInvalid, "not a number"},
		// 10^7 W > 2 × 700 W.
		{"absurd high, limit known", with(2, func(r *Reading) { r.PowerW = 1e7 }), false, AnomalyPowerInvalid, "power 10000000 W is above 2 × the power limit 700 W"},
		// 900 W: above 1.2 × 700 = 840, below 1400: kept, flagged.
		{"above the limit", with(2, func(r *Reading) { r.PowerW = 900 }), true, AnomalyPowerAboveLimit, "power 900 W above 1.2 × the power limit 700 W: kept"},
		{"within the limit", with(2, func(r *Reading) { r.PowerW = 800 }), true, "", ""},
		// One zero is kept and not flagged (ZeroRun = 5 in a row are).
		{"one zero", with(2, func(r *Reading) { r.PowerW = 0 }), true, "", ""},
		{"time going back", with(0.5, func(*Reading) {}), false, AnomalyPowerInvalid, "time 0.5 is not after the previous sample's 1"},
		{"same time again", with(1, func(*Reading) {}), false, AnomalyPowerInvalid, "time 1 is not after"},
		{"t < 0", with(-3, func(*Reading) {}), false, AnomalyPowerInvalid, "time -3 is not a time"},
		{"t = +Inf", with(math.Inf(1), func(*Reading) {}), false, AnomalyPowerInvalid, "is not a time"},
		{"negative energy counter", with(2, func(r *Reading) { r.EnergyJ = -1 }), false, AnomalyPowerInvalid, "energy counter -1 J is not a number ≥ 0"},
		{"NaN energy counter", with(2, func(r *Reading) { r.EnergyJ = math.NaN() }), false, AnomalyPowerInvalid, "energy counter NaN J"},
		// 2^43 J is the most a counter may count (record.MaxEnergyJ =
		// 8,796,093,022,208 J); 2^44 is refused.
		{"energy counter past 2^43 J", with(2, func(r *Reading) { r.EnergyJ = 1 << 44 }), false, AnomalyPowerInvalid, "energy counter 17592186044416 J is above 2^43 J"},
		// Device u (a GPU: no domain) has no known limit: 10^7 W > 5 kW,
		// a GPU's physical bound, refused; 5 kW itself is kept and
		// flagged (> 2000 W).
		{"absurd high, limit unknown", Reading{Device: "u", PowerW: 1e7, MemUsedBytes: -1, T: 2}, false, AnomalyPowerInvalid, "above 5000 W, the most one device of its domain draws"},
		{"high, limit unknown", Reading{Device: "u", PowerW: 5000, MemUsedBytes: -1, T: 2}, true, AnomalyPowerAboveLimit, "above 2000 W (power limit unknown)"},
		// Device h has a 3 kW limit: 2 × 3 kW = 6 kW would be the
		// refusal bound, but a GPU's physical bound, 5 kW, is lower.
		{"above a GPU's bound, under twice its limit", Reading{Device: "h", PowerW: 5500, MemUsedBytes: -1, T: 2}, false, AnomalyPowerInvalid, "power 5500 W is above 5000 W"},
		// Device n is a node: 50 kW kept (flagged above 2000 W), 200 kW
		// refused (above 100 kW, a node's bound).
		{"a node at 50 kW", Reading{Device: "n", PowerW: 50000, MemUsedBytes: -1, T: 2}, true, AnomalyPowerAboveLimit, "above 2000 W"},
		{"a node at 200 kW", Reading{Device: "n", PowerW: 200000, MemUsedBytes: -1, T: 2}, false, AnomalyPowerInvalid, "above 100000 W, the most one device of its domain draws"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The bad reading twice (the second half a second later, so
			// that only the first of a kind is logged), between good ones.
			again := c.bad
			if again.T == 2 {
				again.T = 2.5
			}
			src := &scriptSource{reads: [][]Reading{{good(1)}, {c.bad}, {again}, {good(3)}}}
			col := newCollector()
			var logs []string
			s := NewSampler(src, 0, stepClock(), col.sink, func(m string) { logs = append(logs, m) })
			devs, _ := src.Devices(context.Background())
			s.SetDevices(devs)
			for range src.reads {
				if err := s.SampleNow(context.Background()); err != nil {
					t.Fatalf("SampleNow: %v (a bad reading must not end sampling)", err)
				}
			}
			var rows []record.PowerSample
			for _, b := range col.snapshot() {
				rows = append(rows, b...)
			}
			n := 2
			if c.kept {
				n = 4
			}
			if len(rows) != n {
				t.Fatalf("rows written = %+v, want %d", rows, n)
			}
			// What was written, the reader and the analysis accept.
			read, err := archive.ReadPowerCSV(strings.NewReader(csvOf(rows)), "power.csv")
			if err != nil {
				t.Fatalf("the reader rejects what the sampler wrote: %v", err)
			}
			if _, err := measure.NewPowerData(read); err != nil {
				t.Fatalf("the analysis rejects what the sampler wrote: %v", err)
			}
			an := s.Anomalies()
			if c.kind == "" {
				if len(an) != 0 {
					t.Errorf("anomalies = %+v, want none", an)
				}
				return
			}
			i := slices.IndexFunc(an, func(a Anomaly) bool { return a.Kind == c.kind && a.Device == c.bad.Device })
			if i < 0 {
				t.Fatalf("anomalies = %+v, want %s of %s", an, c.kind, c.bad.Device)
			}
			if !strings.Contains(an[i].Detail, c.detail) {
				t.Errorf("detail %q does not contain %q", an[i].Detail, c.detail)
			}
			// Reported once per device and kind, with the count.
			if len(logs) != 1 || !strings.Contains(logs[0], c.detail) || !strings.Contains(logs[0], "device "+c.bad.Device) {
				t.Errorf("logs = %q, want one line naming the device and %q", logs, c.detail)
			}
		})
	}
}

// TestSamplerZeroRun: ZeroRun readings of 0 W in a row are flagged once;
// the readings are kept (a source may read 0 W for a while).
func TestSamplerZeroRun(t *testing.T) {
	var reads [][]Reading
	for i := range 2 * ZeroRun {
		reads = append(reads, []Reading{{Device: "g", MemUsedBytes: -1, T: float64(i + 1)}})
	}
	src := &scriptSource{reads: reads}
	col := newCollector()
	var logs []string
	s := NewSampler(src, 0, stepClock(), col.sink, func(m string) { logs = append(logs, m) })
	for range reads {
		if err := s.SampleNow(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(col.snapshot()); got != 2*ZeroRun {
		t.Errorf("batches written = %d, want %d (zeros are kept)", got, 2*ZeroRun)
	}
	an := s.Anomalies()
	if len(an) != 1 || an[0].Kind != AnomalyPowerZero || an[0].T != ZeroRun || len(logs) != 1 {
		t.Errorf("anomalies = %+v, logs %q; want one power_zero at t=%d, logged once", an, logs, ZeroRun)
	}
}

// The run clock itself at 0 (a reading without its own time) is refused.
func TestSamplerClockZero(t *testing.T) {
	src := &scriptSource{reads: [][]Reading{{{Device: "g", PowerW: 100, MemUsedBytes: -1}}}}
	col := newCollector()
	s := NewSampler(src, 0, func() float64 { return 0 }, col.sink, nil)
	if err := s.SampleNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(col.snapshot()) != 0 || len(s.Anomalies()) != 1 {
		t.Errorf("written %v, anomalies %+v; want nothing written, one power_invalid", col.snapshot(), s.Anomalies())
	}
}

// FuzzSamplerReadings: whatever a source returns, what the sampler writes
// is accepted by the archive reader and the analysis (no negative, NaN or
// infinite power or counter, no time ≤ 0, no time going back per device).
func FuzzSamplerReadings(f *testing.F) {
	f.Add(100.0, 5.0, 1.0, -50.0, 2.0, 3.0, 1e7, 0.5)
	f.Add(math.NaN(), math.Inf(1), 0.0, 0.0, -1.0, math.Inf(-1), 900.0, 1e308)
	f.Fuzz(func(t *testing.T, p1, e1, t1, p2, e2, t2, p3, t3 float64) {
		src := &scriptSource{reads: [][]Reading{
			{{Device: "g", PowerW: p1, EnergyJ: e1, HasEnergy: true, MemUsedBytes: -1, T: t1}},
			{{Device: "g", PowerW: p2, EnergyJ: e2, HasEnergy: true, MemUsedBytes: -1, T: t2}, {Device: "u", PowerW: p3, MemUsedBytes: -1, T: t3}},
			{{Device: "g", PowerW: p3, EnergyJ: e1 + e2, HasEnergy: true, MemUsedBytes: -1}},
		}}
		col := newCollector()
		s := NewSampler(src, 0, stepClock(), col.sink, nil)
		devs, _ := src.Devices(context.Background())
		s.SetDevices(devs)
		for range src.reads {
			if err := s.SampleNow(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		var rows []record.PowerSample
		for _, b := range col.snapshot() {
			rows = append(rows, b...)
		}
		if len(rows) == 0 {
			return
		}
		read, err := archive.ReadPowerCSV(strings.NewReader(csvOf(rows)), "power.csv")
		if err != nil {
			t.Fatalf("the reader rejects what the sampler wrote: %v", err)
		}
		if _, err := measure.NewPowerData(read); err != nil {
			t.Fatalf("the analysis rejects what the sampler wrote: %v", err)
		}
	})
}

// A device whose every reading is refused (a dcgm, Redfish or Prometheus
// source at 10^9 W, or NaN) ends sampling after RefusedRun readings, with
// an error naming the device and the readings; before, the run went on to
// its end and failed when its own archive was read back. A device with a
// reading accepted once is only ever a gap, as before.
func TestSamplerEndsOnUnusableDevice(t *testing.T) {
	ok := func(dev string, t float64) Reading {
		return Reading{Device: dev, PowerW: 300, MemUsedBytes: -1, T: t}
	}
	cases := []struct {
		name string
		g    func(t float64) Reading // device g (limit 700 W) at time t
		want string                  // "" = sampling goes on
	}{
		// 10^9 W > 2 × 700 W.
		{"10^9 W", func(t float64) Reading { return Reading{Device: "g", PowerW: 1e9, MemUsedBytes: -1, T: t} },
			"telemetry script: device g: none of its 5 readings so far could be written (the first: power 1000000000 W is above 2 × the power limit 700 W; the last: power 1000000000 W is above 2 × the power limit 700 W)"},
		{"NaN", func(t float64) Reading { return Reading{Device: "g", PowerW: math.NaN(), MemUsedBytes: -1, T: t} },
			"device g: none of its 5 readings so far could be written (the first: power NaN W is not a number"},
		{"accepted once, then refused", func(t float64) Reading {
			if t == 1 {
				return ok("g", t)
			}
			return Reading{Device: "g", PowerW: 1e9, MemUsedBytes: -1, T: t}
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := &scriptSource{}
			for i := 1; i <= 2*RefusedRun; i++ {
				src.reads = append(src.reads, []Reading{c.g(float64(i)), ok("u", float64(i))})
			}
			col := newCollector()
			var logs []string
			s := NewSampler(src, 0, stepClock(), col.sink, func(m string) { logs = append(logs, m) })
			devs, _ := src.Devices(context.Background())
			s.SetDevices(devs)
			var err error
			n := 0
			for range src.reads {
				if err = s.SampleNow(context.Background()); err != nil {
					break
				}
				n++
			}
			if c.want == "" {
				if err != nil {
					t.Fatalf("SampleNow: %v, want sampling to go on (the device had a reading)", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("SampleNow: %v, want %q", err, c.want)
			}
			// Ended at the RefusedRun-th sample, whose good rows were
			// written first.
			if n != RefusedRun-1 {
				t.Errorf("ended after %d good samples, want %d", n, RefusedRun-1)
			}
			var us int
			for _, b := range col.snapshot() {
				for _, r := range b {
					if r.Device == "u" {
						us++
					}
				}
			}
			if us != RefusedRun {
				t.Errorf("%d rows of device u written, want %d", us, RefusedRun)
			}
			if serr := s.Stop(); serr == nil || serr.Error() != err.Error() {
				t.Errorf("Stop = %v, want the same error", serr)
			}
		})
	}
}
