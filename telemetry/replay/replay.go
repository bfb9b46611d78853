// Package replay is a telemetry source that feeds an archived power.csv
// back through the sampler: re-running a workflow against recorded power
// (re-analysis, demos) and tests that need real-looking data.
//
// Two modes:
//   - step (default): each Read returns the next instant of the file (all
//     rows sharing one time) with its original times; a test or tool drives
//     the sampler at its own pace.
//   - realtime: the first Read starts the replay at the run clock's now;
//     each Read returns the rows whose offset from the file's first row has
//     elapsed, re-stamped start + offset, so the recording lines up with the
//     stages of the current run, and then, as a live source would, each
//     device's state now: its power (and energy counter) linearly
//     interpolated between the two recorded rows around now, its memory
//     held from the earlier one. A sample taken at a stage boundary (the
//     sampler's SampleNow) is therefore a sample at that boundary, so every
//     stage inside the recording's span can be integrated; without it the
//     first replayed row after a boundary would come up to one recorded
//     interval later and the stage would start outside the samples.
//
// Options.OffsetS starts the replay that far into the recording; Close
// tells Options.Logf how much of the recording the run used (a run shorter
// than the recording replays only its first part).
//
// After the last row Read returns no readings (Done reports it). Devices
// come from the run.json next to power.csv when there is one (so the
// energy method, names and UUIDs of the original run carry over), else
// from the rows: Method "counter" when every row of a device has energy_j.
package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// Options configure a source.
type Options struct {
	// Realtime replays at the pace of Clock instead of one instant per
	// Read.
	Realtime bool
	// Clock is the run clock (nil: telemetry.WallClock); used in realtime
	// mode.
	Clock telemetry.Clock
	// Logf, when not nil, is told when the replay reaches its end, and at
	// Close how much of the recording the run used.
	Logf func(string)
	// OffsetS starts the replay this many seconds into the recording
	// (realtime and step modes): the rows before are skipped. It must lie
	// within the recording (≥ 0 and before its last row).
	OffsetS float64
}

// Source replays power samples.
type Source struct {
	file string
	rows []record.PowerSample
	devs []record.Device
	// byDev are the rows of each device, in time order (interpolation
	// at now in realtime mode).
	byDev map[string][]record.PowerSample
	opts  Options
	clock telemetry.Clock

	mu sync.Mutex
	// first is the index of the first row replayed (after the offset).
	first   int
	next    int
	started bool
	start   float64
	ended   bool
	closed  bool
	// endT is the (re-stamped) time of the last row, endMsg what was said
	// when the replay ran out of rows.
	endT   float64
	endMsg string
}

// AnomalyRecordingEnded is the anomaly (run.json event
// "power_recording_ended:replay") of a replay that ran out of rows before
// the run ended; its time is the last row's.
const AnomalyRecordingEnded = "power_recording_ended"

var (
	_ telemetry.Source          = (*Source)(nil)
	_ telemetry.AnomalyReporter = (*Source)(nil)
)

// Anomalies reports the end of the recording when the run went past it.
func (s *Source) Anomalies() []telemetry.Anomaly {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		return nil
	}
	return []telemetry.Anomaly{{T: s.endT, Device: "replay", Kind: AnomalyRecordingEnded, Detail: s.endMsg}}
}

// Open loads path, a power.csv file or a run directory holding one. The
// run.json beside it, when present, gives the devices.
func Open(path string, opts Options) (*Source, error) {
	file := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file = filepath.Join(path, archive.PowerFile)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	rows, err := archive.ReadPowerCSV(f, file)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	var devs []record.Device
	meta, err := archive.ReadMeta(filepath.Join(filepath.Dir(file), archive.RunFile))
	switch {
	case err == nil:
		devs = meta.Hardware.Devices
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("replay: %w", err)
	}
	s, err := New(rows, devs, opts)
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", file, err)
	}
	s.file = file
	return s, nil
}

// New replays rows. devices, when not empty, describes them (it must
// cover every device of the rows); else devices are derived from the rows.
func New(rows []record.PowerSample, devices []record.Device, opts Options) (*Source, error) {
	if len(rows) == 0 {
		return nil, errors.New("no power samples to replay")
	}
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b record.PowerSample) int { return cmp.Compare(a.T, b.T) })
	derived := deriveDevices(rows)
	if len(devices) > 0 {
		known := map[string]bool{}
		for _, d := range devices {
			known[d.ID] = true
		}
		for _, d := range derived {
			if !known[d.ID] {
				return nil, fmt.Errorf("device %q of power.csv is not in run.json's hardware.devices", d.ID)
			}
		}
	} else {
		devices = derived
	}
	s := &Source{file: "power samples", rows: rows, devs: slices.Clone(devices), opts: opts, clock: opts.Clock,
		byDev: map[string][]record.PowerSample{}}
	for _, r := range rows {
		s.byDev[r.Device] = append(s.byDev[r.Device], r)
	}
	if s.clock == nil {
		s.clock = telemetry.WallClock
	}
	if o := opts.OffsetS; o != 0 {
		first, last := s.Span()
		if math.IsNaN(o) || o < 0 || first+o >= last {
			return nil, fmt.Errorf("replay offset %v s is outside the recording (0 to %s s)", o, strconv.FormatFloat(last-first, 'f', -1, 64))
		}
		s.first = sort.Search(len(rows), func(i int) bool { return rows[i].T >= first+o })
		s.next = s.first
	}
	return s, nil
}

func deriveDevices(rows []record.PowerSample) []record.Device {
	var out []record.Device
	idx := map[string]int{}
	for _, r := range rows {
		k, ok := idx[r.Device]
		if !ok {
			k = len(out)
			idx[r.Device] = k
			out = append(out, record.Device{ID: r.Device, Method: "counter", PowerField: "replay"})
		}
		if !r.HasEnergy {
			out[k].Method = "power"
		}
	}
	return out
}

// Name returns "replay".
func (s *Source) Name() string { return Name }

// File is the replayed power.csv.
func (s *Source) File() string { return s.file }

// Span is the time range of the recording.
func (s *Source) Span() (first, last float64) { return s.rows[0].T, s.rows[len(s.rows)-1].T }

// Used says how much of the recording has been replayed: from the offset
// to the recording time reached, in seconds, and the recording's length.
func (s *Source) Used() (fromS, toS, totalS float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, last := s.Span()
	fromS = s.rows[s.first].T - first
	switch {
	case s.next >= len(s.rows):
		toS = last - first
	case s.opts.Realtime && s.started:
		toS = min(max(s.clock()-s.start+fromS, fromS), last-first)
	case s.next > s.first:
		toS = s.rows[s.next-1].T - first
	default:
		toS = fromS
	}
	return fromS, toS, last - first
}

// UsageNote is Used in words: how much of the recording the run used, and
// what was left out.
func (s *Source) UsageNote() string {
	from, to, total := s.Used()
	pct := 100.0
	if total > 0 {
		pct = (to - from) / total * 100
	}
	msg := fmt.Sprintf("replay of %s: this run used %s s of the %s s recording (%s s to %s s, %.0f %%)",
		s.file, fmtS(to-from), fmtS(total), fmtS(from), fmtS(to), pct)
	if from > 0 || to < total {
		msg += "; the rest was not replayed (--replay-offset S starts later into it)"
	}
	return msg
}

// usedAny reports whether any row was replayed (a source only opened to
// list its devices says nothing at Close).
func (s *Source) usedAny() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started || s.next > s.first
}

func fmtS(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// Devices lists the replayed devices.
func (s *Source) Devices(context.Context) ([]record.Device, error) {
	return slices.Clone(s.devs), nil
}

// Done reports whether every row has been returned.
func (s *Source) Done() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next >= len(s.rows)
}

// Read returns the next rows (see the package comment for the two modes).
func (s *Source) Read(ctx context.Context) ([]telemetry.Reading, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, telemetry.ErrStopped
	}
	if s.next >= len(s.rows) {
		if !s.ended {
			s.ended = true
			first, last := s.Span()
			s.endT = last
			if s.started {
				s.endT += s.start - s.rows[s.first].T
			}
			s.endMsg = fmt.Sprintf("the power recording ended: replay of %s has no rows after t=%s (%d rows, %.1f s of recording); "+
				"a stage still running has no power samples to its end (check power_devices_present)", s.file,
				strconv.FormatFloat(s.endT, 'f', -1, 64), len(s.rows), last-first)
			if s.opts.Logf != nil {
				s.opts.Logf(s.endMsg)
			}
		}
		return nil, nil
	}
	t0 := s.rows[s.first].T
	shift := 0.0
	limit := s.rows[s.next].T // step: one instant
	if s.opts.Realtime {
		now := s.clock()
		if !s.started {
			s.started, s.start = true, now
		}
		shift = s.start - t0
		limit = t0 + (now - s.start)
	}
	var out []telemetry.Reading
	for s.next < len(s.rows) && s.rows[s.next].T <= limit {
		r := s.rows[s.next]
		out = append(out, telemetry.Reading{
			Device: r.Device, PowerW: r.PowerW, EnergyJ: r.EnergyJ, HasEnergy: r.HasEnergy,
			MemUsedBytes: r.MemUsedBytes, T: r.T + shift,
		})
		s.next++
	}
	if s.opts.Realtime {
		out = append(out, s.between(limit, shift)...)
	}
	return out, nil
}

// between is each device's state at recording time t, re-stamped t +
// shift, for the devices whose recording has a row before and a row after
// t (none exactly at t: that row was just returned as it is). Power and
// the energy counter are interpolated linearly between the two rows (the
// counter only when both rows have it), memory is the earlier row's.
func (s *Source) between(t, shift float64) []telemetry.Reading {
	var out []telemetry.Reading
	for _, d := range s.devs {
		rows := s.byDev[d.ID]
		i, _ := slices.BinarySearchFunc(rows, t, func(r record.PowerSample, t float64) int {
			if r.T <= t {
				return -1
			}
			return 1
		})
		// rows[i-1].T <= t < rows[i].T
		if i == 0 || i == len(rows) || rows[i-1].T == t {
			continue
		}
		a, b := rows[i-1], rows[i]
		f := (t - a.T) / (b.T - a.T)
		r := telemetry.Reading{Device: d.ID, PowerW: a.PowerW + f*(b.PowerW-a.PowerW), MemUsedBytes: a.MemUsedBytes, T: t + shift}
		if a.HasEnergy && b.HasEnergy {
			r.EnergyJ, r.HasEnergy = a.EnergyJ+f*(b.EnergyJ-a.EnergyJ), true
		}
		out = append(out, r)
	}
	return out
}

// Close ends the source (later reads return telemetry.ErrStopped) and
// tells Logf how much of the recording the run used.
func (s *Source) Close() error {
	s.mu.Lock()
	was := s.closed
	s.closed = true
	s.mu.Unlock()
	if !was && s.opts.Logf != nil && s.usedAny() {
		s.opts.Logf(s.UsageNote())
	}
	return nil
}
