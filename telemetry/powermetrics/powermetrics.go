// Package powermetrics is the macOS GPU power source (asiai's original
// method): it runs Apple's powermetrics tool with the gpu_power and thermal
// samplers,
//
//	sudo -n powermetrics --samplers gpu_power,thermal -i <ms> -f plist
//
// (without sudo when joulebench runs as root), and parses its output
// stream: the plist stream (one document per sample, gpu_energy in mJ) or
// the text stream ("GPU Power: N mW").
//
// Each powermetrics sample is the GPU's mean power over its interval and
// the energy of that interval; the source turns the energies into a
// cumulative counter, so the device's Method is "counter" and energy over a
// stage is exact up to the sample boundaries. A reading is stamped with the
// run-clock time its sample arrived (the end of its interval); Read returns
// the samples that arrived since the previous Read, so a Read between two
// samples returns none.
//
// powermetrics needs root. sudo -n never prompts: when it would need a
// password the error says how to fix it (sudo -v first, a sudoers rule, or
// run as root).
package powermetrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// ErrUnavailable is wrapped by errors that mean "powermetrics cannot run
// here" (not macOS, no powermetrics, no root).
var ErrUnavailable = errors.New("powermetrics unavailable")

// DefaultIntervalMS is the powermetrics sampling interval when none is set.
const DefaultIntervalMS = 500

// DeviceID is the power.csv key of the Apple GPU.
const DeviceID = "gpu0"

// Options configure a source.
type Options struct {
	// IntervalMS is powermetrics' -i (default DefaultIntervalMS).
	IntervalMS int
	// Format is FormatPlist (default) or FormatText.
	Format string
	// Clock stamps readings (nil: telemetry.WallClock).
	Clock telemetry.Clock
	// Command replaces the whole command line (tests, or a wrapper); its
	// output must be in Format. Default: [sudo -n] powermetrics --samplers
	// gpu_power,thermal -i <ms> [-f plist].
	Command []string
	// StartTimeout bounds the wait for the first sample (default 5 s plus
	// two intervals).
	StartTimeout time.Duration
	// Logf, when not nil, gets one line per notable event.
	Logf func(string)
}

// Source reads the Apple GPU through powermetrics.
type Source struct {
	opts  Options
	clock telemetry.Clock
	cmd   *exec.Cmd
	out   io.ReadCloser
	name  string

	stderr tailBuffer
	first  chan struct{} // closed at the first sample
	exited chan struct{} // closed when the process has exited and output is drained

	mu       sync.Mutex
	pending  []telemetry.Reading
	cumJ     float64
	lastT    float64
	field    string
	model    string
	samples  int
	exitErr  error
	closed   bool
	throttle telemetry.ThrottleLog
}

var (
	_ telemetry.Source           = (*Source)(nil)
	_ telemetry.ThrottleReporter = (*Source)(nil)
)

// DefaultCommand is the command line Open runs: sudo -n unless running as
// root.
func DefaultCommand(intervalMS int, format string) []string {
	if intervalMS <= 0 {
		intervalMS = DefaultIntervalMS
	}
	argv := []string{"powermetrics", "--samplers", "gpu_power,thermal", "-i", strconv.Itoa(intervalMS)}
	if format != FormatText {
		argv = append(argv, "-f", "plist")
	}
	if os.Geteuid() != 0 {
		argv = append([]string{"sudo", "-n"}, argv...)
	}
	return argv
}

// Open starts powermetrics and waits for its first GPU sample. Errors that
// mean "not here" (not macOS, no powermetrics, sudo needs a password) wrap
// ErrUnavailable.
func Open(opts Options) (*Source, error) {
	if opts.Format == "" {
		opts.Format = FormatPlist
	}
	if opts.Format != FormatPlist && opts.Format != FormatText {
		return nil, fmt.Errorf("powermetrics: unknown format %q (want %s or %s)", opts.Format, FormatPlist, FormatText)
	}
	if opts.IntervalMS <= 0 {
		opts.IntervalMS = DefaultIntervalMS
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 5*time.Second + 2*time.Duration(opts.IntervalMS)*time.Millisecond
	}
	argv := opts.Command
	if len(argv) == 0 {
		if runtime.GOOS != "darwin" {
			return nil, fmt.Errorf("powermetrics: %w: powermetrics exists only on macOS (this is %s); use --telemetry nvml, dcgm or none", ErrUnavailable, runtime.GOOS)
		}
		if _, err := exec.LookPath("powermetrics"); err != nil {
			return nil, fmt.Errorf("powermetrics: %w: powermetrics not found on PATH (it ships with macOS in /usr/bin): %v", ErrUnavailable, err)
		}
		argv = DefaultCommand(opts.IntervalMS, opts.Format)
		if argv[0] == "sudo" {
			if _, err := exec.LookPath("sudo"); err != nil {
				return nil, fmt.Errorf("powermetrics: %w: powermetrics needs root and sudo is not available; run joulebench as root or use --telemetry none", ErrUnavailable)
			}
		}
	}
	s := &Source{
		opts:   opts,
		clock:  opts.Clock,
		name:   "Apple GPU",
		first:  make(chan struct{}),
		exited: make(chan struct{}),
	}
	if s.clock == nil {
		s.clock = telemetry.WallClock
	}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Stderr = &s.stderr
	// A grandchild that outlives the process (powermetrics under a killed
	// sudo) must not keep Wait from returning.
	s.cmd.WaitDelay = 2 * time.Second
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("powermetrics: %w", err)
	}
	s.out = out
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("powermetrics: %w: start %s: %v", ErrUnavailable, strings.Join(argv, " "), err)
	}
	go s.consume(out)

	timer := time.NewTimer(opts.StartTimeout)
	defer timer.Stop()
	select {
	case <-s.first:
		if runtime.GOOS == "darwin" && len(opts.Command) == 0 {
			if chip := sysctl("machdep.cpu.brand_string"); chip != "" {
				s.name = chip + " GPU"
			}
		}
		return s, nil
	case <-s.exited:
		s.mu.Lock()
		err := s.exitErr
		s.mu.Unlock()
		return nil, startError(argv, err, s.stderr.String())
	case <-timer.C:
		_ = s.Close()
		return nil, fmt.Errorf("powermetrics: no GPU sample within %s from %s (stderr: %q)", opts.StartTimeout, strings.Join(argv, " "), s.stderr.String())
	}
}

// startError explains why powermetrics ended before its first sample.
func startError(argv []string, exitErr error, stderr string) error {
	stderr = strings.TrimSpace(stderr)
	low := strings.ToLower(stderr)
	cmd := strings.Join(argv, " ")
	switch {
	case strings.Contains(low, "password is required") || strings.Contains(low, "a terminal is required") ||
		(strings.HasPrefix(low, "sudo:") && strings.Contains(low, "not allowed")):
		return fmt.Errorf("powermetrics: %w: it needs root and sudo -n cannot run it without a password (sudo said %q); run `sudo -v` just before joulebench, or allow it without a password (sudoers: `%s ALL=(root) NOPASSWD: /usr/bin/powermetrics`), or run joulebench as root; or use --telemetry none",
			ErrUnavailable, stderr, userName())
	case strings.Contains(low, "superuser") || strings.Contains(low, "must be run as root"):
		return fmt.Errorf("powermetrics: %w: it must run as root (%q); run joulebench with sudo or use --telemetry none", ErrUnavailable, stderr)
	case strings.Contains(low, "unrecognized sampler") || strings.Contains(low, "invalid sampler"):
		return fmt.Errorf("powermetrics: %w: this powermetrics has no gpu_power sampler (%q); Apple silicon is needed", ErrUnavailable, stderr)
	}
	if exitErr == nil {
		exitErr = errors.New("exited")
	}
	return fmt.Errorf("powermetrics: %s ended before its first GPU sample: %v (stderr: %q)", cmd, exitErr, stderr)
}

func userName() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "YOUR_USER"
}

// consume parses the output until EOF, queues readings, then reaps the
// process.
func (s *Source) consume(out io.Reader) {
	var once sync.Once
	perr := Parse(out, s.opts.Format, func(sm Sample) error {
		s.add(sm)
		if sm.HasPower {
			once.Do(func() { close(s.first) })
		}
		return nil
	})
	if perr != nil {
		_, _ = io.Copy(io.Discard, out)
	}
	werr := s.cmd.Wait()
	s.mu.Lock()
	switch {
	case perr != nil:
		s.exitErr = perr
	case werr != nil:
		s.exitErr = werr
	default:
		s.exitErr = errors.New("exited")
	}
	s.mu.Unlock()
	close(s.exited)
}

func (s *Source) add(sm Sample) {
	if sm.Thermal != "" && !strings.EqualFold(sm.Thermal, "Nominal") {
		s.throttle.Observe(DeviceID, []string{"thermal_pressure_" + strings.ToLower(sm.Thermal)}, 0)
	}
	if !sm.HasPower {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.clock()
	if t <= s.lastT {
		t = s.lastT + 1e-6 // keep a device's times strictly increasing
	}
	s.lastT = t
	s.cumJ += sm.EnergyJ
	s.samples++
	if s.field == "" {
		s.field = sm.Field
	}
	if sm.HWModel != "" {
		s.model = sm.HWModel
	}
	s.pending = append(s.pending, telemetry.Reading{
		Device: DeviceID, PowerW: sm.PowerW, EnergyJ: s.cumJ, HasEnergy: true, MemUsedBytes: -1, T: t,
	})
}

// Name returns "powermetrics".
func (s *Source) Name() string { return Name }

// Devices lists the one Apple GPU, with its cumulative energy counter.
func (s *Source) Devices(context.Context) ([]record.Device, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := s.name
	if s.model != "" {
		name += " (" + s.model + ")"
	}
	return []record.Device{{
		ID:         DeviceID,
		Name:       name,
		Method:     "counter",
		PowerField: "powermetrics:" + s.field,
	}}, nil
}

// Read returns the samples that arrived since the previous Read (none
// between two samples), each stamped with its arrival time. Once
// powermetrics has ended and its last samples were read, Read fails.
func (s *Source) Read(ctx context.Context) ([]telemetry.Reading, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, telemetry.ErrStopped
	}
	if len(s.pending) > 0 {
		out := s.pending
		s.pending = nil
		return out, nil
	}
	select {
	case <-s.exited:
		return nil, fmt.Errorf("powermetrics ended: %v (stderr: %q)", s.exitErr, s.stderr.String())
	default:
	}
	return nil, nil
}

// Throttled reports thermal pressure above Nominal since the previous call.
func (s *Source) Throttled() (bool, string) { return s.throttle.Report() }

// Close stops powermetrics (SIGTERM, which sudo relays; SIGKILL after 3 s;
// the output pipe is closed 2 s later if something still holds it) and
// waits for it.
func (s *Source) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(3 * time.Second):
	}
	_ = s.cmd.Process.Kill()
	select {
	case <-s.exited:
		return nil
	case <-time.After(2 * time.Second):
	}
	_ = s.out.Close()
	<-s.exited
	return nil
}

func sysctl(name string) string {
	out, err := exec.Command("sysctl", "-n", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// tailBuffer keeps the last 4 KiB written to it (a process's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - 4096; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(bytes.TrimSpace(b.buf))
}
