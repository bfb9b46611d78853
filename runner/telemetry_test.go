package runner

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/progress"
	"github.com/joulebench/joulebench/internal/runprogress"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/telemetry/replay"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
	"github.com/joulebench/joulebench/workflow"
)

// noFlags are the values of flags none of which was given.
type noFlags struct{}

func (noFlags) GetString(string) string        { return "" }
func (noFlags) GetStringSlice(string) []string { return nil }
func (noFlags) GetBool(string) bool            { return false }
func (noFlags) GetFloat64(string) float64      { return 0 }

// testTelemetry is a Telemetry over the simulated GPU, replay and none,
// with --telemetry given as given; logged collects what it logs.
func testTelemetry(t *testing.T, logged *[]string, given ...string) Telemetry {
	t.Helper()
	reg := telemetry.NewRegistry("power source")
	for _, d := range []telemetry.Descriptor{simtel.Descriptor(), replay.Descriptor(), telemetry.NoneDescriptor()} {
		if err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	logf := func(msg string) { *logged = append(*logged, msg) }
	return Telemetry{Registry: reg, Given: given, Values: noFlags{}, Logf: logf, NoSource: OnceLogf(logf)}
}

func TestSplitTelemetry(t *testing.T) {
	for _, c := range []struct {
		given, want []string
	}{
		{nil, nil},
		{[]string{"sim"}, []string{"sim"}},
		{[]string{"sim", "rapl"}, []string{"sim", "rapl"}},
		// JOULEBENCH_TELEMETRY or the config file: one value listing several.
		{[]string{"sim,rapl"}, []string{"sim", "rapl"}},
		{[]string{"sim rapl, ipmi"}, []string{"sim", "rapl", "ipmi"}},
	} {
		if got := SplitTelemetry(c.given); !slices.Equal(got, c.want) {
			t.Errorf("SplitTelemetry(%q) = %q, want %q", c.given, got, c.want)
		}
	}
}

func TestTelemetryCheck(t *testing.T) {
	for _, c := range []struct {
		given     []string
		simulated bool
		errMsg    string // "": no error
	}{
		{nil, false, ""},
		{[]string{"sim"}, true, ""},
		{[]string{"sim"}, false, "--telemetry sim: the simulated GPU follows the simulated engine only (--engine sim)"},
		{[]string{"none"}, false, ""},
		{[]string{"bogus"}, true, "bogus"},
	} {
		var logged []string
		err := testTelemetry(t, &logged, c.given...).Check(c.simulated)
		if c.errMsg == "" {
			if err != nil {
				t.Errorf("%q (simulated %v): %v", c.given, c.simulated, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.errMsg) || CodeOf(err) != CodeInvalid {
			t.Errorf("%q (simulated %v): err %v (code %d), want code %d with %q", c.given, c.simulated, err, CodeOf(err), CodeInvalid, c.errMsg)
		}
	}
}

func TestTelemetryOpen(t *testing.T) {
	simGPU := &SimGPU{Load: idleLoad{}, Config: simtel.DefaultConfig()}
	for _, c := range []struct {
		name   string
		given  []string
		env    TelemetryEnv
		source string // the info's source; "-": the cooldown's bare simulated GPU (no info)
		open   bool   // a source is returned
		errMsg string
		// wall: no run clock (the wall clock is read).
		wall bool
	}{
		{name: "auto with the simulator", env: TelemetryEnv{Sim: simGPU}, source: "sim", open: true},
		{name: "sim with the simulator", given: []string{"sim"}, env: TelemetryEnv{Sim: simGPU}, source: "sim", open: true},
		{name: "sim without the simulator", given: []string{"sim"}, errMsg: "--engine sim"},
		{name: "none", given: []string{"none"}, source: "none"},
		{name: "auto without a source", source: "none"},
		{name: "cooldown of the simulator, auto", env: TelemetryEnv{Sim: simGPU, Cooldown: true}, source: "-", open: true},
		{name: "cooldown of the simulator, sim", given: []string{"sim"}, env: TelemetryEnv{Sim: simGPU, Cooldown: true}, source: "-", open: true},
		// A real source named: the cooldown reads it, not the idle
		// simulated GPU (none here: nothing is measured).
		{name: "cooldown of the simulator, none", given: []string{"none"}, env: TelemetryEnv{Sim: simGPU, Cooldown: true}, source: "none"},
		{name: "cooldown of a real engine", env: TelemetryEnv{Cooldown: true}, source: "none"},
		{name: "cooldown of the simulator without a run clock", env: TelemetryEnv{Sim: simGPU, Cooldown: true}, source: "-", open: true, wall: true},
		{name: "unknown", given: []string{"bogus"}, errMsg: "bogus"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logged []string
			if !c.wall {
				c.env.Clock = workflow.NewClock()
			}
			src, info, err := testTelemetry(t, &logged, c.given...).Open(context.Background(), c.env)
			if src != nil {
				defer src.Close()
			}
			if c.errMsg != "" {
				if err == nil || !strings.Contains(err.Error(), c.errMsg) || CodeOf(err) != CodeInvalid {
					t.Fatalf("err %v (code %d), want code %d with %q", err, CodeOf(err), CodeInvalid, c.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (src != nil) != c.open {
				t.Fatalf("source %v, want one: %v", src, c.open)
			}
			if src != nil {
				// A reading is stamped on the run's clock, or the wall clock.
				if rs, err := src.Read(context.Background()); err != nil || len(rs) == 0 {
					t.Errorf("read %+v, %v", rs, err)
				}
			}
			if want := strings.TrimPrefix(c.source, "-"); info.Source != want {
				t.Errorf("info %+v, want source %q", info, want)
			}
		})
	}
}

// Auto's "no power source found" is said once however often a source is
// looked for (each engine, each cooldown); the note says it every time.
func TestTelemetryNoSourceLoggedOnce(t *testing.T) {
	var logged []string
	tel := testTelemetry(t, &logged)
	for range 3 {
		_, info, err := tel.Open(context.Background(), TelemetryEnv{})
		if err != nil || !strings.Contains(info.Note, "no power source found") {
			t.Fatalf("info %+v, %v", info, err)
		}
	}
	n := 0
	for _, l := range logged {
		n += strings.Count(l, "no power source found")
	}
	if n != 1 {
		t.Errorf("logged %q: want the warning once", logged)
	}
}

// Replayed power is real power from another time, not simulated: the
// progress says "(replayed)".
func TestPowerLabel(t *testing.T) {
	p := runprogress.Snapshot{Stage: "formal", PowerW: 300, HasPower: true}
	for _, c := range []struct {
		tel     record.TelemetryInfo
		simEng  bool
		want    string
		notWant string
	}{
		{record.TelemetryInfo{Source: "replay", Simulated: true}, false, "300 W (replayed)", "simulated"},
		{record.TelemetryInfo{Source: "replay", Simulated: true}, true, "300 W (replayed)", "simulated"},
		{record.TelemetryInfo{Source: "sim", Simulated: true}, true, "300 W (simulated)", "replayed"},
		{record.TelemetryInfo{Source: "sim", Simulated: true}, false, "300 W (simulated)", "replayed"},
		{record.TelemetryInfo{Source: "nvml"}, true, "300 W (simulated)", "replayed"},
		{record.TelemetryInfo{Source: "nvml"}, false, "300 W", "("},
	} {
		var logged []string
		got := progress.Text(p, 0, testTelemetry(t, &logged).PowerLabel(c.tel, c.simEng))
		if !strings.Contains(got, c.want) || strings.Contains(got, c.notWant) {
			t.Errorf("%s (simulated engine %v): %q, want %q", c.tel.Source, c.simEng, got, c.want)
		}
	}
}
