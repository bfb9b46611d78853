package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// TagEnv is the environment variable that marks the processes of one
// engine: its children inherit it, even one that leaves the engine's
// process group (setsid), so that the stop can find them (Linux).
const TagEnv = "JOULEBENCH_ENGINE"

// Tracking is how a managed engine is watched beyond its process group.
type Tracking struct {
	// Names are the engine's process names (its descriptor's Processes).
	Names []string
	// PidDir, when set, holds a pid file while the engine runs: a later
	// run reports the engine if joulebench died without stopping it
	// (Orphans).
	PidDir string
}

// DefaultPidDir is where a run's engine pid files go by default:
// $XDG_RUNTIME_DIR/joulebench/engines, else the user's cache directory's
// joulebench/engines, else joulebench-engines-UID in the temporary
// directory. It is per user: a run finds the engines another run of the
// same user left.
func DefaultPidDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "joulebench", "engines")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "joulebench", "engines")
	}
	return filepath.Join(os.TempDir(), "joulebench-engines-"+strconv.Itoa(os.Getuid()))
}

// SetTracking sets how the engine is watched beyond its process group;
// call it before Start.
func (s *Server) SetTracking(t Tracking) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.track = t
}

// prepareTracking tags spec's environment and notes the processes of the
// engine's names already running (they are not the engine's). The caller
// holds s.mu.
func (s *Server) prepareTracking(spec Spec) Spec {
	s.tag = strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	env := maps.Clone(spec.Env)
	if env == nil {
		env = map[string]string{}
	}
	env[TagEnv] = s.tag
	spec.Env = env
	s.before = map[int]bool{}
	if len(s.track.Names) > 0 {
		found, _ := FindServers(s.track.Names)
		for _, p := range found {
			s.before[p.PID] = true
		}
	}
	return spec
}

// strays are the engine's processes that outlived its process group:
// where environments can be read, those carrying its tag; elsewhere those
// of its names that were not running before it started.
func (s *Server) strays() []ProcInfo {
	procs, err := listProcs()
	if err != nil {
		return nil
	}
	s.mu.Lock()
	tag, before, names := s.tag, s.before, s.track.Names
	s.mu.Unlock()
	self := os.Getpid()
	var out []ProcInfo
	for _, p := range procs {
		if p.PID == self {
			continue
		}
		if canTag {
			if hasEnv(p.PID, TagEnv+"="+tag) {
				out = append(out, p)
			}
			continue
		}
		if _, ok := p.MatchName(names); ok && !before[p.PID] {
			out = append(out, p)
		}
	}
	return out
}

// portOpen reports whether the engine's port still accepts connections.
func (s *Server) portOpen() bool {
	u, err := url.Parse(s.Base)
	if err != nil || u.Host == "" {
		return false
	}
	c, err := net.DialTimeout("tcp", u.Host, 300*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// strayKillWait is how long the stop waits after SIGKILL to the strays.
const strayKillWait = 5 * time.Second

// waitStrays waits, once the process group is gone (at groupGone), for
// the engine's port to close and its processes outside the group to be
// gone: they get SIGTERM at once (the group's SIGTERM did not reach
// them), SIGKILL after grace. It returns when the last was seen gone
// (groupGone when nothing outlived the group).
func (s *Server) waitStrays(ctx context.Context, p *Process, grace time.Duration, groupGone time.Time) (time.Time, error) {
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	var termed, killed bool
	var killAt, giveUpAt time.Time
	for {
		strays, open := s.strays(), s.portOpen()
		now := time.Now()
		if len(strays) == 0 && !open {
			if !termed {
				return groupGone, nil
			}
			p.Note("stop: nothing of the engine left outside process group %d; port closed", p.PID())
			return now, nil
		}
		switch {
		case !termed:
			termed, killAt = true, now.Add(max(grace, 0))
			p.Note("stop: process group %d gone, but %s: SIGTERM to them", p.PID(), strayText(strays, open, s.Base))
			signalAll(strays, sigTerm)
		case !killed && now.After(killAt):
			killed, giveUpAt = true, now.Add(strayKillWait)
			p.Note("stop: grace of %s over: SIGKILL to %s", grace, strayText(strays, false, s.Base))
			signalAll(strays, sigKill)
		case killed && now.After(giveUpAt):
			return now, fmt.Errorf("%s: after the stop, %s", s.Spec.Name, strayText(strays, open, s.Base))
		}
		select {
		case <-ctx.Done():
			signalAll(strays, sigKill)
			return now, fmt.Errorf("%s: stop abandoned (%w) while %s", s.Spec.Name, ctx.Err(), strayText(strays, open, s.Base))
		case <-poll.C:
		}
	}
}

func signalAll(ps []ProcInfo, sig signal) {
	for _, p := range ps {
		_ = signalPID(p.PID, sig)
	}
}

// strayText says what outlived the process group.
func strayText(strays []ProcInfo, open bool, base string) string {
	var parts []string
	if len(strays) > 0 {
		ss := make([]string, len(strays))
		for i, p := range strays {
			ss[i] = p.String()
		}
		parts = append(parts, "still running outside its process group (daemonized?): "+strings.Join(ss, "; "))
	}
	if open {
		parts = append(parts, base+" still accepts connections")
	}
	return strings.Join(parts, ", and ")
}

// pidRecord is an engine's pid file.
type pidRecord struct {
	PID       int       `json:"pid"`
	Name      string    `json:"name"`
	Argv      []string  `json:"argv"`
	URL       string    `json:"url"`
	RunDir    string    `json:"run_dir,omitempty"`
	Tag       string    `json:"tag"`
	StartedAt time.Time `json:"started_at"`
	// Owner is the joulebench process that started the engine.
	Owner int `json:"owner_pid"`
}

// writePidFile records the started engine in s.track.PidDir. The caller
// holds s.mu.
func (s *Server) writePidFile(p *Process) error {
	dir := s.track.PidDir
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pid file: %w", err)
	}
	rec := pidRecord{PID: p.PID(), Name: s.Spec.Name, Argv: Redact(s.Spec.Argv), URL: s.Base, RunDir: s.Spec.Dir,
		Tag: s.tag, StartedAt: p.StartedAt(), Owner: os.Getpid()}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("pid file: %w", err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.json", filepath.Base(s.Spec.Name), rec.PID))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("pid file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("pid file: %w", err)
	}
	s.pidFile = path
	return nil
}

// removePidFile removes the pid file once the engine is gone.
func (s *Server) removePidFile() {
	s.mu.Lock()
	path := s.pidFile
	s.pidFile = ""
	s.mu.Unlock()
	if path != "" {
		_ = os.Remove(path)
	}
}

// Orphan is an engine that a joulebench started and did not stop (it was
// killed with SIGKILL, or the machine's parent-death signal was ignored),
// still running.
type Orphan struct {
	Name      string
	PID       int
	URL       string
	RunDir    string
	StartedAt time.Time
	// Procs are its processes still running.
	Procs []ProcInfo
	// File is its pid file.
	File string
}

func (o Orphan) String() string {
	ps := make([]string, len(o.Procs))
	for i, p := range o.Procs {
		ps[i] = strconv.Itoa(p.PID)
	}
	s := fmt.Sprintf("engine %s (pid %d, process group %d) started %s", o.Name, o.PID, o.PID, o.StartedAt.UTC().Format(time.RFC3339))
	if o.RunDir != "" {
		s += " for the run in " + filepath.Dir(o.RunDir)
	}
	return s + fmt.Sprintf(" is still running (processes %s, serving %s) after the joulebench that started it ended: stop it (kill -TERM -- -%d; kill -TERM %s)",
		strings.Join(ps, ", "), o.URL, o.PID, strings.Join(ps, " "))
}

// Orphans reads the pid files in dir and returns the engines whose
// joulebench is gone but which still run. The pid file of an engine that
// is gone is removed; the pid file of an engine whose joulebench still
// runs (a run in progress) is left alone. An unreadable pid file is
// skipped and named in the error.
func Orphans(dir string) ([]Orphan, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		return nil, err
	}
	procs, _ := listProcs()
	var out []Orphan
	var errs []error
	for _, f := range files {
		b, err := os.ReadFile(f)
		var rec pidRecord
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pid file %s: %w", f, err))
			continue
		}
		if rec.Owner != os.Getpid() && pidAlive(rec.Owner) {
			continue // its run is in progress
		}
		running := engineProcs(rec, procs)
		if len(running) == 0 {
			_ = os.Remove(f)
			continue
		}
		out = append(out, Orphan{Name: rec.Name, PID: rec.PID, URL: rec.URL, RunDir: rec.RunDir, StartedAt: rec.StartedAt, Procs: running, File: f})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, errors.Join(errs...)
}

// engineProcs are the processes of rec still running: those carrying its
// tag where environments can be read, else those of its process group
// while the leader runs the same program.
func engineProcs(rec pidRecord, procs []ProcInfo) []ProcInfo {
	var out []ProcInfo
	if canTag {
		for _, p := range procs {
			if hasEnv(p.PID, TagEnv+"="+rec.Tag) {
				out = append(out, p)
			}
		}
		return out
	}
	leaderOK := false
	for _, p := range procs {
		if p.PID == rec.PID {
			_, leaderOK = p.MatchName([]string{rec.Name, filepath.Base(firstArg(rec.Argv))})
		}
	}
	if !leaderOK {
		return nil
	}
	for _, p := range procs {
		if p.PGID == rec.PID {
			out = append(out, p)
		}
	}
	return out
}

func firstArg(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	return argv[0]
}
