package archive

import (
	"github.com/joulebench/joulebench/archive/record"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadArchive feeds mutated archives (run.json, power.csv,
// requests.jsonl, engine_metrics.jsonl; seeded with the sample runs and
// edits of them) to Load. Load must never panic, and whatever it accepts
// must keep to the bounds of docs/archive-v1.md, which assertBounds checks
// on its own, from the document, without the reader's code: among them
// the facts run.json states (requests inside their stage, only listed
// devices, physical bounds per domain, token counts within the request's
// own evidence), so that an accepted mutation cannot move a figure the
// way the adversarial pass did (a formal stage cut short, power of an
// unlisted device summed in, 10^6 × power, 4 Mi tokens per request). CI runs it
// for a bounded time under a memory limit (.ci/run).
func FuzzReadArchive(f *testing.F) {
	for _, dir := range []string{sampleRun, "testdata/sample-run-ok"} {
		files := make([][]byte, 4)
		for i, name := range []string{RunFile, PowerFile, RequestsFile, EngineMetricsFile} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				f.Fatal(err)
			}
			files[i] = b
		}
		f.Add(files[0], files[1], files[2], files[3])
		// The edits of the bounds table, as seeds: each close to a bound.
		for _, tc := range append(requestBoundCases(), powerAndMetaBoundCases()...) {
			e := [4][]byte{files[0], files[1], files[2], files[3]}
			i := map[string]int{RunFile: 0, PowerFile: 1, RequestsFile: 2, EngineMetricsFile: 3}[tc.file]
			e[i] = []byte(strings.Replace(string(e[i]), tc.old, tc.new, 1))
			f.Add(e[0], e[1], e[2], e[3])
		}
		// The lies of the facts table: each contradicts run.json.
		for _, tc := range factCases() {
			e := [4][]byte{files[0], files[1], files[2], files[3]}
			i := map[string]int{RunFile: 0, PowerFile: 1, RequestsFile: 2, EngineMetricsFile: 3}[tc.file]
			e[i] = []byte(strings.Replace(string(e[i]), tc.old, tc.new, 1))
			f.Add(e[0], e[1], e[2], e[3])
		}
		// Cut at a line boundary, and mid-line.
		f.Add(files[0], files[1][:len(files[1])/2], files[2], files[3])
		half := strings.SplitAfter(string(files[2]), "\n")
		f.Add(files[0], files[1], []byte(strings.Join(half[:len(half)/2], "")), files[3])
	}
	f.Fuzz(func(t *testing.T, runJSON, power, requests, metrics []byte) {
		dir := t.TempDir()
		for name, b := range map[string][]byte{RunFile: runJSON, PowerFile: power, RequestsFile: requests, EngineMetricsFile: metrics} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run, err := Load(dir)
		if err != nil {
			return
		}
		assertBounds(t, run)
	})
}

// assertBounds fails t when run breaks a bound that docs/archive-v1.md
// ("Bounds") states. It is written from the document, not from the
// reader's code, so that the two check each other.
func assertBounds(t *testing.T, run *record.Run) {
	t.Helper()
	m := run.Meta
	lo, hi := math.Max(0, m.StartedAt-60), math.Inf(1)
	if m.EndedAt != 0 {
		hi = m.EndedAt + 60
	}
	inRun := func(what string, v float64) {
		if !(v >= lo && v <= hi) || v < 0 {
			t.Errorf("accepted %s = %v outside the run [%v, %v]", what, v, lo, hi)
		}
	}
	if m.StartedAt < 0 || (m.EndedAt != 0 && m.EndedAt < m.StartedAt) {
		t.Errorf("accepted started_at %v, ended_at %v", m.StartedAt, m.EndedAt)
	}
	if len(m.Parameters) > 1024 {
		t.Errorf("accepted %d parameters", len(m.Parameters))
	}
	for _, n := range []int{m.Profile.Version, m.RequestSet.Count, m.RequestSet.Unique, m.Engine.ContextLength, m.Engine.TensorParallel, m.Host.CPUs} {
		if n < 0 {
			t.Errorf("accepted a negative count in run.json: %+v", m)
		}
	}
	if m.Telemetry.IntervalS < 0 {
		t.Errorf("accepted interval_s %v", m.Telemetry.IntervalS)
	}
	for _, s := range m.Stages {
		inRun("stage "+s.Name+" start", s.Start)
		if !s.Open {
			inRun("stage "+s.Name+" end", s.End)
			if s.End < s.Start {
				t.Errorf("accepted stage %s ending before it starts: %+v", s.Name, s)
			}
		}
	}
	for _, e := range m.Events {
		inRun("event "+e.Name, e.T)
	}
	assertRequestBounds(t, run.Requests, inRun)
	assertPowerBounds(t, run.Power, inRun)
	assertFacts(t, run)
	assertTokenEvidence(t, run)
	for _, e := range run.EngineMetrics {
		inRun("engine metric t", e.T)
	}
	if m.Status == record.StatusComplete {
		formal := 0
		for _, q := range run.Requests {
			if q.Phase == "formal" {
				formal++
			}
		}
		if formal < m.RequestSet.Count {
			t.Errorf("accepted a complete run with %d formal requests of request_set.count %d", formal, m.RequestSet.Count)
		}
		for _, d := range m.Hardware.Devices {
			found := false
			for _, p := range run.Power {
				found = found || p.Device == d.ID
			}
			if !found {
				t.Errorf("accepted a complete run without power samples of device %s", d.ID)
			}
		}
	}
}

func assertRequestBounds(t *testing.T, qs []record.Request, inRun func(string, float64)) {
	t.Helper()
	for _, q := range qs {
		counts := []struct {
			v, hi int
		}{{q.PromptTokens, 1 << 27}, {q.OutputTokens, 4194304}, {q.ReasoningTokens, 4194304}, {q.OutputChars, 2147483647},
			{q.MaxTokens, 2147483647}, {q.DistinctChunks, 32}, {q.BoundedChunks, 4194304}}
		for _, n := range q.TokenCounts {
			counts = append(counts, struct{ v, hi int }{n, 4194304})
		}
		for _, c := range counts {
			if c.v < 0 || c.v > c.hi {
				t.Errorf("request %q: accepted a count %d outside [0, %d]", q.ID, c.v, c.hi)
			}
		}
		if !q.OK && q.OutputTokens != 0 {
			t.Errorf("request %q: accepted a failed request with %d output tokens", q.ID, q.OutputTokens)
		}
		// In order: sent_at ≤ first_token_at ≤ token_times ≤ done_at, each
		// present one in the run.
		seq := []float64{q.SentAt, q.FirstTokenAt}
		seq = append(seq, q.TokenTimes...)
		seq = append(seq, q.DoneAt)
		prev := math.Inf(-1)
		for _, v := range seq {
			if v == 0 {
				continue
			}
			inRun("request "+q.ID+" time", v)
			if v < prev {
				t.Errorf("request %q: accepted times out of order: %v", q.ID, seq)
			}
			prev = v
		}
		if q.FirstTokenBoundS < 0 || (q.SentAt != 0 && q.FirstTokenAt != 0 && q.FirstTokenBoundS > q.FirstTokenAt-q.SentAt+1e-6) {
			t.Errorf("request %q: accepted first_token_bound_s %v", q.ID, q.FirstTokenBoundS)
		}
	}
}

func assertPowerBounds(t *testing.T, ps []record.PowerSample, inRun func(string, float64)) {
	t.Helper()
	last := map[string]float64{}
	for _, p := range ps {
		inRun("power t", p.T)
		if prev, ok := last[p.Device]; ok && p.T < prev {
			t.Errorf("accepted device %s going back in time: %v after %v", p.Device, p.T, prev)
		}
		last[p.Device] = p.T
		if !(p.PowerW >= 0) || math.IsInf(p.PowerW, 0) || (p.HasEnergy && (!(p.EnergyJ >= 0) || math.IsInf(p.EnergyJ, 0))) || p.MemUsedBytes < -1 {
			t.Errorf("accepted power sample %+v", p)
		}
	}
}

// assertFacts fails t when run contradicts what its run.json states
// (docs/archive-v1.md, "Bounds"): status one of the four; a complete run
// with every stage ended and every request of a stage's phase inside the
// stage; power only of listed devices (any device, read as a GPU, when
// run.json lists none), within 5 kW (gpu), 2 kW (cpu,
// dram) or 100 kW (node); counters within 2^43 J; power limits within
// the same bounds; a successful request's output_tokens within its
// max_tokens and its token_counts.
func assertFacts(t *testing.T, run *record.Run) {
	t.Helper()
	m := run.Meta
	switch m.Status {
	case "running", "complete", "failed", "interrupted":
	default:
		t.Errorf("accepted status %q", m.Status)
	}
	bound := map[string]float64{"": 5000, "gpu": 5000, "cpu": 2000, "dram": 2000, "node": 100000}
	maxW := map[string]float64{}
	for _, d := range m.Hardware.Devices {
		b, ok := bound[d.Domain]
		if !ok || !(d.PowerLimitW >= 0 && d.PowerLimitW <= b) {
			t.Errorf("accepted device %+v", d)
		}
		maxW[d.ID] = b
	}
	for _, p := range run.Power {
		b, ok := maxW[p.Device]
		if len(m.Hardware.Devices) == 0 {
			// run.json lists no device (older writers): every device of
			// power.csv is read as a GPU.
			b, ok = bound["gpu"], true
		}
		if !ok || p.PowerW > b || (p.HasEnergy && p.EnergyJ > 1<<43) {
			t.Errorf("accepted power sample %+v (devices %+v)", p, m.Hardware.Devices)
		}
	}
	stages := map[string]record.Stage{}
	for _, s := range m.Stages {
		if m.Status == "complete" && s.Open {
			t.Errorf("accepted a complete run with stage %s open", s.Name)
		}
		stages[s.Name] = s
	}
	for _, q := range run.Requests {
		if s, ok := stages[q.Phase]; ok {
			if q.SentAt != 0 && q.SentAt < s.Start-1e-6 {
				t.Errorf("accepted request %s sent before its stage: %v < %v", q.ID, q.SentAt, s.Start)
			}
			if m.Status == "complete" && q.DoneAt > s.End+1e-6 {
				t.Errorf("accepted request %s done after its stage: %v > %v", q.ID, q.DoneAt, s.End)
			}
		}
		if !q.OK {
			continue
		}
		if q.MaxTokens > 0 && q.OutputTokens > q.MaxTokens {
			t.Errorf("accepted request %s with %d output tokens of max_tokens %d", q.ID, q.OutputTokens, q.MaxTokens)
		}
		if q.TokenCounts != nil {
			sum := 0
			for _, n := range q.TokenCounts {
				sum += n
			}
			if q.OutputTokens > sum {
				t.Errorf("accepted request %s with %d output tokens in chunks of %d", q.ID, q.OutputTokens, sum)
			}
		}
	}
}
