package analysis

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

// t0 is the start of the formal stage of the hand-built archives below.
const t0 = 1700000000.0

// phaseArchive writes a complete run of one formal stage [t0, t0+10] with
// the devices given, each sampled every second at a constant power
// (watts[id]), and the formal requests given; it returns its directory.
func phaseArchive(t *testing.T, devices []record.Device, watts map[string]float64, reqs []record.Request) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	meta := record.Meta{
		RunID:      "phases",
		Profile:    record.ProfileRef{Name: "benchmark-1.5", Source: "builtin"},
		Engine:     record.EngineInfo{Kind: "vllm", Model: "m"},
		RequestSet: record.RequestSet{Count: len(reqs)},
		Hardware:   record.Hardware{Devices: devices},
		Telemetry:  record.TelemetryInfo{Source: "nvml", IntervalS: 1},
		StartedAt:  t0,
		EndedAt:    t0 + 10,
		Stages:     []record.Stage{{Name: "formal", Start: t0, End: t0 + 10}},
	}
	for _, q := range reqs {
		if q.Synthetic { // an imported recording's request: the run is an import carrying its tokens
			if meta.Import == nil {
				meta.Import = &record.ImportInfo{Format: "csv"}
			}
			meta.Import.OutputTokens += q.OutputTokens
		}
	}
	w, err := archive.Create(dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 11 {
		for _, d := range devices {
			if err := w.AppendPower(record.PowerSample{T: t0 + float64(i), Device: d.ID, PowerW: watts[d.ID], MemUsedBytes: -1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range reqs {
		if err := w.AppendRequest(q); err != nil {
			t.Fatal(err)
		}
	}
	// A request that failed as the stage ends, at t0+10: the formal stage
	// ends at its last response (the reader holds it to its requests). A
	// failed request has no tokens and counts to no phase's or host's
	// split. An import's synthetic requests end with the stage already,
	// and it has no request of its own.
	if meta.Import == nil {
		if err := w.AppendRequest(record.Request{ID: "late", Phase: "formal", SentAt: t0 + 9.5, DoneAt: t0 + 10, Error: "timeout"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.UpdateMeta(func(m *record.Meta) { m.Status = record.StatusComplete }); err != nil {
		t.Fatal(err)
	}
	return dir
}

// phaseReq is a successful formal request sent, first token and done at
// t0 + the seconds given.
func phaseReq(id string, sent, first, done float64, prompt, output int) record.Request {
	return record.Request{ID: id, Phase: "formal", OK: true, SentAt: t0 + sent, FirstTokenAt: t0 + first, DoneAt: t0 + done,
		PromptTokens: prompt, OutputTokens: output, TokensSource: "usage"}
}

// evaluatePhases evaluates dir with benchmark-1.5 and returns its metrics
// by name, and the notes of those without value.
func evaluatePhases(t *testing.T, dir string) (map[string]float64, map[string]string) {
	t.Helper()
	e, err := noUserDirs().Evaluate(context.Background(), dir, "benchmark-1.5", nil)
	if err != nil {
		t.Fatal(err)
	}
	vals, notes := map[string]float64{}, map[string]string{}
	for n, r := range e.Results.Values {
		if v, ok := r.Value.(float64); ok {
			vals[n] = v
		} else {
			notes[n] = r.Note
		}
	}
	return vals, notes
}

func wantValues(t *testing.T, vals map[string]float64, notes map[string]string, want map[string]float64) {
	t.Helper()
	for n, w := range want {
		got, ok := vals[n]
		if !ok {
			t.Errorf("%s has no value (%s), want %v", n, notes[n], w)
			continue
		}
		if math.Abs(got-w) > 1e-9*math.Max(1, math.Abs(w)) {
			t.Errorf("%s = %v, want %v", n, got, w)
		}
	}
}

// disaggregated is a run over two hosts: the prefill part on node-a (one
// device at 300 W), the decode part on node-b (one at 200 W).
func disaggregated(t *testing.T) string {
	return phaseArchive(t,
		[]record.Device{
			{ID: "p0", Host: "node-a", Role: record.RolePrefill, Method: "power"},
			{ID: "d0", Host: "node-b", Role: record.RoleDecode, Method: "power"},
		},
		map[string]float64{"p0": 300, "d0": 200},
		[]record.Request{phaseReq("r1", 1, 2, 6, 1000, 100), phaseReq("r2", 3, 4, 9, 500, 150)})
}

// A disaggregated run: each device's energy is its role's phase.
//
//	prefill: 300 W × 10 s = 3000 J; decode: 200 W × 10 s = 2000 J;
//	formal energy 5000 J = 3000 + 2000 (no device is split: idle 0).
//	input tokens 1000 + 500 = 1500: 3000 / 1500 = 2 J per input token;
//	output tokens 100 + 150 = 250: 2000 / 250 = 8 J per output token.
func TestPhaseEnergyDisaggregated(t *testing.T) {
	vals, notes := evaluatePhases(t, disaggregated(t))
	wantValues(t, vals, notes, map[string]float64{
		"formal_energy_j":           5000,
		"prefill_energy_j":          3000,
		"decode_energy_j":           2000,
		"phase_idle_energy_j":       0,
		"prefill_j_per_input_token": 2,
		"decode_j_per_output_token": 8,
		"formal_j_per_token":        20, // 5000 / 250
	})
	if n := notes["router_energy_j"]; !strings.Contains(n, "no device of role router") {
		t.Errorf("router_energy_j: note %q, want not applicable: no device of role router", n)
	}
	if vals["prefill_energy_j"]+vals["decode_energy_j"] != vals["formal_energy_j"] {
		t.Errorf("prefill + decode = %v, want formal %v", vals["prefill_energy_j"]+vals["decode_energy_j"], vals["formal_energy_j"])
	}
}

// A router device is reported apart: a third device on node-c at 50 W,
// role router: 500 J, and prefill + decode + router = formal energy
// (3000 + 2000 + 500 = 5500 J).
func TestPhaseEnergyRouterApart(t *testing.T) {
	dir := phaseArchive(t,
		[]record.Device{
			{ID: "p0", Host: "node-a", Role: record.RolePrefill},
			{ID: "d0", Host: "node-b", Role: record.RoleDecode},
			{ID: "r0", Host: "node-c", Role: record.RoleRouter},
		},
		map[string]float64{"p0": 300, "d0": 200, "r0": 50},
		[]record.Request{phaseReq("r1", 1, 2, 6, 1000, 100)})
	vals, notes := evaluatePhases(t, dir)
	wantValues(t, vals, notes, map[string]float64{
		"formal_energy_j":  5500,
		"prefill_energy_j": 3000,
		"decode_energy_j":  2000,
		"router_energy_j":  500,
	})
}

// One device serving both phases (a single engine, no role) at 200 W and
// two overlapping requests, split by time-sliced attribution:
//
//	A sent 1, first token 3, done 6; B sent 2, first token 4, done 8.
//	[0, 1] nobody in flight: 200 J idle.
//	[1, 2] A prefill alone: 200 J prefill.
//	[2, 3] A and B prefill: 200 J prefill.
//	[3, 4] A decode, B prefill: 100 J decode, 100 J prefill.
//	[4, 6] both decode: 400 J decode. [6, 8] B decode: 400 J decode.
//	[8, 10] nobody: 400 J idle.
//	prefill 500 J, decode 900 J, idle 600 J: 2000 J = 200 W × 10 s.
//	input tokens 100 + 150 = 250: 500 / 250 = 2 J per input token;
//	output tokens 50 + 40 = 90: 900 / 90 = 10 J per output token.
func TestPhaseEnergyMixedDevice(t *testing.T) {
	dir := phaseArchive(t, []record.Device{{ID: "g0", Host: "h"}}, map[string]float64{"g0": 200},
		[]record.Request{phaseReq("A", 1, 3, 6, 100, 50), phaseReq("B", 2, 4, 8, 150, 40)})
	vals, notes := evaluatePhases(t, dir)
	wantValues(t, vals, notes, map[string]float64{
		"formal_energy_j":           2000,
		"prefill_energy_j":          500,
		"decode_energy_j":           900,
		"phase_idle_energy_j":       600,
		"prefill_j_per_input_token": 2,
		"decode_j_per_output_token": 10,
	})
}

// Not applicable, with the reason, never Inf or NaN: without prompt
// tokens the prefill figure per input token; without power every phase
// figure; without a request of its own times (an imported recording's
// synthetic one) the split of a device serving both phases; without
// output tokens the decode figure per output token.
func TestPhaseEnergyNotApplicable(t *testing.T) {
	noPrompt := phaseArchive(t, []record.Device{{ID: "g0"}}, map[string]float64{"g0": 200},
		[]record.Request{phaseReq("A", 1, 3, 6, 0, 50)})
	noPower := phaseArchive(t, nil, nil, []record.Request{phaseReq("A", 1, 3, 6, 100, 50)})
	noOutput := phaseArchive(t, []record.Device{{ID: "g0"}}, map[string]float64{"g0": 200},
		[]record.Request{phaseReq("A", 1, 3, 3, 100, 0)})
	synth := phaseReq("S", 0, 0, 10, 100, 50)
	synth.Synthetic = true // an imported recording's request: no times of its own
	onlySynthetic := phaseArchive(t, []record.Device{{ID: "g0"}}, map[string]float64{"g0": 200}, []record.Request{synth})
	for _, tc := range []struct {
		name, dir string
		na        map[string]string
	}{
		{"no prompt tokens", noPrompt, map[string]string{"prefill_j_per_input_token": "the server reported no prompt tokens"}},
		{"no power", noPower, map[string]string{
			"prefill_energy_j": "no power source", "decode_energy_j": "no power source", "phase_idle_energy_j": "no power source",
			"prefill_j_per_input_token": "no power source", "decode_j_per_output_token": "no power source"}},
		{"a device serving both phases, no request with its own times", onlySynthetic, map[string]string{
			"prefill_energy_j": "no request with its own times", "decode_energy_j": "no request with its own times",
			"phase_idle_energy_j": "no request with its own times", "decode_j_per_output_token": "no request with its own times"}},
		{"no output tokens", noOutput, map[string]string{"decode_j_per_output_token": "no output tokens"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals, notes := evaluatePhases(t, tc.dir)
			for n, why := range tc.na {
				if v, ok := vals[n]; ok {
					t.Errorf("%s = %v, want not applicable", n, v)
				} else if !strings.Contains(notes[n], "not applicable") || !strings.Contains(notes[n], why) {
					t.Errorf("%s: note %q, want not applicable: …%s…", n, notes[n], why)
				}
			}
		})
	}
}

// An unknown role is refused when the archive is read, naming the device
// and the value (exit 2).
func TestPhaseEnergyUnknownRoleRefused(t *testing.T) {
	dir := phaseArchive(t, []record.Device{{ID: "g0", Role: "prefil"}}, map[string]float64{"g0": 200},
		[]record.Request{phaseReq("A", 1, 3, 6, 100, 50)})
	_, err := noUserDirs().Evaluate(context.Background(), dir, "benchmark-1.5", nil)
	if err == nil || !strings.Contains(err.Error(), `device "g0"`) || !strings.Contains(err.Error(), `role "prefil"`) {
		t.Errorf("error %v, want the device and its role named", err)
	}
}

// report shows the energy by host of a run over several hosts, in every
// format: node-a (prefill, 300 W × 10 s = 3000 J, 60 % of 5000 J) and
// node-b (decode, 2000 J, 40 %).
func TestReportEnergyByHost(t *testing.T) {
	rs, err := noUserDirs().Report(context.Background(), []string{disaggregated(t)}, "benchmark-1.5", true)
	if err != nil {
		t.Fatal(err)
	}
	render := func(format string) string {
		var b bytes.Buffer
		if err := rs.Render(&b, format, "test"); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		return b.String()
	}
	for format, want := range map[string][]string{
		"table":    {"GPU energy by host · run phases", "node-a", "prefill", "3000.0", "300.0", "60.0 %", "node-b", "decode", "2000.0", "40.0 %", "5000.0"},
		"markdown": {"GPU energy by host", "| node-a | prefill | p0      | 3000.0   | 300.0        | 60.0 %  |"},
		"csv":      {"host.node-a.prefill.energy_j,3000,J", "host.node-b.decode.share,0.4,fraction", "host.node-a.prefill.mean_power_w,300,W"},
		"json":     {`"host_energy": {`, `"host": "node-a"`, `"role": "prefill"`, `"energy_j": 3000`, `"share": 0.6`, `"total_j": 5000`},
		"html":     {"GPU energy by host", "<td>node-a</td><td>prefill</td><td>p0</td><td>3000.0</td><td>300.0</td>"},
	} {
		out := render(format)
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: no %q in\n%s", format, w, out)
			}
		}
		// A disaggregated run's hosts do not serve every token: no J/token
		// share.
		if strings.Contains(out, "j_per_token_share") || strings.Contains(out, "J/token share 0") {
			t.Errorf("%s: a J/token share for a disaggregated run", format)
		}
	}
}

// A run on one host without roles shows no energy by host: its report is
// what it was before hosts existed (the goldens of cmd/joulebench hold it
// byte for byte).
func TestReportOneHostHasNoEnergyByHost(t *testing.T) {
	dir := phaseArchive(t, []record.Device{{ID: "g0", Host: "h"}, {ID: "g1", Host: "h"}}, map[string]float64{"g0": 200, "g1": 100},
		[]record.Request{phaseReq("A", 1, 3, 6, 100, 50)})
	rs, err := noUserDirs().Report(context.Background(), []string{dir}, "benchmark-1.5", false)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Hosts[0] != nil {
		t.Errorf("hosts %+v, want none", rs.Hosts[0])
	}
	for _, format := range []string{"table", "json", "csv", "markdown"} {
		var b bytes.Buffer
		if err := rs.Render(&b, format, "test"); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "by host") || strings.Contains(b.String(), "host_energy") || strings.Contains(b.String(), "host.h") {
			t.Errorf("%s: an energy by host for a run on one host:\n%s", format, b.String())
		}
	}
}

// A run over two hosts without roles (two replicas of one engine, or one
// engine over two nodes): each host's energy and its part of J/token.
//
//	h1: 200 W × 10 s = 2000 J, 2/3 of 3000 J; 2000 J / 50 tokens = 40 J/token.
//	h2: 100 W × 10 s = 1000 J, 1/3; 1000 / 50 = 20 J/token.
//	40 + 20 = 60 J/token = formal_j_per_token (3000 J / 50 tokens).
func TestReportEnergyByHostMultiNode(t *testing.T) {
	dir := phaseArchive(t, []record.Device{{ID: "g0", Host: "h1"}, {ID: "g1", Host: "h2"}}, map[string]float64{"g0": 200, "g1": 100},
		[]record.Request{phaseReq("A", 1, 3, 6, 100, 50)})
	rs, err := noUserDirs().Report(context.Background(), []string{dir}, "benchmark-1.5", false)
	if err != nil {
		t.Fatal(err)
	}
	h := rs.Hosts[0]
	if h == nil || len(h.Hosts) != 2 {
		t.Fatalf("hosts %+v, want two", h)
	}
	for i, want := range []struct {
		host          string
		energy, share float64
		jpt           float64
	}{{"h1", 2000, 2.0 / 3, 40}, {"h2", 1000, 1.0 / 3, 20}} {
		got := h.Hosts[i]
		if got.Host != want.host || got.Role != "" || got.EnergyJ != want.energy || got.Share == nil || math.Abs(*got.Share-want.share) > 1e-12 ||
			got.JPerTokenShare == nil || *got.JPerTokenShare != want.jpt {
			t.Errorf("host %d: %+v, want %+v", i, got, want)
		}
	}
	var b bytes.Buffer
	if err := rs.Render(&b, "table", "test"); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"J/token share", "40.0000", "20.0000", "60.0000"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("table: no %q in\n%s", w, b.String())
		}
	}
}

// Per-role steady state: over the steady span [s, e] the disaggregated
// devices draw constant power, so prefill's steady energy is 300 W ×
// (e − s), decode's 200 W × (e − s), together steady_window_energy_j, and
// decode's steady J per output token is 200 × (e − s) / the span's output
// tokens. Windows of 2 requests, 2 of them, any CV: six requests of 100
// output tokens completing at 2..7 s reach steady state.
func TestPhaseEnergySteadySpan(t *testing.T) {
	var reqs []record.Request
	for i := range 6 {
		reqs = append(reqs, phaseReq(string(rune('a'+i)), 0.5, 1, 2+float64(i), 100, 100))
	}
	dir := phaseArchive(t,
		[]record.Device{
			{ID: "p0", Host: "node-a", Role: record.RolePrefill, Method: "power"},
			{ID: "d0", Host: "node-b", Role: record.RoleDecode, Method: "power"},
		},
		map[string]float64{"p0": 300, "d0": 200}, reqs)
	e, err := noUserDirs().Evaluate(context.Background(), dir, "benchmark-1.5", []string{"window=2", "min_windows=2", "cv_max=100"})
	if err != nil {
		t.Fatal(err)
	}
	vals, notes := map[string]float64{}, map[string]string{}
	for n, r := range e.Results.Values {
		if v, ok := r.Value.(float64); ok {
			vals[n] = v
		} else {
			notes[n] = r.Note
		}
	}
	s, okS := vals["steady_window_start"]
	end, okE := vals["steady_window_end"]
	tokens := vals["steady_window_tokens"]
	if !okS || !okE || end <= s || tokens <= 0 {
		t.Fatalf("steady span [%v, %v] with %v tokens (%s)", s, end, tokens, notes["steady_window_start"])
	}
	span := end - s
	wantValues(t, vals, notes, map[string]float64{
		"prefill_steady_energy_j":          300 * span,
		"decode_steady_energy_j":           200 * span,
		"steady_window_energy_j":           500 * span,
		"decode_steady_j_per_output_token": 200 * span / tokens,
	})
}
