package campaign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// A job asks for GPUs only when its run needs one: an engine joulebench
// starts (vLLM, SGLang, llama.cpp, Ollama), not the simulator nor a server
// already running at --engine-url. slurm.gpus, when set, decides alone.
func TestJobScriptGresPerEngine(t *testing.T) {
	src := `name: t
profile: benchmark-1.5
out: out
matrix:
  engine:
    - {kind: sim}
    - {kind: vllm}
    - {name: remote, kind: vllm, args: [--engine-url, "http://10.0.0.5:8000"]}
    - {name: remote2, kind: openai, args: ["--engine-url=http://10.0.0.6:8000"]}
    - {kind: llamacpp}
  model: [{id: org/m, params: 8e9, tp: 2}]
`
	want := map[string]bool{"sim": false, "vllm": true, "remote": false, "remote2": false, "llamacpp": true}
	for _, gpus := range []*bool{nil, ptrBool(true), ptrBool(false)} {
		c := load(t, src)
		c.File.Slurm.GPUs = gpus
		for _, r := range c.Expand().Runs {
			s := c.JobScript(r, "jb", "d")
			w := want[r.Axes["engine"]]
			if gpus != nil {
				w = *gpus
			}
			if got := strings.Contains(s, "#SBATCH --gres=gpu:2\n"); got != w {
				t.Errorf("gpus %v, engine %s: --gres=gpu:2 present %v, want %v\n%s", fmtBool(gpus), r.Axes["engine"], got, w, s)
			}
		}
	}
	// No --engine at all is the default engine, the simulator.
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--engine", "sim"}, false},
		{[]string{"--engine=ollama"}, true},
		{[]string{"--engine", "sim,vllm"}, true},
		{[]string{"--engine", "sim", "--engine", "llamacpp"}, true},
		{[]string{"--engine", "ollama", "--engine-url", "http://x"}, false},
		{[]string{"--engine", "nosuch"}, true},
	} {
		if got := NeedsGPU(c.args); got != c.want {
			t.Errorf("NeedsGPU(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

func ptrBool(b bool) *bool { return &b }

func fmtBool(b *bool) string {
	if b == nil {
		return "unset"
	}
	return fmt.Sprint(*b)
}

// sbatch refusing the GPU request says what to change.
func TestSlurmGresRefusedHint(t *testing.T) {
	c := load(t, "name: t\nprofile: benchmark-1.5\nout: out\nmatrix:\n  engine: [{kind: vllm}]\n  model: [{id: a}]\nslurm: {poll: 10ms}\n")
	run := func(_ context.Context, name string, args ...string) ([]byte, error) {
		switch name {
		case "squeue":
			return nil, nil
		case "sbatch":
			return nil, errors.New("sbatch: exit status 1: sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification")
		}
		return nil, nil
	}
	_, err := c.RunSlurm(context.Background(), c.Expand(), Options{Binary: "jb"}, run)
	if err == nil || !strings.Contains(err.Error(), "Invalid generic resource") || !strings.Contains(err.Error(), "--gres=gpu:1 because the run needs a GPU") ||
		!strings.Contains(err.Error(), "slurm.gpus: false") {
		t.Errorf("error = %v, want the refusal and what to change", err)
	}
}

// How a job that left the queue ended, from what the cluster keeps.
func TestFinalState(t *testing.T) {
	for _, c := range []struct {
		name            string
		sacct, scontrol string // "" = the command fails
		last, want      string
	}{
		{"sacct", "101|CANCELLED by 0\n", "", "RUNNING", "CANCELLED"},
		{"no accounting: scontrol", "", "JobId=101 JobName=jb-x UserId=root(0) JobState=CANCELLED Reason=None ExitCode=0:15\n", "RUNNING", "CANCELLED"},
		{"scontrol, other job first", "", "JobId=99 JobState=COMPLETED\nJobId=101 JobState=TIMEOUT\n", "RUNNING", "TIMEOUT"},
		{"squeue saw the end", "", "", "CANCELLED", "CANCELLED"},
		{"nothing tells", "", "", "RUNNING", "ENDED (last seen RUNNING; no accounting or job record tells how)"},
		{"never seen", "", "", "", "ENDED"},
	} {
		run := func(_ context.Context, name string, args ...string) ([]byte, error) {
			out := map[string]string{"sacct": c.sacct, "scontrol": c.scontrol}[name]
			if out == "" {
				return nil, fmt.Errorf("%s: failed", name)
			}
			return []byte(out), nil
		}
		if got := finalState(context.Background(), run, "101", c.last); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// A job cancelled with scancel outside the sweep, on a cluster without
// accounting: the sweep logs CANCELLED (from scontrol), not ENDED.
func TestSlurmExternalCancelLogged(t *testing.T) {
	c := load(t, "name: t\nprofile: benchmark-1.5\nout: out\nmatrix:\n  model: [{id: a}]\nslurm: {poll: 10ms}\n")
	f := &fakeSlurm{queue: map[string]string{}, scripts: map[string]string{}}
	polls := 0
	f.onSqueue = func(f *fakeSlurm) {
		if polls++; polls == 3 {
			delete(f.queue, "101") // scancel 101 from another terminal
		}
	}
	run := func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if name == "scontrol" {
			return []byte("JobId=101 JobName=jb-a JobState=CANCELLED Reason=None\n"), nil
		}
		return f.run(ctx, name, args...)
	}
	var log strings.Builder
	if _, err := c.RunSlurm(context.Background(), c.Expand(), Options{Binary: "jb", Log: &log}, run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "job 101 (") || !strings.Contains(log.String(), "): CANCELLED\n") || strings.Contains(log.String(), "ENDED") {
		t.Errorf("log:\n%s\nwant job 101 ... CANCELLED", log.String())
	}
}

// syncLog is a log the sweep writes while the test reads it.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// On a real cluster (JOULEBENCH_SLURM=1 after .ci/start-slurm.sh, which
// has no GPU gres and no accounting): a simulator campaign without
// slurm.gpus is accepted (no --gres), and a job cancelled with scancel
// from outside is logged CANCELLED.
func TestSlurmRealCancelled(t *testing.T) {
	if os.Getenv("JOULEBENCH_SLURM") != "1" {
		t.Skip("no Slurm cluster (JOULEBENCH_SLURM=1 after .ci/start-slurm.sh)")
	}
	dir := t.TempDir()
	// The job's "joulebench": waits until cancelled.
	bin := filepath.Join(dir, "jb.sh")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := "name: t\nprofile: benchmark-1.5\nout: out\nmatrix:\n  engine: [{kind: sim}]\n  model: [{id: sim-llm-8b}]\nslurm: {time: \"00:05:00\", poll: 200ms}\n"
	c, err := Load([]byte(src), filepath.Join(dir, "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	log := &syncLog{}
	done := make(chan error, 1)
	go func() {
		_, err := c.RunSlurm(ctx, c.Expand(), Options{Binary: bin, Log: log}, nil)
		done <- err
	}()
	re := regexp.MustCompile(`submitted \S+: job (\d+),`)
	var id string
	for id == "" {
		select {
		case err := <-done:
			t.Fatalf("sweep ended before a job was submitted: %v\n%s", err, log.String())
		case <-ctx.Done():
			t.Fatalf("no job submitted:\n%s", log.String())
		case <-time.After(100 * time.Millisecond):
		}
		if m := re.FindStringSubmatch(log.String()); m != nil {
			id = m[1]
		}
	}
	if out, err := exec.Command("scancel", id).CombinedOutput(); err != nil {
		t.Fatalf("scancel %s: %v: %s", id, err, out)
	}
	if err := <-done; err != nil {
		t.Fatalf("sweep: %v\n%s", err, log.String())
	}
	if s := log.String(); !strings.Contains(s, "job "+id+" (") || !strings.Contains(s, "CANCELLED") || strings.Contains(s, "ENDED") {
		t.Errorf("log:\n%s\nwant job %s CANCELLED", s, id)
	}
}
