package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/internal/runprogress"
	"github.com/joulebench/joulebench/internal/syncbuf"
)

// lockedBuffer is a bytes.Buffer written by the redraw goroutine while the
// test reads it.
type lockedBuffer = syncbuf.Buffer

// On a terminal the line is redrawn in place, cut to the terminal's width;
// a log line goes above it and the line is drawn again; finish erases it.
func TestTTYProgressDraws(t *testing.T) {
	var buf lockedBuffer
	t0 := time.Unix(1000, 0)
	var mu sync.Mutex
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	p := NewTTY(&buf, "", clock, func() int { return 60 }, time.Hour) // no redraw by the ticker here
	p.Update(runprogress.Snapshot{Stage: "formal", Total: 10, Sent: 10})
	mu.Lock()
	now = t0.Add(2 * time.Second)
	mu.Unlock()
	p.Update(runprogress.Snapshot{Stage: "formal", Total: 10, Sent: 10, Done: 4, Tokens: 1000})
	_, _ = p.Write([]byte("a log line\n"))
	p.Finish()
	// 1,000 tokens over 2 s = 500 tok/s; the line is cut at 59 columns.
	want := "\r\x1b[Kformal | 0/10 done, 10 in flight, 0 failed | 0.0 s" +
		"\r\x1b[Kformal | 4/10 done, 6 in flight, 0 failed | 500 tok/s | 2.0" +
		"\r\x1b[Ka log line\n" +
		"\r\x1b[Kformal | 4/10 done, 6 in flight, 0 failed | 500 tok/s | 2.0" +
		"\r\x1b[K"
	if got := buf.String(); got != want {
		t.Errorf("drawn:\n%q\nwant:\n%q", got, want)
	}
}

// Not a TTY: a plain line when a stage begins, then at most one per
// interval; never a carriage return. Each says done, in flight and failed,
// tokens/s, the time since the stage began and the time left, and the
// running J/token where power is measured.
func TestProgressLinesNotTTY(t *testing.T) {
	var buf bytes.Buffer
	t0 := time.Unix(1000, 0)
	now := t0
	show := Lines(&buf, 10*time.Second, "simulated", func() time.Time { return now })
	for i := 0; i < 100; i++ { // 100 updates over 25 s of formal requests
		now = t0.Add(time.Duration(i) * 250 * time.Millisecond)
		stage := "formal"
		if i < 4 {
			stage = "baseline"
		}
		show(runprogress.Snapshot{Stage: stage, Done: i, Sent: i + 10, Tokens: 100 * i, Total: 100, PowerW: 300, HasPower: true})
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// baseline at 0 s; formal begins at 1 s (i=4), then 11 s (i=44: 4,400
	// tokens over 10 s = 440 tok/s) and 21 s (i=84: 8,400 over 20 s = 420).
	// Time left: the 56 requests left at 44 done in 10 s take 10 × 56/44 =
	// 12.7 s ("13 s"); at 84 done in 20 s, 20 × 16/84 = 3.8 s ("4 s").
	// J/token so far: 300 W since the stage's first snapshot, 300 × 10 =
	// 3,000 J / 4,400 tokens = 0.6818; 300 × 20 = 6,000 J / 8,400 = 0.7143.
	want := []string{
		"progress: baseline | 0/100 done, 10 in flight, 0 failed | 0.0 s | 300 W (simulated)",
		"progress: formal | 4/100 done, 10 in flight, 0 failed | 0.0 s | 300 W (simulated)",
		"progress: formal | 44/100 done, 10 in flight, 0 failed | 440 tok/s | 10.0 s (13 s left) | 300 W (simulated) | 0.6818 J/token so far",
		"progress: formal | 84/100 done, 10 in flight, 0 failed | 420 tok/s | 20.0 s (4 s left) | 300 W (simulated) | 0.7143 J/token so far",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") || strings.Contains(buf.String(), "\r") {
		t.Errorf("lines:\n%q\nwant:\n%q", lines, want)
	}
}

// Time left in minutes and hours; none before the first request is done.
func TestTimeLeft(t *testing.T) {
	for _, c := range []struct {
		done, total int
		elapsed     time.Duration
		want        string
	}{
		{0, 10, time.Second, ""},
		{10, 10, time.Second, ""},
		{1, 10, 10 * time.Second, "1 min 30 s"},   // 10 s × 9/1 = 90 s
		{1, 1000, 10 * time.Second, "2 h 46 min"}, // 10 s × 999 = 9,990 s
		{3, 4, 3 * time.Second, "1 s"},            // 3 s × 1/3
	} {
		got, _ := timeLeft(runprogress.Snapshot{Done: c.done, Total: c.total}, c.elapsed)
		if got != c.want {
			t.Errorf("%d/%d in %v: %q, want %q", c.done, c.total, c.elapsed, got, c.want)
		}
	}
}
