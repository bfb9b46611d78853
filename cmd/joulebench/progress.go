package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/joulebench/joulebench/steps"
)

// progressLineEvery is how often a writer that is not a terminal (CI
// logs, a pipe) gets a progress line within a stage.
const progressLineEvery = 10 * time.Second

// progressRedraw is how often a terminal's progress line is drawn again
// when nothing reported (the elapsed time and tokens/s move on).
const progressRedraw = 500 * time.Millisecond

// progressMinGap is the shortest time between two draws on a terminal.
const progressMinGap = 100 * time.Millisecond

// isTTY reports whether w is a terminal.
func isTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressText is one stage's progress in words: requests done of the
// total, in flight and failed, output tokens per second and the time
// since the stage began, and the current summed power.
func progressText(p steps.Progress, elapsed time.Duration, label string) string {
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
	parts = append(parts, fmt.Sprintf("%.1f s", elapsed.Seconds()))
	if p.HasPower {
		w := fmt.Sprintf("%.0f W", p.PowerW)
		if label != "" {
			w += " (" + label + ")"
		}
		parts = append(parts, w)
	}
	return strings.Join(parts, " | ")
}

// progressLines tells progress in plain lines, for a writer that is not a
// terminal: one when a stage begins, then at most one per every.
func progressLines(w io.Writer, every time.Duration, label string, now func() time.Time) func(steps.Progress) {
	var mu sync.Mutex
	stage := ""
	var last, begun time.Time
	return func(p steps.Progress) {
		mu.Lock()
		defer mu.Unlock()
		t := now()
		if p.Stage != stage {
			begun = t
		} else if t.Sub(last) < every {
			return
		}
		stage, last = p.Stage, t
		fmt.Fprintf(w, "progress: %s\n", progressText(p, t.Sub(begun), label))
	}
}

// ttyProgress is the progress line of a terminal: redrawn in place (a
// carriage return and erase) when the run reports and every
// progressRedraw in between, so that a long stage shows its elapsed time
// and throughput moving even when no request finishes. A log line written
// through it (Write) goes above the progress line.
type ttyProgress struct {
	w     io.Writer
	label string
	now   func() time.Time
	width func() int

	mu       sync.Mutex
	p        steps.Progress
	have     bool
	begun    time.Time
	lastDraw time.Time

	stop chan struct{}
	done chan struct{}
}

// newTTYProgress starts the progress line on w; finish ends it.
func newTTYProgress(w io.Writer, label string, now func() time.Time, width func() int, redraw time.Duration) *ttyProgress {
	t := &ttyProgress{w: w, label: label, now: now, width: width, stop: make(chan struct{}), done: make(chan struct{})}
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

// update takes the run's latest progress.
func (t *ttyProgress) update(p steps.Progress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if !t.have || p.Stage != t.p.Stage {
		t.begun = now
	}
	t.p, t.have = p, true
	if now.Sub(t.lastDraw) >= progressMinGap {
		t.draw()
	}
}

// draw writes the line over the previous one; t.mu is held.
func (t *ttyProgress) draw() {
	if !t.have {
		return
	}
	now := t.now()
	t.lastDraw = now
	line := progressText(t.p, now.Sub(t.begun), t.label)
	if w := t.width(); w > 1 && len([]rune(line)) > w-1 {
		line = string([]rune(line)[:w-1])
	}
	fmt.Fprint(t.w, "\r\x1b[K"+line)
}

// Write puts a log line above the progress line.
func (t *ttyProgress) Write(b []byte) (int, error) {
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

// finish stops the redraws and erases the line.
func (t *ttyProgress) finish() {
	close(t.stop)
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.have {
		fmt.Fprint(t.w, "\r\x1b[K")
	}
	t.have = false
}

// consoleOut is the run's stderr for log lines: through the progress line
// on a terminal once there is one, else straight to stderr.
type consoleOut struct {
	w   io.Writer
	tty atomic.Pointer[ttyProgress]
}

func (o *consoleOut) Write(b []byte) (int, error) {
	if t := o.tty.Load(); t != nil {
		return t.Write(b)
	}
	return o.w.Write(b)
}

// terminalWidth is the width of the terminal on w (80 when unknown).
func terminalWidth(w io.Writer) func() int {
	return func() int {
		if f, ok := w.(*os.File); ok {
			if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
				return cols
			}
		}
		return 80
	}
}

// progress shows the run's progress: a line redrawn in place on a
// terminal (returned, to be finished when the steps end; log lines through
// console go above it), else a plain line when a stage begins and every
// progressLineEvery (nil returned). --no-progress: nothing.
func (a *app) progress(d *steps.Deps, label string, console *consoleOut) *ttyProgress {
	if a.v.GetBool("no-progress") {
		return nil
	}
	if !a.errTTY {
		d.Progress = progressLines(a.errOut, progressLineEvery, label, time.Now)
		return nil
	}
	t := newTTYProgress(a.errOut, label, time.Now, terminalWidth(a.rawErr), progressRedraw)
	d.Progress = t.update
	if console != nil {
		console.tty.Store(t)
	}
	return t
}
