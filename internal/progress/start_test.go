package progress

import (
	"strings"
	"testing"

	"github.com/joulebench/joulebench/internal/runprogress"
)

func TestStart(t *testing.T) {
	p := runprogress.Snapshot{Stage: "baseline", Total: 10}
	for _, c := range []struct {
		name string
		tty  bool
	}{
		{"not a terminal: plain lines", false},
		{"a terminal: the line in place, log lines above it", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out lockedBuffer
			console := &Console{W: &out}
			update, finish := Start(&out, c.tty, &out, "simulated", console)
			update(p)
			if !c.tty {
				if finish != nil {
					t.Error("plain lines have nothing to finish")
				}
				if got, want := out.String(), "progress: "+Text(p, 0, "simulated")+"\n"; got != want {
					t.Errorf("output %q, want %q", got, want)
				}
				return
			}
			// A log line through the console goes through the progress
			// line until the display ends, then straight to the writer.
			if console.tty.Load() == nil {
				t.Error("the console is not attached to the progress line")
			}
			finish()
			if console.tty.Load() != nil {
				t.Error("the console is still attached after finish")
			}
			before := out.String()
			_, _ = console.Write([]byte("a log line\n"))
			if got := strings.TrimPrefix(out.String(), before); got != "a log line\n" {
				t.Errorf("after finish the console wrote %q", got)
			}
			if !strings.Contains(before, "baseline") {
				t.Errorf("the line was not drawn: %q", before)
			}
		})
	}
}

// A download's bar names it and shows how much is done (the first
// update is drawn at once; the throttle holds back only later ones);
// finish clears it, drawing no full bar.
func TestDownloadBars(t *testing.T) {
	var out lockedBuffer
	update, finish := DownloadBars(&out)("sharegpt.json")
	update(1024, 2048) // half: 50 %
	drawn := out.String()
	for _, want := range []string{"sharegpt.json", " 50% "} {
		if !strings.Contains(drawn, want) {
			t.Errorf("bar %q lacks %q", drawn, want)
		}
	}
	finish()
	if got := out.String(); strings.Contains(got, "100%") {
		t.Errorf("finish drew the full bar: %q", got)
	}
}
