package runner

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/workflow"
)

// TestParseDeploymentRefuses: each rule of a deployment file, broken,
// is refused at its line and column.
func TestParseDeploymentRefuses(t *testing.T) {
	reg := all.Registry()
	for _, tc := range []struct{ name, src, want string }{
		{"bad role", "entry: a\nparts:\n  - {name: a, role: prefil, kind: sim}\n",
			`d.yaml:3:21: parts[0].role: "prefil": want one of prefill, decode, router, replica`},
		{"missing entry", "parts:\n  - {name: a, role: prefill, kind: sim}\n  - {name: b, role: decode, kind: sim}\n",
			"d.yaml:1:1: entry: required with several parts: the part requests go to (one of a, b)"},
		{"entry not a part", "entry: gateway\nparts:\n  - {name: a, role: replica, kind: sim}\n",
			`d.yaml:1:8: entry: "gateway" is not a part (parts: a)`},
		{"unknown key", "parts:\n  - {name: a, role: replica, kind: sim, gpus: [0]}\n",
			`d.yaml:2:41: parts[0]: unknown key "gpus"`},
		{"neither kind nor url", "parts:\n  - {name: a, role: replica}\n",
			"d.yaml:2:5: parts[0]: give kind (an engine joulebench starts: "},
		{"unknown kind", "parts:\n  - {name: a, role: replica, kind: vllmm}\n",
			`d.yaml:2:36: parts[0].kind: --engine "vllmm": want one of`},
		{"bad url", "parts:\n  - {name: a, role: replica, url: 'localhost:8000'}\n",
			`d.yaml:2:35: parts[0].url: "localhost:8000": want http://HOST:PORT`},
		{"args of an external part", "parts:\n  - {name: a, role: replica, url: 'http://h:1', args: [x]}\n",
			"d.yaml:2:55: parts[0].args: applies to a managed part"},
		{"name twice", "entry: a\nparts:\n  - {name: a, role: prefill, kind: sim}\n  - {name: a, role: decode, kind: sim}\n",
			`d.yaml:4:12: parts[1].name: part "a" named twice`},
		{"device twice", "entry: a\nparts:\n  - {name: a, role: prefill, kind: sim, devices: [gpu0]}\n  - {name: b, role: decode, kind: sim, devices: [gpu0]}\n",
			`d.yaml:4:50: parts[1].devices: device "gpu0" is part "a"'s already`},
		{"no parts", "entry: a\n", "d.yaml:1:1: parts: required: at least one part"},
	} {
		_, err := ParseDeployment([]byte(tc.src), "d.yaml", reg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %q", tc.name, err, tc.want)
		}
	}
	df, err := ParseDeployment([]byte("entry: r\nparts:\n  - {name: p, role: prefill, kind: sim, devices: [gpu0]}\n  - {name: r, role: router, url: 'http://10.0.0.2:8000'}\n"), "d.yaml", reg)
	if err != nil || df.entry() != "r" || df.served().Name != "p" || df.kind() != "sim" || partHost(df.Parts[1]) != "10.0.0.2" {
		t.Fatalf("good file: %+v, %v", df, err)
	}
	devs := []record.Device{{ID: "gpu0"}, {ID: "gpu1"}}
	df.labelDevices(devs)
	if devs[0].Role != record.RolePrefill || devs[0].Host == "" || devs[1].Role != "" {
		t.Errorf("labelled devices %+v: want gpu0 the prefill part's, gpu1 no part's", devs)
	}
}

func writeDeployment(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "deployment.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunDeploymentParts: two managed simulated replicas, requests to the
// first; run.json lists both parts, managed, with their URLs (the tiny
// profile has no verify_engine step: no identity is asked).
func TestRunDeploymentParts(t *testing.T) {
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	s.Deployment = writeDeployment(t, "entry: one\nparts:\n  - {name: one, role: replica, kind: sim, host: node-a}\n  - {name: two, role: replica, kind: sim, host: node-b}\n")
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatalf("run: %v\n%s", err, msgs.String())
	}
	run, err := archive.Load(s.Out)
	if err != nil {
		t.Fatal(err)
	}
	dep := run.Meta.Deployment
	if run.Meta.Status != record.StatusComplete || dep == nil || dep.Entry != "one" || len(dep.Parts) != 2 {
		t.Fatalf("status %s, deployment %+v", run.Meta.Status, dep)
	}
	for i, host := range []string{"node-a", "node-b"} {
		p := dep.Parts[i]
		if p.Host != host || p.Role != record.RoleReplica || !p.Managed || p.Kind != "sim" || !strings.HasPrefix(p.URL, "http://127.0.0.1:") {
			t.Errorf("part %d: %+v", i, p)
		}
	}
	if run.Meta.Engine.URL != dep.Parts[0].URL {
		t.Errorf("engine URL %s, want the entry's %s", run.Meta.Engine.URL, dep.Parts[0].URL)
	}
}

// TestRunDeploymentPartNotReady: an external part with no server at its
// URL fails the run, and the reason names the part.
func TestRunDeploymentPartNotReady(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	s.Deployment = writeDeployment(t, "entry: one\nparts:\n  - {name: one, role: prefill, kind: sim}\n  - {name: gone, role: decode, url: 'http://"+addr+"', kind: openai}\n")
	_, err = Run(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), `deployment part "gone" (decode on 127.0.0.1): not ready`) {
		t.Fatalf("run: %v", err)
	}
	run, lerr := archive.Load(s.Out)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if run.Meta.Status != record.StatusFailed || !strings.Contains(run.Meta.Reason, `part "gone"`) {
		t.Errorf("status %s, reason %q", run.Meta.Status, run.Meta.Reason)
	}
}

// TestRunDeploymentAllExternal: a deployment of external parts alone (as
// a Slurm job that started its parts writes) is checked as a server the
// run attaches to, not as an engine it would start: the run gets as far
// as the part's readiness, which names it.
func TestRunDeploymentAllExternal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	s.Deployment = writeDeployment(t, "parts:\n  - {name: server, role: replica, url: 'http://"+addr+"'}\n")
	_, err = Run(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), `deployment part "server" (replica on 127.0.0.1): not ready`) {
		t.Fatalf("run: %v", err)
	}
}

// TestDeploymentRecordRedacts: a managed part's command line and an
// external part's URL are archived with their secrets redacted, as the
// engine's are.
func TestDeploymentRecordRedacts(t *testing.T) {
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Deployment = writeDeployment(t, "entry: r\nparts:\n"+
		"  - {name: p, role: prefill, kind: vllm, model: m, args: [--api-key, sk-secret-1]}\n"+
		"  - {name: r, role: router, url: 'http://user:pw-secret-2@10.0.0.2:8000/?token=tk-secret-3'}\n")
	r, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	es, err := r.setupDeployment(engineEnv{Clock: workflow.NewClock()})
	if err != nil {
		t.Fatal(err)
	}
	rec := es.Engine.(interface{ Record() *record.Deployment }).Record()
	// A managed part's bin is checked before anything starts.
	s.Deployment = writeDeployment(t, "parts:\n  - {name: p, role: replica, kind: vllm, model: m, bin: /nonexistent/vllm}\n")
	r, err = New(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.setupDeployment(engineEnv{Clock: workflow.NewClock()}); err == nil || !strings.Contains(err.Error(), `part "p": bin: /nonexistent/vllm does not exist`) {
		t.Errorf("missing bin: %v", err)
	}
	b, _ := json.Marshal(rec)
	for _, secret := range []string{"sk-secret-1", "pw-secret-2", "tk-secret-3"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("%s archived: %s", secret, b)
		}
	}
	if !strings.Contains(string(b), "[redacted]") || rec.Parts[0].Command[0] == "" {
		t.Errorf("record %s", b)
	}
}

// TestDocsDeploymentExample: the deployment file docs/engines.md shows
// is read as written.
func TestDocsDeploymentExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "engines.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```yaml\n# deployment.yaml")
	if !ok {
		t.Fatal("docs/engines.md shows no deployment.yaml")
	}
	block, _, _ = strings.Cut(block, "```")
	df, err := ParseDeployment([]byte("# deployment.yaml"+block), "docs/engines.md", all.Registry())
	if err != nil {
		t.Fatal(err)
	}
	if df.entry() != "router" || len(df.Parts) != 3 || df.Parts[1].Role != record.RoleDecode || df.Parts[2].managed() {
		t.Errorf("%+v", df)
	}
}

func TestPartLogPrefixesLines(t *testing.T) {
	var b strings.Builder
	w := partLog(&b, "decode")
	for _, s := range []string{"INFO start", "ing\nready\n", "x"} {
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.String(); got != "[decode] INFO starting\n[decode] ready\n" {
		t.Errorf("log %q", got)
	}
}

// A user's deployment of simulated parts (docs/engines.md's example) runs
// on the simulator's GPUs:
// each part's GPUs (named by its devices, on its host, with its role)
// follow that part's load, with the part's own engine settings (here two
// hardware presets). Requests go to the entry, so its GPUs draw more than
// those of the idle part, and each part's energy is its own.
func TestRunDeploymentSimulatedParts(t *testing.T) {
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	doc, err := os.ReadFile(filepath.Join("..", "docs", "engines.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```yaml\nentry: busy")
	if !ok {
		t.Fatal("docs/engines.md shows no deployment of simulated parts")
	}
	block, _, _ = strings.Cut(block, "```")
	s.Deployment = writeDeployment(t, "entry: busy"+block) // the example of docs/engines.md, as written
	s.Sets = []string{"request_count=32", "concurrency=16", "max_tokens=64"}
	var logged []string
	s.OpenTelemetry = testTelemetry(t, &logged, "sim").Open // the simulator's source, nodes and all
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatalf("run: %v\n%s", err, msgs.String())
	}
	run, err := archive.Load(s.Out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ host, name string }{
		"gpuA0": {"node-a", "Simulated H100 SXM5 80GB"}, "gpuA1": {"node-a", "Simulated H100 SXM5 80GB"},
		"gpuB": {"node-b", "Simulated H200 SXM 141GB"},
	}
	devs := run.Meta.Hardware.Devices
	if len(devs) != len(want) {
		t.Fatalf("devices %+v, want gpuA0, gpuA1, gpuB", devs)
	}
	for _, d := range devs {
		w, ok := want[d.ID]
		if !ok || d.Host != w.host || d.Name != w.name || d.Role != record.RoleReplica {
			t.Errorf("device %+v, want %+v", d, w)
		}
	}
	// Each device's mean power over the formal stage above what its board
	// draws loaded and idle (P_idle + ready extra: 90 W on the H100, 95 W
	// on the H200 presets): the busy part's GPUs worked, the idle part's
	// only still fall from loading (a 2 s decay), far less.
	var formal record.Stage
	for _, st := range run.Meta.Stages {
		if st.Name == "formal" {
			formal = st
		}
	}
	ready := map[string]float64{"gpuA0": 90, "gpuA1": 90, "gpuB": 95}
	sum, n := map[string]float64{}, map[string]int{}
	for _, p := range run.Power {
		if p.T >= formal.Start && p.T <= formal.End {
			sum[p.Device] += p.PowerW - ready[p.Device]
			n[p.Device]++
		}
	}
	above := func(d string) float64 { return sum[d] / float64(max(1, n[d])) }
	if !(above("gpuA0") > above("gpuB")+50 && above("gpuA1") > above("gpuB")+50) {
		t.Errorf("mean power over the formal stage above ready: gpuA0 %.1f W, gpuA1 %.1f W, gpuB %.1f W; want the busy part's 50 W above the idle part's",
			above("gpuA0"), above("gpuA1"), above("gpuB"))
	}
	if hw := run.Meta.Engine.Extra["sim_hardware"]; hw != "h100-sxm/mixtral-8x7b" {
		t.Errorf("engine's sim_hardware %v, want the entry's h100-sxm/mixtral-8x7b", hw)
	}
}

// A part's settings are checked as the run's flags are: an unknown one, a
// value the engine does not take, or settings on an external part are
// errors at their position.
func TestDeploymentPartSettingsRefused(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"entry: a\nparts:\n  - {name: a, role: replica, kind: sim, settings: {sim-gpu: v100}}\n", `dep.yaml:3:51: parts[0].settings: --sim-gpu "v100"`},
		{"entry: a\nparts:\n  - {name: a, role: replica, kind: sim, settings: {no-such: x}}\n", "no engine takes it"},
		{"entry: a\nparts:\n  - {name: a, role: replica, url: 'http://127.0.0.1:1', settings: {sim-gpu: h100-sxm}}\n", "applies to a managed part"},
	} {
		_, err := ParseDeployment([]byte(c.yaml), "dep.yaml", all.Registry())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.yaml, err, c.want)
		}
	}
}
