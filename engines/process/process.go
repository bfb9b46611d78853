// Package process runs an inference engine's server process the way the
// methodology needs it: from a frozen argv (never a shell string), in its
// own process group, with stdout and stderr going to engine.log (and the
// last lines kept in memory for error messages), its exit watched, and a
// stop that sends SIGTERM to the whole group, waits a grace period, then
// SIGKILLs it and records when the group was gone.
//
// Server adds what every HTTP engine shares: a port on 127.0.0.1, a
// readiness probe (an HTTP GET that must answer 200) that gives up early
// when the process exits, and JSON GETs for identity queries.
//
// Redact hides secrets (API keys, tokens, passwords) in argv and
// environment overrides before they are written to run.json.
package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// Spec is the frozen configuration of an engine process.
type Spec struct {
	// Name names the engine in errors ("vllm", "llama-server", ...).
	Name string
	// Argv is the command line; Argv[0] is the program, a path or a name
	// looked up in PATH.
	Argv []string
	// Env are environment overrides added to (and replacing entries of)
	// the inherited environment.
	Env map[string]string
	// Dir is the working directory ("" = the current one); it is created.
	Dir string
	// Log receives the process's stdout and stderr, and joulebench's own
	// lines about the process (prefixed "joulebench:"). nil discards.
	Log io.Writer
	// TailBytes is how much of the latest output is kept for Tail
	// (default 64 KiB).
	TailBytes int
}

// Process is one started engine process and its process group.
type Process struct {
	spec    Spec
	cmd     *exec.Cmd
	pid     int
	started time.Time
	log     *logWriter
	copied  chan struct{}

	exited   chan struct{}
	mu       sync.Mutex
	exitedAt time.Time
	exitErr  error
	stopping bool
	// asked: the exit followed a Stop (else the process exited on its own).
	asked  bool
	goneAt time.Time
}

// Start launches spec.Argv in a new process group and returns at once.
func Start(spec Spec) (*Process, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, fmt.Errorf("%s: empty command line", spec.Name)
	}
	if spec.Name == "" {
		spec.Name = filepath.Base(spec.Argv[0])
	}
	if spec.TailBytes <= 0 {
		spec.TailBytes = 64 << 10
	}
	path, err := exec.LookPath(spec.Argv[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	if spec.Dir != "" {
		if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("%s: working directory: %w", spec.Name, err)
		}
	}
	cmd := exec.Command(path, spec.Argv[1:]...)
	cmd.Args[0] = spec.Argv[0]
	cmd.Dir = spec.Dir
	cmd.Env = mergeEnv(os.Environ(), spec.Env)
	setGroup(cmd)

	// Our own pipe (not exec's copying goroutine): Wait returns when the
	// leader exits even if a child of it still holds the pipe open.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	lw := &logWriter{w: spec.Log, tail: newTail(spec.TailBytes)}
	p := &Process{spec: spec, cmd: cmd, log: lw, exited: make(chan struct{}), copied: make(chan struct{})}
	lw.note("starting %s", strings.Join(quoteArgs(Redact(spec.Argv)), " "))
	if err := p.startLocked(); err != nil {
		_ = pr.Close()
		_ = pw.Close()
		lw.note("start failed: %v", err)
		return nil, fmt.Errorf("%s: start: %w", spec.Name, err)
	}
	_ = pw.Close()
	p.pid = cmd.Process.Pid
	lw.note("started pid %d (process group %d)", p.pid, p.pid)
	go func() {
		defer close(p.copied)
		_, _ = io.Copy(lw, pr)
		_ = pr.Close()
	}()
	return p, nil
}

// startLocked starts the command, and waits for it, on a goroutine locked
// to its OS thread: the parent-death signal (Linux) is sent when the
// thread that started the child ends, and the Go runtime ends a thread
// when a goroutine locked to it returns. The thread lives as long as the
// engine. p.started is set before the wait begins.
func (p *Process) startLocked() error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		p.started = time.Now()
		started <- nil
		p.wait()
	}()
	return <-started
}

func (p *Process) wait() {
	err := p.cmd.Wait()
	now := time.Now()
	p.mu.Lock()
	p.exitedAt, p.exitErr = now, err
	stopping := p.stopping
	p.asked = stopping
	p.mu.Unlock()
	// Exited closes at once: whoever watches for a crash must see it as
	// soon as the requests it cut fail.
	close(p.exited)
	p.waitOutput()
	if stopping {
		p.log.note("exited after stop: %s", describeExit(err))
	} else {
		p.log.note("exited on its own: %s", describeExit(err))
	}
}

// waitOutput lets the output written just before the exit reach the log
// (bounded: a child of the engine may hold the pipe open).
func (p *Process) waitOutput() {
	select {
	case <-p.copied:
	case <-time.After(200 * time.Millisecond):
	}
}

// PID is the process id (and process group id).
func (p *Process) PID() int { return p.pid }

// StartedAt is when the process was started.
func (p *Process) StartedAt() time.Time { return p.started }

// Exited is closed when the process (the group leader) has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitedAt is when the leader exited (zero while it runs).
func (p *Process) ExitedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitedAt
}

// ExitErr is the leader's wait error (nil for status 0), valid once
// Exited is closed.
func (p *Process) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// ExitStatus describes how the leader exited ("exit status 0", "signal:
// terminated", ...); empty while it runs.
func (p *Process) ExitStatus() string {
	select {
	case <-p.exited:
		return describeExit(p.ExitErr())
	default:
		return ""
	}
}

// Stopping reports whether Stop was called.
func (p *Process) Stopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}

// Tail returns the last n lines of the process's output (all kept lines
// when n <= 0).
func (p *Process) Tail(n int) string { return p.log.tail.lines(n) }

// ExitError describes an exit that was not asked for: the status and the
// tail of the log. nil while the process runs or when it exited after a
// Stop.
func (p *Process) ExitError() error {
	if !p.hasExited() {
		return nil
	}
	p.mu.Lock()
	asked := p.asked
	p.mu.Unlock()
	if asked {
		return nil
	}
	p.waitOutput()
	return &ExitError{Name: p.spec.Name, Status: describeExit(p.ExitErr()), Tail: p.Tail(20)}
}

// ExitError is an engine process that exited on its own.
type ExitError struct {
	Name   string
	Status string
	Tail   string
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("%s exited on its own (%s)", e.Name, e.Status)
	if t := strings.TrimSpace(e.Tail); t != "" {
		msg += "; last lines of engine.log:\n" + t
	}
	return msg
}

// Stop sends SIGTERM to the process group, waits up to grace for every
// process of the group to exit, then sends SIGKILL, and returns when the
// group is gone (or ctx is done). The time returned is when the last
// process of the group was seen gone (the leader's exit when no other
// process of the group outlived it). Stopping a process that had exited on
// its own returns its exit time; calling Stop twice is safe.
func (p *Process) Stop(ctx context.Context, grace time.Duration) (time.Time, error) {
	p.mu.Lock()
	if !p.goneAt.IsZero() {
		t := p.goneAt
		p.mu.Unlock()
		return t, nil
	}
	first := !p.stopping
	p.stopping = true
	exitedBefore := !p.exitedAt.IsZero()
	p.mu.Unlock()
	if first {
		if p.hasExited() {
			p.log.note("stop: already exited")
		} else {
			p.log.note("stop: SIGTERM to process group %d (grace %s)", p.pid, grace)
		}
	}
	if err := signalGroup(p.pid, sigTerm); err != nil && !errors.Is(err, errNoProcess) {
		p.log.note("stop: SIGTERM: %v", err)
	}
	deadline := time.NewTimer(max(grace, 0))
	defer deadline.Stop()
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	killed := false
	var killDeadline <-chan time.Time
	for {
		if p.hasExited() && !groupAlive(p.pid) {
			t := time.Now()
			if ea := p.ExitedAt(); exitedBefore || t.Sub(ea) < 30*time.Millisecond {
				t = ea // it had exited already, or the group went with the leader
			}
			p.setGone(t)
			p.log.note("stop: process group %d gone", p.pid)
			return t, nil
		}
		select {
		case <-poll.C:
		case <-p.exited:
		case <-deadline.C:
			if !killed {
				killed = true
				p.log.note("stop: grace of %s over: SIGKILL to process group %d", grace, p.pid)
				_ = signalGroup(p.pid, sigKill)
				kd := time.NewTimer(5 * time.Second)
				defer kd.Stop()
				killDeadline = kd.C
			}
		case <-killDeadline:
			// Processes listed after SIGKILL (zombies nobody reaps, in a
			// container without an init) hold no resources.
			t := p.ExitedAt()
			if t.IsZero() {
				return time.Now(), fmt.Errorf("%s: process %d still running 5 s after SIGKILL", p.spec.Name, p.pid)
			}
			p.log.note("stop: process group %d still listed 5 s after SIGKILL (unreaped); the leader exited", p.pid)
			p.setGone(t)
			return t, nil
		case <-ctx.Done():
			_ = signalGroup(p.pid, sigKill)
			return time.Now(), fmt.Errorf("%s: stop abandoned (%w); SIGKILL sent", p.spec.Name, ctx.Err())
		}
	}
}

func (p *Process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

func (p *Process) setGone(t time.Time) {
	p.mu.Lock()
	p.goneAt = t
	p.mu.Unlock()
}

// Note writes a joulebench line about the engine into its log.
func (p *Process) Note(format string, args ...any) { p.log.note(format, args...) }

func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.String()
	}
	return err.Error()
}

func mergeEnv(base []string, over map[string]string) []string {
	if len(over) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(over))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := over[k]; !ok {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(over))
	for k := range over {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+over[k])
	}
	return out
}

func quoteArgs(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return out
}

// logWriter writes the engine's output and joulebench's notes to the log,
// one write at a time, and keeps the tail.
type logWriter struct {
	mu   sync.Mutex
	w    io.Writer
	tail *tail
}

func (l *logWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tail.Write(b)
	if l.w != nil {
		_, _ = l.w.Write(b) // a log that fails must not stop the engine's output
	}
	return len(b), nil
}

func (l *logWriter) note(format string, args ...any) {
	line := "joulebench: " + time.Now().UTC().Format("2006-01-02T15:04:05.000000Z") + " " + fmt.Sprintf(format, args...) + "\n"
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w != nil {
		_, _ = io.WriteString(l.w, line)
	}
}

// tail keeps the last max bytes written.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTail(n int) *tail { return &tail{max: n} }

func (t *tail) Write(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
}

func (t *tail) lines(n int) string {
	t.mu.Lock()
	b := bytes.TrimRight(t.buf, "\n")
	s := strings.ToValidUTF8(string(b), "?")
	t.mu.Unlock()
	ls := strings.Split(s, "\n")
	if n > 0 && len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}
