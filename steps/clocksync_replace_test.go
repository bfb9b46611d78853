package steps

import (
	"context"
	"os"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// rePlacingSource is an otherClockSource that places its device
// node1:gpu0 again once its end is measured: 0.01 s earlier (the end
// offset, 2.51 s, is 0.01 s above the start's).
type rePlacingSource struct{ otherClockSource }

var _ telemetry.RePlacer = (*rePlacingSource)(nil)

func (s *rePlacingSource) RePlace(device string, t float64) (float64, bool) {
	if device != "node1:gpu0" || s.ends == 0 {
		return t, false
	}
	return t - 0.01, true
}

// Once the end offsets are measured, the samples of a source on another
// node's clock are placed again, in power.csv and in the run's own copy:
// node1:gpu0's at 100 and 101 move to 99.99 and 100.99; gpu1 (on the run
// clock) stays. Every device covered [100, 101] together, now [100,
// 100.99]: the release stage that ended at the last sample (101) ends at
// 100.99, where every device still has data; the baseline [90, 100]
// keeps its start (never covered) and its end (still covered).
func TestRecordClockSyncPlacesSamplesAgain(t *testing.T) {
	rc := newRC(t)
	rows := []record.PowerSample{
		{T: 100, Device: "node1:gpu0", PowerW: 300, MemUsedBytes: -1},
		{T: 100, Device: "gpu1", PowerW: 80, MemUsedBytes: -1},
		{T: 101, Device: "node1:gpu0", PowerW: 301, MemUsedBytes: -1},
		{T: 101, Device: "gpu1", PowerW: 81, MemUsedBytes: -1},
	}
	if err := rc.Out.AppendPower(rows...); err != nil {
		t.Fatal(err)
	}
	if err := rc.Out.UpdateMeta(func(m *record.Meta) {
		m.Stages = []record.Stage{{Name: "baseline", Start: 90, End: 100}, {Name: "release", Start: 100.5, End: 101}}
	}); err != nil {
		t.Fatal(err)
	}
	d := &Deps{Source: &rePlacingSource{}}
	d.run.samples = append([]record.PowerSample(nil), rows...)
	if err := d.RecordClockSync(context.Background(), rc); err != nil {
		t.Fatal(err)
	}
	if err := rc.Out.Flush(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(rc.Out.Path(archive.PowerFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := archive.ReadPowerCSV(f, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{99.99, 100, 100.99, 101}
	for i, s := range got {
		if s.T != want[i] || d.run.samples[i].T != want[i] {
			t.Errorf("sample %d (%s): power.csv t %v, run's copy %v; want %v", i, s.Device, s.T, d.run.samples[i].T, want[i])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d samples, want %d", len(got), len(want))
	}
	st := rc.Out.Meta().Stages
	if len(st) != 2 || st[0].Start != 90 || st[0].End != 100 || st[1].Start != 100.5 || st[1].End != 100.99 {
		t.Errorf("stages %+v, want baseline [90, 100] and release [100.5, 100.99]", st)
	}
}
