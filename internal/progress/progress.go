// Package progress draws a run's progress (runprogress.Snapshot) on a terminal,
// as a line redrawn in place with log lines going above it, or as plain
// lines for a writer that is not a terminal (CI logs, a pipe).
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/joulebench/joulebench/internal/runprogress"
)

// LineEvery is how often a writer that is not a terminal (CI
// logs, a pipe) gets a progress line within a stage.
const LineEvery = 10 * time.Second

// Redraw is how often a terminal's progress line is drawn again
// when nothing reported (the elapsed time and tokens/s move on).
const Redraw = 500 * time.Millisecond

// minGap is the shortest time between two draws on a terminal.
const minGap = 100 * time.Millisecond

// IsTTY reports whether w is a terminal.
func IsTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Text is one stage's progress in words: requests done of the
// total, in flight and failed, output tokens per second, the time since
// the stage began and the time left (the requests left over the current
// rate), and the current summed power.
func Text(p runprogress.Snapshot, elapsed time.Duration, label string) string {
	return text(p, elapsed, label, meter{})
}

// text is Text with the stage's energy so far (m): with power measured,
// the running J/token (energy so far / output tokens so far).
func text(p runprogress.Snapshot, elapsed time.Duration, label string, m meter) string {
	parts := []string{p.Stage}
	if p.Total > 0 {
		req := fmt.Sprintf("%d/%d done", p.Done, p.Total)
		if inFlight := p.Sent - p.Done; inFlight > 0 {
			req += fmt.Sprintf(", %d in flight", inFlight)
		}
		req += fmt.Sprintf(", %d failed", p.Failed)
		parts = append(parts, req)
		if s := elapsed.Seconds(); s > 0 {
			parts = append(parts, fmt.Sprintf("%.0f tok/s", float64(p.Tokens)/s))
		}
	}
	el := fmt.Sprintf("%.1f s", elapsed.Seconds())
	if left, ok := timeLeft(p, elapsed); ok {
		el += " (" + left + " left)"
	}
	parts = append(parts, el)
	if p.HasPower {
		w := fmt.Sprintf("%.0f W", p.PowerW)
		if label != "" {
			w += " (" + label + ")"
		}
		parts = append(parts, w)
		if m.ok && p.Tokens > 0 && m.joules > 0 {
			parts = append(parts, fmt.Sprintf("%.4g J/token so far", m.joules/float64(p.Tokens)))
		}
	}
	return strings.Join(parts, " | ")
}

// timeLeft is the time the requests left take at the rate of those done
// so far (none before the first is done, or when all are).
func timeLeft(p runprogress.Snapshot, elapsed time.Duration) (string, bool) {
	if p.Total <= 0 || p.Done <= 0 || p.Done >= p.Total || elapsed <= 0 {
		return "", false
	}
	left := elapsed.Seconds() * float64(p.Total-p.Done) / float64(p.Done)
	if left < 60 {
		return fmt.Sprintf("%.0f s", left), true
	}
	d := time.Duration(left) * time.Second
	if d >= time.Hour {
		return fmt.Sprintf("%d h %02d min", int(d.Hours()), int(d.Minutes())%60), true
	}
	return fmt.Sprintf("%d min %02d s", int(d.Minutes()), int(d.Seconds())%60), true
}

// meter integrates the summed power of a stage's snapshots over time
// (trapezoid between successive snapshots): the energy so far that the
// running J/token divides.
type meter struct {
	stage  string
	last   time.Time
	lastW  float64
	has    bool // last snapshot had power
	ok     bool // joules covers the stage since its first snapshot with power
	joules float64
}

// add takes a snapshot at t; a new stage starts from zero.
func (m *meter) add(p runprogress.Snapshot, t time.Time) {
	if p.Stage != m.stage {
		*m = meter{stage: p.Stage}
	}
	if !p.HasPower {
		m.has = false
		return
	}
	if m.has {
		m.joules += (m.lastW + p.PowerW) / 2 * t.Sub(m.last).Seconds()
	}
	m.last, m.lastW, m.has, m.ok = t, p.PowerW, true, true
}

// Lines tells progress in plain lines, for a writer that is not a
// terminal: one when a stage begins, then at most one per every.
func Lines(w io.Writer, every time.Duration, label string, now func() time.Time) func(runprogress.Snapshot) {
	var mu sync.Mutex
	stage := ""
	var last, begun time.Time
	var m meter
	return func(p runprogress.Snapshot) {
		mu.Lock()
		defer mu.Unlock()
		t := now()
		m.add(p, t)
		if p.Stage != stage {
			begun = t
		} else if t.Sub(last) < every {
			return
		}
		stage, last = p.Stage, t
		fmt.Fprintf(w, "progress: %s\n", text(p, t.Sub(begun), label, m))
	}
}

// TTY is the progress line of a terminal: redrawn in place (a
// carriage return and erase) when the run reports and every
// progressRedraw in between, so that a long stage shows its elapsed time
// and throughput moving even when no request finishes. A log line written
// through it (Write) goes above the progress line.
type TTY struct {
	w     io.Writer
	label string
	now   func() time.Time
	width func() int

	mu       sync.Mutex
	p        runprogress.Snapshot
	m        meter
	have     bool
	begun    time.Time
	lastDraw time.Time

	stop chan struct{}
	done chan struct{}
}

// NewTTY starts the progress line on w; finish ends it.
func NewTTY(w io.Writer, label string, now func() time.Time, width func() int, redraw time.Duration) *TTY {
	t := &TTY{w: w, label: label, now: now, width: width, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		tick := time.NewTicker(redraw)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
				t.mu.Lock()
				t.draw()
				t.mu.Unlock()
			}
		}
	}()
	return t
}

// Update takes the run's latest progress.
func (t *TTY) Update(p runprogress.Snapshot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if !t.have || p.Stage != t.p.Stage {
		t.begun = now
	}
	t.p, t.have = p, true
	t.m.add(p, now)
	if now.Sub(t.lastDraw) >= minGap {
		t.draw()
	}
}

// draw writes the line over the previous one; t.mu is held.
func (t *TTY) draw() {
	if !t.have {
		return
	}
	now := t.now()
	t.lastDraw = now
	line := text(t.p, now.Sub(t.begun), t.label, t.m)
	if w := t.width(); w > 1 && len([]rune(line)) > w-1 {
		line = string([]rune(line)[:w-1])
	}
	fmt.Fprint(t.w, "\r\x1b[K"+line)
}

// Write puts a log line above the progress line.
func (t *TTY) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.have {
		fmt.Fprint(t.w, "\r\x1b[K")
	}
	n, err := t.w.Write(b)
	if t.have {
		t.draw()
	}
	return n, err
}

// Finish stops the redraws and erases the line.
func (t *TTY) Finish() {
	close(t.stop)
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.have {
		fmt.Fprint(t.w, "\r\x1b[K")
	}
	t.have = false
}

// Console is the run's stderr for log lines: through the progress line
// on a terminal once there is one, else straight to stderr.
type Console struct {
	W   io.Writer
	tty atomic.Pointer[TTY]
}

func (o *Console) Write(b []byte) (int, error) {
	if t := o.tty.Load(); t != nil {
		return t.Write(b)
	}
	return o.W.Write(b)
}

// TerminalWidth is the width of the terminal on w (80 when unknown).
func TerminalWidth(w io.Writer) func() int {
	return func() int {
		if f, ok := w.(*os.File); ok {
			if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
				return cols
			}
		}
		return 80
	}
}

// Attach puts log lines through t's progress line (nil: straight to W).
func (o *Console) Attach(t *TTY) { o.tty.Store(t) }
