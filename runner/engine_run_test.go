package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workload"
)

// runForTest is an engineRun of benchmark-1.5 with its request sets
// frozen, ready for openArchive and checkFileLimit.
func runForTest(t *testing.T, simulated bool, sets ...string) *engineRun {
	t.Helper()
	src, err := profiles.Read("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Spec{FindProfile: (&profiles.Finder{}).Find, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := r.loadProfile(src, "benchmark-1.5", sets)
	if err != nil {
		t.Fatal(err)
	}
	d := &steps.Deps{}
	if err := d.Prepare(l); err != nil {
		t.Fatal(err)
	}
	return &engineRun{r: r, s: r.s, l: l, deps: d, engineKind: "sim", simulated: simulated, now: time.Now}
}

// Two runs started in the same second get two run ids and two directories.
func TestRunIDsUniqueWithinASecond(t *testing.T) {
	t.Chdir(t.TempDir())
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var dirs []string
	for range 3 {
		r := runForTest(t, true, "request_count=4")
		r.now = func() time.Time { return at }
		if err := r.openArchive(map[string]string{}); err != nil {
			t.Fatal(err)
		}
		r.close()
		dirs = append(dirs, r.dir)
	}
	want := []string{"20260102T030405Z-benchmark-1.5-sim", "20260102T030405Z-benchmark-1.5-sim-2", "20260102T030405Z-benchmark-1.5-sim-3"}
	for i, d := range dirs {
		if d != filepath.Join("runs", want[i]) {
			t.Errorf("run %d: directory %s, want runs/%s", i+1, d, want[i])
		}
	}
	// An explicit --out that exists is never replaced nor renamed.
	r := runForTest(t, true, "request_count=4")
	r.dir = dirs[0]
	r.now = func() time.Time { return at }
	if err := r.openArchive(map[string]string{}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("existing --out: %v", err)
	}
	r.close()
	// The parent of a multi-engine run likewise.
	a, err := newDir("runs/x-engines")
	b, err2 := newDir("runs/x-engines")
	if err != nil || err2 != nil || a == b {
		t.Errorf("newDir twice: %q %v, %q %v", a, err, b, err2)
	}
}

type fakeLimit struct {
	soft, hard uint64
	raiseErr   error
	raised     bool
}

func (f *fakeLimit) Get() (uint64, uint64, bool) { return f.soft, f.hard, true }
func (f *fakeLimit) RaiseToHard() error {
	if f.raiseErr != nil {
		return f.raiseErr
	}
	f.raised, f.soft = true, f.hard
	return nil
}

// benchmark-1.5 with request_count=24 sends its 24 formal requests at once
// (unlimited; warm-up: 8 at a time), so it needs 24 + 64 (the reserve) = 88
// open files, and with the in-process simulator 24 more: 112.
func TestFileLimitVsConnections(t *testing.T) {
	r := runForTest(t, false, "request_count=24")
	if got := r.connections(); got != 24 {
		t.Fatalf("connections %d, want 24", got)
	}
	for _, tc := range []struct {
		name      string
		simulated bool
		lim       fakeLimit
		raised    bool
		want      string
	}{
		{"enough", false, fakeLimit{soft: 88, hard: 88}, false, ""},
		{"raised to the hard limit", false, fakeLimit{soft: 87, hard: 4096}, true, ""},
		{"hard limit too low", false, fakeLimit{soft: 50, hard: 87}, false, "up to 24 requests in flight, which needs about 88 open files, but this process may open 50 (hard limit 87)"},
		{"raise refused", false, fakeLimit{soft: 50, hard: 4096, raiseErr: errors.New("EPERM")}, false, "may open 50"},
		{"simulator: both ends", true, fakeLimit{soft: 111, hard: 111}, false, "about 112 open files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.simulated = tc.simulated
			lim := tc.lim
			err := r.checkFileLimit(&lim)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
			if tc.want != "" && CodeOf(err) != CodeInvalid {
				t.Errorf("exit code %d, want %d", CodeOf(err), CodeInvalid)
			}
			if lim.raised != tc.raised {
				t.Errorf("raised %v, want %v", lim.raised, tc.raised)
			}
		})
	}
	// A concurrency-mode profile needs its concurrency, not its set.
	r = runForTest(t, false, "request_count=24")
	for _, st := range r.l.Steps {
		if c, ok := st.Config.(*steps.RequestsConfig); ok {
			c.Mode, c.Concurrency = "concurrency", 5
		}
	}
	if got := r.connections(); got != 8 { // the warm-up's 8 is now the most
		t.Errorf("concurrency 5: connections %d, want 8", got)
	}
	// Any shape's bound in flight counts, as the load shape itself says
	// it: gamma capped at 5 in flight, unlimited capped at 6 (run as
	// concurrency 6); a poisson stream without a cap may have all 24.
	for _, tc := range []struct {
		name string
		set  func(c *steps.RequestsConfig)
		want int
	}{
		{"gamma, max_concurrency 5", func(c *steps.RequestsConfig) { c.Mode, c.Rate, c.Burstiness, c.MaxConcurrency = "gamma", 2, 0.5, 5 }, 8},
		{"unlimited, max_concurrency 6", func(c *steps.RequestsConfig) { c.Mode, c.MaxConcurrency = "unlimited", 6 }, 8},
		{"poisson, no cap", func(c *steps.RequestsConfig) { c.Mode, c.Rate = "poisson", 2 }, 24},
	} {
		r = runForTest(t, false, "request_count=24")
		for _, st := range r.l.Steps {
			if c, ok := st.Config.(*steps.RequestsConfig); ok {
				tc.set(c)
			}
		}
		if got := r.connections(); got != tc.want {
			t.Errorf("%s: connections %d, want %d", tc.name, got, tc.want)
		}
	}
}

// With several engines each run gets the flags that apply to it: --slots
// and --model-file go to llama.cpp's run, not to the simulator's.
func TestPerEngineFlags(t *testing.T) {
	set := map[string]bool{"model-file": true, "slots": true}
	changed := func(f string) bool { return set[f] }
	r, err := New(Spec{FindProfile: (&profiles.Finder{}).Find, Engines: []string{"sim", "llamacpp"},
		Engine: EngineOptions{Common: engines.Common{ModelFile: "m.gguf", Slots: 2}}, Changed: changed})
	if err != nil {
		t.Fatal(err)
	}
	per, err := r.perEngineFlags([]string{"sim", "llamacpp"}, changed)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true} {
		for f := range set {
			if got := per[i](f); got != want {
				t.Errorf("engine %d, --%s: changed = %v, want %v", i, f, got, want)
			}
		}
	}
}

// --model KIND=ID gives each engine of a run its own model; a plain ID
// serves every engine without its own.
func TestModelFor(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   map[string]string
	}{
		{nil, map[string]string{"ollama": "", "llamacpp": ""}},
		{[]string{"tiny"}, map[string]string{"ollama": "tiny", "llamacpp": "tiny"}},
		{[]string{"ollama=tiny", "llamacpp=tiny.gguf"}, map[string]string{"ollama": "tiny", "llamacpp": "tiny.gguf"}},
		{[]string{"base", "ollama=tiny"}, map[string]string{"ollama": "tiny", "llamacpp": "base"}},
	} {
		r, err := New(Spec{FindProfile: (&profiles.Finder{}).Find, Engine: EngineOptions{Models: tc.values}})
		if err != nil {
			t.Fatal(err)
		}
		for kind, want := range tc.want {
			if got := r.modelFor(kind); got != want {
				t.Errorf("%v: modelFor(%s) = %q, want %q", tc.values, kind, got, want)
			}
		}
	}
}

// Closing what a run opened reports every failure, naming what failed
// (before, the errors of closing the archive and the power source were
// dropped), and still closes the rest.
func TestCloseJoinsErrors(t *testing.T) {
	e := &engineRun{}
	var order []string
	add := func(what string, err error) {
		e.onClose(what, func() error { order = append(order, what); return err })
	}
	add("the archive runs/x", errors.New("archive: sync power.csv: input/output error"))
	add("joulebench.log", nil)
	add("the power source dcgm", errors.New("connection reset"))
	err := e.close()
	if got := strings.Join(order, ", "); got != "the power source dcgm, joulebench.log, the archive runs/x" {
		t.Errorf("closed in the order %s, want the last opened first", got)
	}
	for _, want := range []string{"close the archive runs/x: archive: sync power.csv: input/output error", "close the power source dcgm: connection reset"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("close() = %v, want it to say %q", err, want)
		}
	}
}

// --engine-bin KIND=PATH gives each engine of a run its own executable; a
// plain PATH serves every engine without its own (as --model KIND=ID).
func TestBinFor(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   map[string]string
	}{
		{nil, map[string]string{"ollama": "", "llamacpp": ""}},
		{[]string{"/opt/bin/x"}, map[string]string{"ollama": "/opt/bin/x", "llamacpp": "/opt/bin/x"}},
		{[]string{"ollama=/opt/ollama", "llamacpp=./llama-server"}, map[string]string{"ollama": "/opt/ollama", "llamacpp": "./llama-server"}},
		{[]string{"/opt/base", "ollama=/opt/ollama"}, map[string]string{"ollama": "/opt/ollama", "llamacpp": "/opt/base"}},
		// "=" after something that is not a kind is part of a path.
		{[]string{"/opt/a=b/llama-server"}, map[string]string{"llamacpp": "/opt/a=b/llama-server"}},
	} {
		r, err := New(Spec{FindProfile: (&profiles.Finder{}).Find, Engine: EngineOptions{Bins: tc.values}, Engines: []string{"ollama", "llamacpp"}})
		if err != nil {
			t.Fatal(err)
		}
		for kind, want := range tc.want {
			if got, err := r.binFor(kind); got != want || err != nil {
				t.Errorf("%v: binFor(%s) = %q, %v; want %q", tc.values, kind, got, err, want)
			}
		}
	}
}

// An --engine-bin that is a file without an execute bit is refused by
// name; an executable one passes.
func TestCheckExecutable(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "llama-server")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkExecutable(plain); err == nil || !strings.Contains(err.Error(), plain+" is not executable (mode -rw-r--r--") {
		t.Errorf("not executable: %v", err)
	}
	if err := os.Chmod(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkExecutable(plain); err != nil {
		t.Errorf("executable: %v", err)
	}
}

// A conversation's turns go one after another: 2 conversations of 50,000
// turns each keep at most 2 requests in flight (unlimited mode), not
// 100,000; the warm-up's 8 is then the most, and 8 + 64 (the reserve) = 72
// open files are enough.
func TestFileLimitCountsConversationsNotTurns(t *testing.T) {
	var b strings.Builder
	for c := range 2 {
		b.WriteString(`{"id":"c` + strconv.Itoa(c) + `","turns":[`)
		for k := range 50_000 {
			if k > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"user":"hi","max_tokens":4}`)
		}
		b.WriteString("]}\n")
	}
	p := filepath.Join(t.TempDir(), "conv.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := profiles.Read("benchmark-1.5")
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Spec{FindProfile: (&profiles.Finder{}).Find, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := r.loadProfile(src, "benchmark-1.5", []string{"request_count=0"})
	if err != nil {
		t.Fatal(err)
	}
	d := &steps.Deps{Dataset: p, DatasetFormat: workload.FormatConversation}
	if err := d.Prepare(l); err != nil {
		t.Fatal(err)
	}
	e := &engineRun{r: r, s: r.s, l: l, deps: d, engineKind: "sim", now: time.Now}
	if got := e.connections(); got != 8 {
		t.Errorf("connections %d, want 8", got)
	}
	if err := e.checkFileLimit(&fakeLimit{soft: 72, hard: 72}); err != nil {
		t.Error(err)
	}
}

// The simulator's quick set shortens a dataset's reference answers
// (benchmark-1.5's quick max_tokens: 320) but leaves a dataset that gives
// its own output lengths alone: prefix:...,output_len=64 gave requests of
// 320 tokens. An explicit --set max_tokens still overrides it.
func TestQuickMaxTokensLeavesDatasetOutputLen(t *testing.T) {
	const prefix = "prefix:prefixes=2,prefix_len=16,suffix_len=4,output_len=64"
	for _, tc := range []struct {
		name, dataset string
		sets          []string
		quickMax      bool // the quick max_tokens applied
		want          int  // every request's max_tokens
	}{
		{"reference lengths: quick 320", "", nil, true, 320},
		{"prefix output_len stands", prefix, nil, false, 64},
		{"random output_len stands", "random:input_len=8,output_len=48,range_ratio=0", nil, false, 48},
		{"explicit max_tokens wins", prefix, []string{"max_tokens=10"}, false, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(Spec{Profile: "benchmark-1.5", Quick: true, FindProfile: (&profiles.Finder{}).Find, Version: "test",
				Dataset: DatasetOptions{Name: tc.dataset}})
			if err != nil {
				t.Fatal(err)
			}
			e := &engineRun{r: r, s: r.s, now: time.Now}
			if err := e.prepareProfile(append([]string{"request_count=8"}, tc.sets...)); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(strings.Join(e.quickApplied, " "), "max_tokens=320"); got != tc.quickMax {
				t.Errorf("quick set applied %q", e.quickApplied)
			}
			d := &steps.Deps{Dataset: tc.dataset}
			if err := d.Prepare(e.l); err != nil {
				t.Fatal(err)
			}
			for _, st := range e.l.Steps {
				if c, ok := st.Config.(*steps.RequestsConfig); ok {
					name := tc.dataset
					if name == "" {
						name = c.Dataset
					}
					set, err := workload.Open(name, workload.Options{Count: c.Count, MaxTokens: c.MaxTokens, Repeat: true})
					if err != nil {
						t.Fatal(err)
					}
					for _, p := range set.Prompts {
						if p.MaxTokens != tc.want {
							t.Fatalf("prompt %s: max_tokens %d, want %d", p.ID, p.MaxTokens, tc.want)
						}
					}
				}
			}
		})
	}
}
