package campaign

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const good = `name: t
profile: benchmark-1.5
out: out
repetitions: 2
matrix:
  engine: [{kind: vllm}, {kind: sglang}]
  model:
    - {id: org/small, params: 8e9}
    - {id: org/big, params: 70e9, tp: 4}
  scenario: [{name: chat, dataset: chat}]
  set:
    warmup_requests: ["4", "8"]
exclude:
  - {engine: sglang, model: big}
slurm: {gpus: true, time: "01:00:00", partition: gpu, options: [--account=abc]}
`

func load(t *testing.T, src string) *Campaign {
	t.Helper()
	c, err := Load([]byte(src), filepath.Join(t.TempDir(), "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoadErrorsHavePositions(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"unknown key", "name: t\nprofile: p\nout: o\nmatrix: {}\nbogus: 1\n", "c.yaml:5:1: unknown key \"bogus\""},
		{"no name", "profile: p\nout: o\nmatrix: {}\n", "name: required"},
		{"bad repetitions", "name: t\nprofile: p\nout: o\nrepetitions: 0\nmatrix: {}\n", "c.yaml:4:14: repetitions: must be at least 1"},
		{"engine without kind", "name: t\nprofile: p\nout: o\nmatrix:\n  engine: [{name: x}]\n", "c.yaml:5:12: matrix.engine[0]: kind is required"},
		{"bad params", "name: t\nprofile: p\nout: o\nmatrix:\n  model: [{id: m, params: big}]\n", "c.yaml:5:27: matrix.model[0].params: expected a positive number"},
		{"exclude unknown axis", "name: t\nprofile: p\nout: o\nmatrix: {engine: [{kind: sim}]}\nexclude: [{gpu: a}]\n", "c.yaml:5:17: exclude[0].gpu: unknown axis \"gpu\""},
		{"exclude unknown value", "name: t\nprofile: p\nout: o\nmatrix: {engine: [{kind: sim}]}\nexclude: [{engine: vllm}]\n", "exclude[0].engine: \"vllm\" is no value of axis engine"},
		{"slurm time", "name: t\nprofile: p\nout: o\nmatrix: {}\nslurm: {time: soon}\n", "c.yaml:5:15: slurm.time: expected a Slurm time limit"},
		{"wrong type", "name: t\nprofile: p\nout: o\nmatrix: {engine: sim}\n", "c.yaml:4:18: matrix.engine: expected a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(tc.src), "c.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	c := load(t, good)
	p := c.Expand()
	// 2 engines x 2 models x 1 scenario x 2 warmup values = 8 combinations;
	// sglang x big excluded: 2 combinations; 6 left x 2 repetitions = 12.
	if len(p.Runs) != 12 || p.Excluded != 4 {
		t.Fatalf("%d runs, %d excluded; want 12 and 4", len(p.Runs), p.Excluded)
	}
	ids := map[string]bool{}
	for _, r := range p.Runs {
		if ids[r.ID] {
			t.Errorf("duplicate id %s", r.ID)
		}
		ids[r.ID] = true
		if r.Axes["engine"] == "sglang" && r.Axes["model"] == "big" {
			t.Errorf("excluded run %s planned", r.ID)
		}
	}
	first := p.Runs[0]
	if !strings.HasPrefix(first.ID, "vllm-small-chat-4-r1-") {
		t.Errorf("first id %s", first.ID)
	}
	want := "run benchmark-1.5 --out D --no-progress --engine vllm --model org/small --model-params 8e9 --dataset chat --label scenario=chat --label campaign=t --set warmup_requests=4"
	if got := strings.Join(first.Args("D"), " "); got != want {
		t.Errorf("args\n got %s\nwant %s", got, want)
	}
	// Stable: the same file elsewhere gives the same ids; a change of
	// configuration another one.
	if again := load(t, good).Expand(); again.Runs[0].ID != first.ID {
		t.Errorf("id not stable: %s vs %s", again.Runs[0].ID, first.ID)
	}
	changed := load(t, strings.Replace(good, "params: 8e9", "params: 9e9", 1)).Expand()
	if changed.Runs[0].ID == first.ID {
		t.Errorf("id unchanged after a configuration change")
	}
	if p.Runs[1].Rep != 2 || p.Runs[1].ID == first.ID {
		t.Errorf("second run is not the second repetition: %+v", p.Runs[1])
	}
}

func writeMeta(t *testing.T, dir, status string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := fmt.Sprintf(`{"format_version":1,"run_id":"x","status":%q,"started_at":1,"ended_at":2,"stages":[],"events":[]}`, status)
	if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestStatusAndNextDir(t *testing.T) {
	c := load(t, good)
	r := c.Expand().Runs[0]
	for _, tc := range []struct {
		statuses []string
		want     Outcome
		retry    bool // runs with --retry-failed
		plain    bool // runs without
	}{
		{nil, Pending, true, true},
		{[]string{"complete"}, Complete, false, false},
		{[]string{"failed"}, Failed, true, false},
		{[]string{"interrupted"}, Interrupted, true, true},
		{[]string{"running"}, Interrupted, true, true},
		{[]string{"failed", "complete"}, Complete, false, false},
	} {
		t.Run(strings.Join(tc.statuses, ","), func(t *testing.T) {
			c.Dir = t.TempDir()
			for i, s := range tc.statuses {
				writeMeta(t, c.attemptDir(r, i+1), s)
			}
			as, err := c.Attempts(r)
			if err != nil {
				t.Fatal(err)
			}
			if got := Status(as); got != tc.want {
				t.Errorf("status %s, want %s", got, tc.want)
			}
			if ToRun(Status(as), true) != tc.retry || ToRun(Status(as), false) != tc.plain {
				t.Errorf("ToRun wrong for %s", Status(as))
			}
			next, _ := c.NextDir(r)
			if want := c.attemptDir(r, len(tc.statuses)+1); next != want {
				t.Errorf("next dir %s, want %s", next, want)
			}
		})
	}
}

func TestJobScript(t *testing.T) {
	c := load(t, good)
	var big Run
	for _, r := range c.Expand().Runs {
		if r.Axes["model"] == "big" {
			big = r
			break
		}
	}
	s := c.JobScript(big, "/opt/joulebench", "/shared/out/runs/x")
	for _, want := range []string{"#SBATCH --exclusive\n", "#SBATCH --gres=gpu:4\n", "#SBATCH --time=01:00:00\n", "#SBATCH --partition=gpu\n", "#SBATCH --account=abc\n",
		"exec /opt/joulebench run --spec " + c.SpecFile("/shared/out/runs/x") + " --out /shared/out/runs/x --no-progress\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("job script lacks %q:\n%s", want, s)
		}
	}
	c.File.Slurm.GPUs = new(bool)
	if s := c.JobScript(big, "b", "d"); strings.Contains(s, "--gres") {
		t.Errorf("gpus: false still asks for GPUs:\n%s", s)
	}
	if got := shellQuote("it's"); got != `'it'\''s'` {
		t.Errorf("shellQuote = %s", got)
	}
}

// fakeSlurm is a cluster in memory: sbatch queues, squeue lists, the test
// finishes jobs by writing their archives.
type fakeSlurm struct {
	next     int
	queue    map[string]string // job id -> state
	scripts  map[string]string
	calls    []string
	onSqueue func(f *fakeSlurm)
}

func (f *fakeSlurm) run(_ context.Context, name string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, name+" "+strings.Join(args, " "))
	switch name {
	case "sbatch":
		f.next++
		id := fmt.Sprint(100 + f.next)
		f.queue[id] = "PENDING"
		f.scripts[id] = args[len(args)-1]
		return []byte(id + "\n"), nil
	case "squeue":
		if f.onSqueue != nil {
			f.onSqueue(f)
		}
		var b strings.Builder
		for id, st := range f.queue {
			fmt.Fprintf(&b, "%s|%s\n", id, st)
		}
		return []byte(b.String()), nil
	case "sacct":
		return nil, fmt.Errorf("sacct: accounting storage is disabled")
	case "scancel":
		for _, id := range args {
			delete(f.queue, id)
		}
		return nil, nil
	}
	return nil, fmt.Errorf("unknown command %s", name)
}

func TestSlurmSubmitsWaitsAndReattaches(t *testing.T) {
	src := "name: t\nprofile: benchmark-1.5\nout: out\nmatrix:\n  model: [{id: a}, {id: b}]\nslurm: {gpus: false, poll: 10ms}\n"
	c := load(t, src)
	p := c.Expand()
	f := &fakeSlurm{queue: map[string]string{}, scripts: map[string]string{}}
	// The first sweep is stopped after submitting (as if killed): both
	// jobs stay queued.
	ctx, cancel := context.WithCancel(context.Background())
	f.onSqueue = func(f *fakeSlurm) {
		if len(f.queue) == 2 {
			cancel()
		}
	}
	var log strings.Builder
	res, err := c.RunSlurm(ctx, p, Options{Binary: "jb", Log: &log}, func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if name == "scancel" {
			return nil, nil // the "killed" sweep cancels nothing
		}
		return f.run(ctx, name, args...)
	})
	if err != nil || !res.Interrupted {
		t.Fatalf("first sweep: %v, %+v\n%s", err, res, log.String())
	}
	if len(f.queue) != 2 {
		t.Fatalf("queue %v, want two jobs", f.queue)
	}
	// The restarted sweep re-attaches (no new sbatch); job 101 completes,
	// job 102 fails.
	f.calls = nil
	polls := 0
	f.onSqueue = func(f *fakeSlurm) {
		if polls++; polls == 1 {
			return // the restart's first look: both still queued
		}
		for id := range f.queue {
			st := "complete"
			if id == "102" {
				st = "failed"
			}
			script, _ := os.ReadFile(f.scripts[id])
			dir := strings.Fields(string(script)[strings.Index(string(script), " --out "):])[1]
			writeMeta(t, dir, st)
			delete(f.queue, id)
		}
	}
	log.Reset()
	res, err = c.RunSlurm(context.Background(), p, Options{Binary: "jb", Log: &log}, f.run)
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range f.calls {
		if strings.HasPrefix(call, "sbatch") {
			t.Errorf("restart submitted again: %s", call)
		}
	}
	if !strings.Contains(log.String(), "re-attach") {
		t.Errorf("no re-attach in log:\n%s", log.String())
	}
	if res.Summary.Done != 1 || res.Summary.Failed != 1 || len(res.Complete) != 1 {
		t.Errorf("result %+v", res)
	}
	// Ctrl-C while jobs run: scancel gets them.
	f.calls, f.onSqueue = nil, nil
	ctx, cancel = context.WithCancel(context.Background())
	f.onSqueue = func(f *fakeSlurm) {
		if len(f.queue) > 0 {
			cancel()
		}
	}
	res, err = c.RunSlurm(ctx, p, Options{Binary: "jb", RetryFailed: true, Log: &log}, f.run)
	if err != nil || !res.Interrupted {
		t.Fatalf("retry sweep: %v %+v", err, res)
	}
	if last := f.calls[len(f.calls)-1]; last != "scancel 103" {
		t.Errorf("last call %q, want scancel 103 (the failed run, retried)", last)
	}
}

// --tp goes only to the engines that take it (vLLM, SGLang); llama.cpp's
// run gets none, but its Slurm job still asks for the model's 4 GPUs.
func TestTensorParallelOnlyWhereAccepted(t *testing.T) {
	c := load(t, `name: t
profile: benchmark-1.5
out: out
matrix:
  engine: [{kind: vllm}, {kind: llamacpp}]
  model: [{id: org/big, params: 70e9, tp: 4}]
`)
	p := c.Expand()
	if len(p.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(p.Runs))
	}
	for _, r := range p.Runs {
		args := strings.Join(r.Args("D"), " ")
		hasTP := strings.Contains(args, "--tp 4")
		if want := r.Axes["engine"] == "vllm"; hasTP != want {
			t.Errorf("engine %s: args %q, --tp 4 present = %v, want %v", r.Axes["engine"], args, hasTP, want)
		}
		if r.TP != 4 {
			t.Errorf("engine %s: TP = %d, want 4", r.Axes["engine"], r.TP)
		}
	}
}

// matrix.gpu_power_limit_w is an axis: one run per limit, each with --set
// gpu_power_limit_w=V (the run's GPU settings with any profile); a bad
// value is an error at its position.
func TestGPUPowerLimitAxis(t *testing.T) {
	c := load(t, "name: t\nprofile: benchmark-1.0\nout: o\nmatrix:\n  engine: [{kind: sim}]\n  gpu_power_limit_w: [\"200\", \"250\", \"0=300,1=350\"]\n")
	p := c.Expand()
	if len(p.Runs) != 3 {
		t.Fatalf("%d runs, want 3", len(p.Runs))
	}
	var got []string
	for _, r := range p.Runs {
		got = append(got, r.Axes[gpusettingsParam]+": "+strings.Join(r.Config.Args, " "))
	}
	for i, want := range []string{"200: --engine sim --label campaign=t --set gpu_power_limit_w=200", "250: --engine sim --label campaign=t --set gpu_power_limit_w=250",
		"0=300,1=350: --engine sim --label campaign=t --set gpu_power_limit_w=0=300,1=350"} {
		if got[i] != want {
			t.Errorf("run %d: %q, want %q", i, got[i], want)
		}
	}
	for _, tc := range []struct{ src, want string }{
		{"name: t\nprofile: p\nout: o\nmatrix:\n  gpu_power_limit_w: [\"-5\"]\n", "c.yaml:5:23: matrix.gpu_power_limit_w[0]: --gpu-power-limit \"-5\": expected a power limit in watts above 0"},
		{"name: t\nprofile: p\nout: o\nmatrix:\n  gpu_clocks: [\"1500\"]\n", "matrix.gpu_clocks[0]: --gpu-clocks \"1500\": expected MIN,MAX"},
		{"name: t\nprofile: p\nout: o\nmatrix:\n  gpu_mem_clocks: [\"1215,1215\", \"x\"]\n", "c.yaml:5:33: matrix.gpu_mem_clocks[1]: --gpu-mem-clocks \"x\": expected MIN,MAX"},
		{"name: t\nprofile: p\nout: o\nmatrix:\n  gpu_power_limit_w: [\"200\"]\n  set: {gpu_power_limit_w: [\"300\"]}\n", "matrix.gpu_power_limit_w: given twice"},
	} {
		if _, err := Load([]byte(tc.src), "c.yaml"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

const gpusettingsParam = "gpu_power_limit_w"
