package runner

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workload"
)

// checkRunFlags validates every option of a run before anything is
// created: the inputs it names (checkRunInputs), the engine's
// (checkEngineFlags) and the power source's.
func (r *Runner) checkRunFlags(changed func(string) bool) error {
	if err := r.checkRunInputs(changed); err != nil {
		return err
	}
	if err := r.checkEngineFlags(changed); err != nil {
		return err
	}
	if d := r.s.ImageDigest; d != "" && !imageDigestRE.MatchString(d) {
		return Invalidf("--image-digest %q: want sha256: and 64 hex digits (as `docker inspect --format '{{index .RepoDigests 0}}'` shows after the @)", d)
	}
	if r.s.CheckTelemetry != nil {
		return r.s.CheckTelemetry(r.simulatedKind(r.engineKind()))
	}
	return nil
}

// imageDigestRE is a container image digest as registries give it.
var imageDigestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// checkRunInputs checks the options of a run that name something outside
// the profile (a URL, a port, a file, a format, a JSON body), so that a
// mistake is invalid input reported before any run directory is created,
// never a run that fails (or silently does something else) later.
func (r *Runner) checkRunInputs(changed func(string) bool) error {
	s := r.s
	if s.CheckOutput != nil {
		if err := s.CheckOutput(); err != nil {
			return err
		}
	}
	if err := checkEngineURL(s.Engine.URL, changed("engine-url")); err != nil {
		return err
	}
	if p := s.Engine.Port; p < 0 || p > 65535 {
		return Invalidf("--port %d: a TCP port is 1 to 65535 (0: a free one)", p)
	}
	if f := s.Dataset.Format; f != "" && !slices.Contains(workload.Formats, f) {
		return Invalidf("--dataset-format %q: valid formats are %s", f, strings.Join(workload.Formats, ", "))
	}
	if _, err := ParseExtraBody(s.ExtraBody); err != nil {
		return err
	}
	if p := strings.TrimSpace(s.Replay); p != "" {
		if err := checkReplayPath(p); err != nil {
			return err
		}
	}
	if base := s.Baseline; base != "" {
		if _, err := archive.Load(base); err != nil {
			return WithCode(CodeInvalid, fmt.Errorf("--baseline: %w", err))
		}
	}
	return nil
}

// checkEngineURL refuses an --engine-url given empty (it used to run the
// simulator instead) and one that is not an http(s) URL with a host and,
// when given, a port in 1..65535.
func checkEngineURL(raw string, given bool) error {
	if raw == "" {
		if given {
			return Invalidf("--engine-url is empty: give the server's URL, e.g. http://127.0.0.1:8000 (or leave the flag out to run the simulator)")
		}
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Invalidf("--engine-url: not a URL: %v", redactURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return Invalidf("--engine-url: scheme %q: want http or https", u.Scheme)
	}
	if u.Hostname() == "" {
		return Invalidf("--engine-url: no host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Invalidf("--engine-url: port %s: a TCP port is 1 to 65535", p)
		}
	} else if _, _, err := net.SplitHostPort(u.Host); err == nil {
		return Invalidf("--engine-url: empty port")
	}
	return nil
}

// redactURLError keeps a URL parse error from repeating the URL (it may
// hold a password or a key).
func redactURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// checkReplayPath checks that --replay names a power.csv or a run
// directory holding one.
func checkReplayPath(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return Invalidf("--replay %s: %v", p, err)
	}
	if st.IsDir() {
		csv := filepath.Join(p, archive.PowerFile)
		if _, err := os.Stat(csv); err != nil {
			return Invalidf("--replay %s: a run directory without %s", p, archive.PowerFile)
		}
	}
	return nil
}

// FileLimit is the process's limit on open files (RLIMIT_NOFILE).
type FileLimit interface {
	// Get returns the soft and hard limits; ok is false where unknown.
	Get() (soft, hard uint64, ok bool)
	// RaiseToHard sets the soft limit to the hard one.
	RaiseToHard() error
}

// fileReserve are the descriptors a run needs besides its connections:
// the archive's files and logs, the engine's pipes, telemetry and the
// /metrics side path, the Go runtime.
const fileReserve = 64

// connections is the most requests a step of the profile keeps in flight
// at once, each one an open connection: a whole request set for a load
// shape with no bound in flight (all at once, or an open shape without a
// cap, which may have its whole set in flight), the bound otherwise.
func (e *engineRun) connections() int {
	most := 0
	for _, st := range e.l.Steps {
		n := 0
		switch c := st.Config.(type) {
		case *steps.RequestsConfig:
			n = e.deps.MostInFlight(c) * max(c.Repeat, 1)
			if c.MaxRequests > 0 {
				n = min(n, c.MaxRequests)
			}
			if k := c.InFlight(); k > 0 {
				n = min(n, k)
			}
		case *steps.WarmupConfig:
			n = c.Concurrency
			if count := e.deps.RequestCount(c); count > 0 {
				n = min(max(n, 1), count)
			}
		}
		most = max(most, n)
	}
	return most
}

// checkFileLimit makes sure the run can open the connections its profile
// asks for: it raises the soft limit on open files up to the hard limit
// when that is needed and allowed, and otherwise refuses the run before
// anything starts. With the simulator both ends of each connection are in
// this process.
func (e *engineRun) checkFileLimit(lim FileLimit) error {
	conns := e.connections()
	need := uint64(conns) + fileReserve
	if e.simulated {
		need += uint64(conns)
	}
	soft, hard, ok := lim.Get()
	if !ok || need <= soft {
		return nil
	}
	if need <= hard {
		if err := lim.RaiseToHard(); err == nil {
			return nil
		}
	}
	return Invalidf("the profile keeps up to %d requests in flight, which needs about %d open files, but this process may open %d (hard limit %d): raise the limit (ulimit -n) or send fewer requests at once (request_count, or the requests step's concurrency)",
		conns, need, soft, hard)
}
