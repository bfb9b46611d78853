package campaign

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/joulebench/joulebench/engines/all"
)

// Commander runs a Slurm client command (sbatch, squeue, sacct, scancel)
// and returns its standard output; a non-zero exit is an error that
// carries its standard error.
type Commander func(ctx context.Context, name string, args ...string) ([]byte, error)

// ExecCommander runs the Slurm commands found in PATH.
func ExecCommander(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return out, fmt.Errorf("%s: %w", name, err)
		}
		return out, fmt.Errorf("%s: %w: %s", name, err, msg)
	}
	return out, nil
}

// StateFile is the Slurm executor's record of its jobs, in the campaign
// directory: a restarted sweep re-attaches to the jobs it lists.
const StateFile = "slurm-state.json"

// SlurmJob is one submitted run.
type SlurmJob struct {
	Run       string    `json:"run"`
	JobID     string    `json:"job_id"`
	Dir       string    `json:"dir"`
	Script    string    `json:"script"`
	Submitted time.Time `json:"submitted"`
	// State is the last Slurm state seen (PENDING, RUNNING, COMPLETED, ...).
	State string `json:"state"`
}

type slurmState struct {
	Jobs []SlurmJob `json:"jobs"`
}

// terminal Slurm job states: the job will not run again.
var terminal = map[string]bool{
	"COMPLETED": true, "FAILED": true, "CANCELLED": true, "TIMEOUT": true, "NODE_FAIL": true,
	"OUT_OF_MEMORY": true, "PREEMPTED": true, "BOOT_FAIL": true, "DEADLINE": true, "REVOKED": true,
	"SPECIAL_EXIT": true, "GONE": true,
}

// RunSlurm runs the plan as Slurm jobs: one sbatch job per run (exclusive
// node, GPUs from the run's tensor parallelism for a run that needs them
// (NeedsGPU), time limit, partition and
// options from the campaign file; with slurm.nodes, a job over that many
// nodes with a power agent on each, refused before anything is submitted
// when the partition has fewer nodes), then waits for them with squeue (and
// sacct, when the cluster keeps accounting, for the final state), printing
// each job's state changes. Jobs are recorded in StateFile as they are
// submitted; a restarted sweep re-attaches to those still queued or
// running instead of submitting them again. When ctx is done, scancel
// cancels every job still queued or running (each run gets SIGTERM and
// writes its status interrupted) and the sweep returns Result.Interrupted.
//
// Slurm does the scheduling; the archives go to the campaign directory,
// which must be on a file system the nodes share. The sweep holds the
// campaign's lock (LockFile) while it runs: two sweeps of one campaign
// would submit its runs twice.
func (c *Campaign) RunSlurm(ctx context.Context, p Plan, o Options, run Commander) (res Result, err error) {
	o.defaults()
	if run == nil {
		run = ExecCommander
	}
	bin := c.File.Slurm.Joulebench
	if bin == "" {
		bin = o.Binary
	}
	if bin == "" {
		return Result{}, errors.New("campaign: no joulebench executable for the jobs (slurm.joulebench)")
	}
	if err := c.CheckScriptValues("the joulebench executable", bin); err != nil {
		return Result{}, err
	}
	return c.Drive(ctx, p, o, &slurmJobs{c: c, run: timedCommander(run), bin: bin, o: o})
}

// slurmJobs are a sweep's Slurm jobs (Campaign.Drive): recorded in the
// state file as they are submitted, found again in squeue.
type slurmJobs struct {
	c   *Campaign
	run Commander
	bin string
	o   Options
	st  *slurmState
	// tracked maps a run id to its job's index in st.Jobs.
	tracked map[string]int
}

// Reattach reads the state file and squeue: the jobs of a previous sweep
// still queued or running go on.
func (s *slurmJobs) Reattach(ctx context.Context) ([]string, error) {
	c, o := s.c, s.o
	if err := os.MkdirAll(filepath.Join(c.Dir, "slurm"), 0o755); err != nil {
		return nil, fmt.Errorf("campaign directory: %w", err)
	}
	st, err := c.readState()
	if err != nil {
		return nil, err
	}
	s.st, s.tracked = st, map[string]int{}
	queue := NewTransient("squeue", c.File.Slurm.poll(), o)
	live, err := squeueRetry(ctx, s.run, queue, o)
	if err != nil {
		return nil, err
	}
	var going []string
	for i, j := range st.Jobs {
		if state, ok := live[j.JobID]; ok && !terminal[state] {
			s.tracked[j.Run] = i
			going = append(going, j.Run)
			fmt.Fprintf(o.Log, "re-attach %s: job %s %s\n", j.Run, j.JobID, state)
		}
	}
	return going, nil
}

// BeforeSubmit refuses a campaign of more nodes than its partition has.
func (s *slurmJobs) BeforeSubmit(ctx context.Context, _ []Run) error {
	return s.c.checkNodes(ctx, s.run)
}

// Submit submits r's job and records it in the state file; a job that
// cannot be recorded is cancelled (untracked, it would run with no sweep
// to follow it).
func (s *slurmJobs) Submit(ctx context.Context, r Run) (string, error) {
	j, err := s.c.submit(ctx, r, s.bin, s.run)
	if err != nil {
		return "", err
	}
	s.st.Jobs = append(s.st.Jobs, j)
	if err := s.c.writeState(s.st); err != nil {
		return "", s.c.cancelUnrecorded(s.run, r, j, err)
	}
	s.tracked[r.ID] = len(s.st.Jobs) - 1
	return fmt.Sprintf("submitted %s: job %s, archive %s", r.ID, j.JobID, j.Dir), nil
}

// Follower follows the tracked jobs with squeue until every one has left
// the queue.
func (s *slurmJobs) Follower() (Follower, string, time.Duration) {
	return &slurmFollower{c: s.c, run: s.run, st: s.st, tracked: s.tracked, o: s.o}, "squeue", s.c.File.Slurm.poll()
}

// slurmFollower is the Slurm executor's verbs over its jobs for Follow:
// squeue, the final state of the jobs that left the queue, the state
// file, scancel.
type slurmFollower struct {
	c       *Campaign
	run     Commander
	st      *slurmState
	tracked map[string]int // run id -> index in st.Jobs
	live    map[string]string
	o       Options
}

func (f *slurmFollower) Status(ctx context.Context) error {
	live, err := squeue(ctx, f.run)
	if err != nil {
		return err
	}
	f.live = live
	return nil
}

// Settle records the state changes squeue showed, the final state of the
// jobs that left the queue, and writes the state file when any did.
func (f *slurmFollower) Settle(ctx context.Context) ([]string, bool, error) {
	var ended []string
	for _, id := range sortedKeys(f.tracked) {
		j := &f.st.Jobs[f.tracked[id]]
		s, ok := f.live[j.JobID]
		if !ok || terminal[s] {
			if !ok {
				s = j.State
			}
			s = finalState(ctx, f.run, j.JobID, s)
			ended = append(ended, id)
		}
		if s != j.State {
			fmt.Fprintf(f.o.Log, "job %s (%s): %s\n", j.JobID, j.Run, s)
			j.State = s
		}
	}
	for _, id := range ended {
		delete(f.tracked, id)
	}
	if len(ended) > 0 {
		if err := f.c.writeState(f.st); err != nil {
			// The state file lists the ended jobs as they were: the next
			// sweep finds them ended. The others go on.
			return sortedKeys(f.tracked), true, err
		}
	}
	return sortedKeys(f.tracked), len(ended) > 0, nil
}

func (f *slurmFollower) Cancel() {
	f.c.cancelAll(f.run, f.st, f.tracked, f.o)
	if err := f.c.writeState(f.st); err != nil {
		fmt.Fprintf(f.o.Log, "%v\n", err)
	}
}

func (f *slurmFollower) Following() int { return len(f.tracked) }

// finalState is how a job that left the queue ended: sacct's state when
// the cluster keeps accounting, else scontrol's (slurmctld keeps an ended
// job for MinJobAge, 300 s by default), else the last terminal state
// squeue showed. Only when none of them tells is it ENDED, with the last
// state seen.
func finalState(ctx context.Context, run Commander, id, last string) string {
	if out, err := run(ctx, "sacct", "-n", "-P", "-X", "-j", id, "-o", "JobID,State"); err == nil {
		if s := sacctState(string(out), id); s != "" {
			return s
		}
	}
	if out, err := run(ctx, "scontrol", "-o", "show", "job", id); err == nil {
		if s := scontrolState(string(out), id); s != "" {
			return s
		}
	}
	if terminal[last] {
		return last
	}
	if last != "" {
		return "ENDED (last seen " + last + "; no accounting or job record tells how)"
	}
	return "ENDED"
}

// sacctState reads `sacct -n -P -X -o JobID,State` output for job id.
func sacctState(out, id string) string {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) >= 2 && f[0] == id && strings.TrimSpace(f[1]) != "" {
			return strings.Fields(f[1])[0] // "CANCELLED by 0" -> CANCELLED
		}
	}
	return ""
}

// scontrolState reads `scontrol -o show job ID` output: one line of
// Key=Value fields, JobState among them.
func scontrolState(out, id string) string {
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if !slices.Contains(fields, "JobId="+id) {
			continue
		}
		for _, f := range fields {
			if v, ok := strings.CutPrefix(f, "JobState="); ok && v != "" {
				return v
			}
		}
	}
	return ""
}

// squeueRetry is squeue tried again on failure as the error policy says
// (policy.go): nil and the last error past the bound, or when ctx is done.
func squeueRetry(ctx context.Context, run Commander, queue *Transient, o Options) (map[string]string, error) {
	for {
		live, err := squeue(ctx, run)
		if err == nil {
			queue.Succeeded()
			return live, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		wait, stop := queue.Failed(err, o.Log)
		if stop != nil {
			return nil, stop
		}
		Sleep(ctx, wait)
	}
}

// timedCommander bounds every Slurm command by BackendCallTimeout.
func timedCommander(run Commander) Commander {
	return func(ctx context.Context, name string, args ...string) ([]byte, error) {
		ctx, cancel := CallContext(ctx)
		defer cancel()
		return run(ctx, name, args...)
	}
}

// cancelUnrecorded cancels job j, submitted for run r, that the state
// file could not record (werr): untracked, it would run with no sweep to
// follow it.
func (c *Campaign) cancelUnrecorded(run Commander, r Run, j SlurmJob, werr error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := run(ctx, "scancel", j.JobID); err != nil {
		return fmt.Errorf("run %s: %w; job %s could not be recorded nor cancelled (%v): cancel it by hand (scancel %s)", r.ID, werr, j.JobID, err, j.JobID)
	}
	return fmt.Errorf("run %s: %w; job %s cancelled (it could not be recorded)", r.ID, werr, j.JobID)
}

// squeue lists this user's jobs: job id -> state.
func squeue(ctx context.Context, run Commander) (map[string]string, error) {
	args := []string{"-h", "-o", "%i|%T"}
	if u, err := user.Current(); err == nil {
		args = append(args, "-u", u.Username)
	}
	out, err := run(ctx, "squeue", args...)
	if err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	live := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		id, state, ok := strings.Cut(strings.TrimSpace(line), "|")
		if ok {
			live[id] = state
		}
	}
	return live, nil
}

// cancelAll cancels the tracked jobs.
func (c *Campaign) cancelAll(run Commander, st *slurmState, tracked map[string]int, o Options) {
	if len(tracked) == 0 {
		return
	}
	ids := make([]string, 0, len(tracked))
	for _, i := range tracked {
		ids = append(ids, st.Jobs[i].JobID)
	}
	sort.Strings(ids)
	// ctx is done: scancel gets a context of its own.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := run(ctx, "scancel", ids...); err != nil {
		fmt.Fprintf(o.Log, "scancel %s: %v\n", strings.Join(ids, " "), err)
		return
	}
	fmt.Fprintf(o.Log, "cancelled jobs %s\n", strings.Join(ids, " "))
}

// submit writes a run's job script and submits it.
func (c *Campaign) submit(ctx context.Context, r Run, bin string, run Commander) (SlurmJob, error) {
	dir, err := c.NextDir(r)
	if err != nil {
		return SlurmJob{}, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return SlurmJob{}, err
	}
	script := filepath.Join(c.Dir, "slurm", filepath.Base(dir)+".sbatch")
	if script, err = filepath.Abs(script); err != nil {
		return SlurmJob{}, err
	}
	// It may hold secrets (exported): readable by the user alone, made
	// anew (WriteFile keeps an existing file's mode).
	if err := os.Remove(script); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return SlurmJob{}, fmt.Errorf("run %s: job script: %w", r.ID, err)
	}
	spec, err := c.runSettings(r)
	if err == nil {
		err = WriteSpec(r, spec, c.SpecFile(dir))
	}
	if err != nil {
		return SlurmJob{}, err
	}
	if err := os.WriteFile(script, []byte(c.JobScript(r, bin, dir)), 0o700); err != nil {
		return SlurmJob{}, fmt.Errorf("run %s: job script: %w", r.ID, err)
	}
	out, err := run(ctx, "sbatch", "--parsable", script)
	if err != nil {
		return SlurmJob{}, fmt.Errorf("run %s: %w", r.ID, c.gresHint(r, err))
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if id == "" {
		return SlurmJob{}, fmt.Errorf("run %s: sbatch printed no job id", r.ID)
	}
	return SlurmJob{Run: r.ID, JobID: id, Dir: dir, Script: script, Submitted: time.Now().UTC()}, nil
}

// JobScript is the sbatch script of a run writing its archive to dir.
func (c *Campaign) JobScript(r Run, bin, dir string) string {
	var b strings.Builder
	if c.File.Slurm.Nodes > 0 {
		b.WriteString("#!/bin/bash\n") // the wait for the agents uses bash's /dev/tcp
	} else {
		b.WriteString("#!/bin/sh\n")
	}
	fmt.Fprintf(&b, "#SBATCH --job-name=jb-%s\n", r.ID)
	logDir := filepath.Join(c.Dir, "slurm")
	if abs, err := filepath.Abs(logDir); err == nil {
		logDir = abs
	}
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", filepath.Join(logDir, filepath.Base(dir)+"-%j.out"))
	if n := c.File.Slurm.Nodes; n > 0 {
		fmt.Fprintf(&b, "#SBATCH --nodes=%d\n#SBATCH --ntasks-per-node=1\n", n)
	} else {
		b.WriteString("#SBATCH --nodes=1\n")
	}
	if c.File.Slurm.exclusive() {
		b.WriteString("#SBATCH --exclusive\n")
	}
	if c.requestsGPUs(r) {
		fmt.Fprintf(&b, "#SBATCH --gres=%s\n", c.gresOf(r))
	}
	if c.File.Slurm.Time != "" {
		fmt.Fprintf(&b, "#SBATCH --time=%s\n", c.File.Slurm.Time)
	}
	if c.File.Slurm.Partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", c.File.Slurm.Partition)
	}
	for _, opt := range c.File.Slurm.Options {
		fmt.Fprintf(&b, "#SBATCH %s\n", opt)
	}
	// Secrets are exported, not arguments: a job's command line is
	// anyone's to read on its node (ps); the script is the user's alone.
	_, secrets := splitSecrets(r.Args(dir))
	if c.File.Slurm.Nodes > 0 {
		// The run's spec, with where it reads power (the agents of the
		// nodes the job was given) on its command line.
		args := r.SpecArgs(c.SpecFile(dir), dir)
		// The run's secrets are given to the run alone, not to the agents.
		gres := ""
		if c.requestsGPUs(r) {
			gres = c.gresOf(r)
		}
		c.writeNodesRun(&b, bin, dir, logDir, gres, args, secrets)
		return b.String()
	}
	for _, kv := range secrets {
		name, val, _ := strings.Cut(kv, "=")
		b.WriteString("export " + name + "=" + shellQuote(val) + "\n")
	}
	b.WriteString("exec " + shellQuote(bin))
	for _, a := range r.SpecArgs(c.SpecFile(dir), dir) {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("\n")
	return b.String()
}

// requestsGPUs says whether a run's job asks for GPUs: as slurm.gpus
// says when it is set, else when the run needs one (NeedsGPU).
func (c *Campaign) requestsGPUs(r Run) bool {
	if c.File.Slurm.GPUs != nil {
		return *c.File.Slurm.GPUs
	}
	return NeedsGPU(r.Config.Args)
}

func (c *Campaign) gresOf(r Run) string {
	return strings.ReplaceAll(c.File.Slurm.gres(), "{tp}", fmt.Sprint(r.TP))
}

// NeedsGPU reports whether a run with these `run` arguments needs a GPU
// on its node: it starts an engine joulebench launches itself (not the
// simulator) and benchmarks no already running server (--engine-url,
// whose GPUs are elsewhere). No --engine is the default engine.
func NeedsGPU(args []string) bool {
	var kinds []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		switch name {
		case "--engine-url":
			return false
		case "--engine":
			if !hasVal {
				if i+1 >= len(args) {
					continue
				}
				val = args[i+1]
				i++
			}
			kinds = append(kinds, strings.Split(val, ",")...)
		}
	}
	if len(kinds) == 0 {
		kinds = []string{all.Default}
	}
	reg := all.Registry()
	for _, k := range kinds {
		d, ok := reg.Lookup(strings.TrimSpace(k))
		if !ok || (!d.Simulated && d.Start != nil) {
			return true
		}
	}
	return false
}

// gresHint explains an sbatch refusal of the GPU request.
func (c *Campaign) gresHint(r Run, err error) error {
	msg := err.Error()
	if !c.requestsGPUs(r) || !(strings.Contains(msg, "Invalid generic resource") || strings.Contains(msg, "Invalid gres")) {
		return err
	}
	why := "the run needs a GPU"
	if c.File.Slurm.GPUs != nil {
		why = "slurm.gpus is true"
	}
	return fmt.Errorf("%w (the job asked for --gres=%s because %s: set slurm.gres to the cluster's GPU resource, e.g. gpu:h100:{tp}, "+
		"or slurm.gpus: false on a cluster without GPU gres; `sinfo -o %%G` lists them)", err, c.gresOf(r), why)
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (c *Campaign) readState() (*slurmState, error) {
	b, err := os.ReadFile(filepath.Join(c.Dir, StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return &slurmState{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("slurm state: %w", err)
	}
	var st slurmState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("slurm state %s: %w", filepath.Join(c.Dir, StateFile), err)
	}
	return &st, nil
}

// writeState replaces the state file atomically (temp file, fsync, rename).
func (c *Campaign) writeState(st *slurmState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(c.Dir, StateFile)
	tmp, err := os.CreateTemp(c.Dir, ".slurm-state-*")
	if err != nil {
		return fmt.Errorf("slurm state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("slurm state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("slurm state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("slurm state: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("slurm state: %w", err)
	}
	return nil
}
