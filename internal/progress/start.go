package progress

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/joulebench/joulebench/internal/runprogress"
)

// Start starts a run's progress display on w: on a terminal (tty) a line
// redrawn in place, as wide as raw's terminal, with the log lines written
// through console going above it (console may be nil); finish ends it.
// Not on a terminal: a plain line when a stage begins and every
// LineEvery, and finish is nil.
func Start(w io.Writer, tty bool, raw io.Writer, label string, console *Console) (update func(runprogress.Snapshot), finish func()) {
	if !tty {
		return Lines(w, LineEvery, label, time.Now), nil
	}
	t := NewTTY(w, label, time.Now, TerminalWidth(raw), Redraw)
	if console != nil {
		console.Attach(t)
	}
	return t.Update, func() {
		t.Finish()
		if console != nil {
			console.Attach(nil)
		}
	}
}

// DownloadBars draws a download's progress bar on w, described by desc:
// bytes done of total (total -1: unknown), 30 wide, redrawn at most every
// 200 ms, cleared when finished.
func DownloadBars(w io.Writer) func(desc string) (update func(done, total int64), finish func()) {
	return func(desc string) (func(done, total int64), func()) {
		bar := progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		max := int64(-2)
		return func(done, total int64) {
				if total != max {
					max = total
					bar.ChangeMax64(total)
				}
				_ = bar.Set64(done)
			}, func() {
				_ = bar.Finish()
			}
	}
}
