package gpusettings

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// ApplyOptions say where the journal goes and whose run it is.
type ApplyOptions struct {
	// Journals are the journals' places (DefaultJournals); none with a
	// Volatile controller only.
	Journals Journals
	RunID    string
	// Now stamps the journal (nil: time.Now).
	Now func() time.Time
}

// change is one value changed on one device, in the order applied.
type change struct {
	dev DeviceState
	// lock is the GPULock setting locked; nil: the power limit, whose
	// previous value was previous.
	lock     *record.GPUSetting
	previous float64
}

// Session is the settings of one run, applied; Restore puts the previous
// values back.
type Session struct {
	ctl Controller
	// journalDir holds the journal files, by GPU index in files; jrnl is
	// what they hold (one device each).
	journalDir string
	files      map[int]string
	jrnl       *Journal
	changes    []change
	rec        record.GPUSettings

	mu       sync.Mutex
	restored bool
	samples  []timedSample
	stop     func()
}

type timedSample struct {
	t   float64
	per []Sample // by position in rec.Devices; a failed read has SMClockMHz -1
}

// Apply checks req against every device (Check), writes the journal of the
// previous values, applies the request to every device and reads every
// value back. It changes all or nothing: a failed change or a read-back
// that differs from the request restores what it had changed, removes the
// journal and returns the error. A Controller's ErrNoPermission comes back
// with how to grant the permission. An empty request gives a nil Session.
func Apply(ctl Controller, req Request, o ApplyOptions) (*Session, error) {
	if req.Empty() {
		return nil, nil
	}
	devs, err := ctl.Devices()
	if err != nil {
		return nil, fmt.Errorf("GPU settings: read the GPUs: %w", err)
	}
	if err := Check(req, devs); err != nil {
		return nil, err
	}
	s := &Session{ctl: ctl, rec: record.GPUSettings{Controller: ctl.Name()}}
	for _, st := range record.GPUSettingsTable() {
		*st.Asked(&s.rec) = req.String(st)
	}
	if !ctl.Volatile() {
		if err := s.journal(ctl, req, devs, o); err != nil {
			return nil, err
		}
	}
	for _, d := range devs {
		s.rec.Devices = append(s.rec.Devices, deviceRecord(d, req))
	}
	if err := s.apply(req, devs); err != nil {
		if rerr := s.Restore(); rerr != nil {
			return nil, errors.Join(err, rerr)
		}
		return nil, fmt.Errorf("%w; every GPU was restored", err)
	}
	return s, nil
}

// journal refuses while a journal is outstanding and writes the run's,
// one file per GPU it changes, each created exclusively.
func (s *Session) journal(ctl Controller, req Request, devs []DeviceState, o ApplyOptions) error {
	if len(o.Journals.Dirs) == 0 {
		return errors.New("GPU settings: no journal directory; nothing changed")
	}
	if err := o.Journals.Check(); err != nil {
		return err
	}
	s.jrnl = journalOf(ctl, req, devs, o)
	dir, paths, err := o.Journals.create(s.jrnl)
	if err != nil {
		return fmt.Errorf("%w; nothing changed", err)
	}
	s.journalDir, s.files = dir, map[int]string{}
	for i, d := range s.jrnl.Devices {
		s.files[d.Index] = paths[i]
	}
	return nil
}

// JournalDir is the directory the run's journal is in ("": none).
func (s *Session) JournalDir() string {
	if s == nil {
		return ""
	}
	return s.journalDir
}

func journalOf(ctl Controller, req Request, devs []DeviceState, o ApplyOptions) *Journal {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	j := &Journal{RunID: o.RunID, PID: os.Getpid(), Created: now().UTC().Format(time.RFC3339), Controller: ctl.Name()}
	for _, d := range devs {
		jd := JournalDevice{Index: d.Index, UUID: d.UUID}
		for _, s := range record.GPUSettingsTable() {
			if _, asked := req.Locks[s.Key]; asked && s.Reset != nil {
				*s.Reset(&jd.GPUSettingResets) = true
			}
		}
		if _, ok := req.limitFor(d.Index); ok {
			jd.PreviousPowerLimitW = d.PowerLimitW
		}
		if jd.PreviousPowerLimitW > 0 || jd.GPUSettingResets != (record.GPUSettingResets{}) {
			j.Devices = append(j.Devices, jd)
		}
	}
	return j
}

func deviceRecord(d DeviceState, req Request) record.GPUSettingsDevice {
	r := record.GPUSettingsDevice{Index: d.Index, UUID: d.UUID, PowerLimitPreviousW: d.PowerLimitW,
		PowerLimitDefaultW: d.DefaultLimitW, PowerLimitMinW: d.MinLimitW, PowerLimitMaxW: d.MaxLimitW}
	if w, ok := req.limitFor(d.Index); ok {
		r.PowerLimitAskedW = w
	}
	for _, s := range record.GPUSettingsTable() {
		if s.Device == nil {
			continue
		}
		f := s.Device(&r)
		c, asked := req.Locks[s.Key]
		if asked || s.RangeAlways {
			*f.Min, *f.Max = d.Locks[s.Key].MinMHz, d.Locks[s.Key].MaxMHz
		}
		if asked {
			*f.Asked = c.String()
		}
	}
	return r
}

// readBackTolerance is how far (W) a limit read back may be from the one
// set: NVML stores milliwatts, so a whole-watt request reads back exactly.
const readBackTolerance = 0.001

// apply changes every device, then reads every value back.
func (s *Session) apply(req Request, devs []DeviceState) error {
	for _, d := range devs {
		if w, ok := req.limitFor(d.Index); ok {
			if err := s.ctl.SetPowerLimit(d.Index, w); err != nil {
				return grant(fmt.Errorf("GPU %d: set power limit %s W: %w", d.Index, formatW(w), err))
			}
			s.changes = append(s.changes, change{dev: d, previous: d.PowerLimitW})
		}
		if err := s.lock(req, d); err != nil {
			return err
		}
	}
	for k := range s.rec.Devices {
		rd := &s.rec.Devices[k]
		if rd.PowerLimitAskedW > 0 {
			got, err := s.ctl.PowerLimit(rd.Index)
			if err != nil {
				return fmt.Errorf("GPU %d: read the power limit back: %w", rd.Index, err)
			}
			rd.PowerLimitReadBackW = got
			if math.Abs(got-rd.PowerLimitAskedW) > readBackTolerance {
				return fmt.Errorf("GPU %d: power limit read back %s W, asked %s W: the setting did not take", rd.Index, formatW(got), formatW(rd.PowerLimitAskedW))
			}
		}
		if err := s.readBackLocks(rd); err != nil {
			return err
		}
	}
	return nil
}

// lock locks every range req asks on device d, in the table's order.
func (s *Session) lock(req Request, d DeviceState) error {
	table := record.GPUSettingsTable()
	for i := range table {
		st := &table[i]
		c, asked := req.Locks[st.Key]
		if st.Kind != record.GPULock || !asked {
			continue
		}
		if err := s.ctl.Lock(d.Index, st.Key, c); err != nil {
			return grant(fmt.Errorf("GPU %d: lock %s %s %s: %w", d.Index, st.Name, c, st.Unit, err))
		}
		s.changes = append(s.changes, change{dev: d, lock: st})
	}
	return nil
}

// readBackLocks reads back every locked range of device rd that run.json
// has a read-back field for.
func (s *Session) readBackLocks(rd *record.GPUSettingsDevice) error {
	for _, st := range record.GPUSettingsTable() {
		if st.Device == nil {
			continue
		}
		f := st.Device(rd)
		if *f.Asked == "" || f.ReadBack == nil {
			continue
		}
		c, ok, err := s.ctl.Locked(rd.Index, st.Key)
		switch {
		case err != nil:
			return fmt.Errorf("GPU %d: read the locked %s back: %w", rd.Index, st.Short, err)
		case !ok:
			*f.Note = st.ReadBackNote
		case c.String() != *f.Asked:
			return fmt.Errorf("GPU %d: locked %s read back %s %s, asked %s %s: the setting did not take", rd.Index, st.Short, c, st.Unit, *f.Asked, st.Unit)
		default:
			*f.ReadBack = c.String()
		}
	}
	return nil
}

// grant adds how to grant the permission to a NO_PERMISSION error.
func grant(err error) error {
	if errors.Is(err, ErrNoPermission) {
		return fmt.Errorf("%w: %s", err, HowToGrant)
	}
	return err
}

// Record is the settings as run.json records them.
func (s *Session) Record() record.GPUSettings {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rec
	r.Devices = append([]record.GPUSettingsDevice(nil), s.rec.Devices...)
	r.Notes = append([]string(nil), s.rec.Notes...)
	return r
}

// Note adds a note to the record.
func (s *Session) Note(msg string) {
	s.mu.Lock()
	s.rec.Notes = append(s.rec.Notes, msg)
	s.mu.Unlock()
}

// Restore puts every changed value back, last changed first, and removes
// the journal once all are back. It runs once; later calls return nil.
// A value it cannot restore keeps the journal and is an error that says
// to run `joulebench restore`.
func (s *Session) Restore() error {
	if s == nil {
		return nil
	}
	s.StopMonitor()
	s.mu.Lock()
	if s.restored {
		s.mu.Unlock()
		return nil
	}
	s.restored = true
	s.mu.Unlock()
	var errs []error
	failed := map[int]bool{}
	for i := len(s.changes) - 1; i >= 0; i-- {
		if err := s.undo(s.changes[i]); err != nil {
			errs = append(errs, err)
			failed[s.changes[i].dev.Index] = true
		}
	}
	// A GPU all of whose values are back loses its journal; one not
	// restored keeps it.
	var kept []string
	for _, index := range slices.Sorted(maps.Keys(s.files)) {
		path := s.files[index]
		if failed[index] {
			kept = append(kept, path)
		} else if err := RemoveJournal(path); err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	if len(errs) > 0 {
		if len(kept) > 0 {
			errs = append(errs, fmt.Errorf("the journal %s keeps the previous values: run `joulebench restore`", strings.Join(kept, ", ")))
		}
		err = fmt.Errorf("GPU settings not restored: %w", errors.Join(errs...))
	}
	s.mu.Lock()
	s.rec.Restore, s.rec.RestoreError = record.RestoreDone, ""
	if err != nil {
		s.rec.Restore, s.rec.RestoreError = record.RestoreFailed, err.Error()
	}
	s.mu.Unlock()
	return err
}

// undo puts one change back.
func (s *Session) undo(c change) error {
	if c.lock == nil {
		return restorePower(s.ctl, c.dev.Index, c.previous)
	}
	return unlock(s.ctl, c.dev.Index, *c.lock)
}

func unlock(ctl Controller, index int, st record.GPUSetting) error {
	if err := ctl.Unlock(index, st.Key); err != nil {
		return fmt.Errorf("GPU %d: unlock %s: %w", index, st.Name, err)
	}
	return nil
}

// SetRunID names the run in the journal: the run's id is known for sure
// only once its archive exists, after the settings were applied (a run
// started in the same second as another takes a counter).
func (s *Session) SetRunID(id string) error {
	if s == nil || s.jrnl == nil || s.jrnl.RunID == id {
		return nil
	}
	s.jrnl.RunID = id
	for _, j := range split(s.jrnl) {
		if err := WriteJournal(s.files[j.Devices[0].Index], j); err != nil {
			return err
		}
	}
	return nil
}

// Restored says what Restore put back: "power limit 400 W on GPU 0, 1;
// SM clocks unlocked on GPU 0, 1".
func (s *Session) Restored() string {
	if s == nil {
		return ""
	}
	var order []string
	on := map[string][]string{}
	for _, c := range s.changes {
		what := "power limit " + formatW(c.previous) + " W"
		if c.lock != nil {
			what = c.lock.Name + " unlocked"
		}
		if _, seen := on[what]; !seen {
			order = append(order, what)
		}
		on[what] = append(on[what], fmt.Sprint(c.dev.Index))
	}
	parts := make([]string, len(order))
	for i, what := range order {
		parts[i] = what + " on GPU " + strings.Join(on[what], ", ")
	}
	return strings.Join(parts, "; ")
}

func restorePower(ctl Controller, index int, w float64) error {
	if err := ctl.SetPowerLimit(index, w); err != nil {
		return fmt.Errorf("GPU %d: restore power limit %s W: %w", index, formatW(w), err)
	}
	got, err := ctl.PowerLimit(index)
	if err != nil {
		return fmt.Errorf("GPU %d: read the restored power limit back: %w", index, err)
	}
	if math.Abs(got-w) > readBackTolerance {
		return fmt.Errorf("GPU %d: restored power limit reads back %s W, not %s W", index, formatW(got), formatW(w))
	}
	return nil
}

// StartMonitor reads every device's clock and clock-event reasons every
// interval, stamped with clock (the run clock), until StopMonitor or
// Restore.
func (s *Session) StartMonitor(ctx context.Context, clock func() float64, every time.Duration) {
	if s == nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.sampleOnce(clock())
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	s.mu.Lock()
	s.stop = func() { cancel(); <-done }
	s.mu.Unlock()
}

// StopMonitor stops the monitor (none running: nothing).
func (s *Session) StopMonitor() {
	if s == nil {
		return
	}
	s.mu.Lock()
	stop := s.stop
	s.stop = nil
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (s *Session) sampleOnce(t float64) {
	per := make([]Sample, len(s.rec.Devices))
	for k, d := range s.rec.Devices {
		smp, err := s.ctl.Sample(d.Index)
		if err != nil {
			smp = Sample{SMClockMHz: -1}
		}
		per[k] = smp
	}
	s.mu.Lock()
	s.samples = append(s.samples, timedSample{t: t, per: per})
	s.mu.Unlock()
}

// SummariseFormal records, per device, what the clock did between start
// and end (the formal stage): the share of readings with the software
// power cap active, the mean SM clock and the other reasons. A power
// limit that never bound gets a note; one whose binding is unknown (the
// clock-event reasons not read) gets a note saying so, never that it did
// not bind.
func (s *Session) SummariseFormal(start, end float64) {
	if s == nil {
		return
	}
	s.StopMonitor()
	s.mu.Lock()
	defer s.mu.Unlock()
	var never, unknown []string
	for k := range s.rec.Devices {
		b := summarise(s.samples, k, start, end)
		d := &s.rec.Devices[k]
		d.Formal = b
		if d.PowerLimitAskedW <= 0 || b.Samples == 0 {
			continue
		}
		switch {
		case b.CapBound == nil:
			unknown = append(unknown, fmt.Sprintf("%d (%d of %d readings)", d.Index, b.ReasonsUnread, b.Samples))
		case !*b.CapBound:
			never = append(never, fmt.Sprint(d.Index))
		}
	}
	if len(never) > 0 {
		s.rec.Notes = append(s.rec.Notes, fmt.Sprintf("the power limit never bound in the formal stage on GPU %s: the device drew less than its limit, so this run measures no effect of the cap", strings.Join(never, ", ")))
	}
	if len(unknown) > 0 {
		s.rec.Notes = append(s.rec.Notes, fmt.Sprintf("whether the power limit bound in the formal stage is unknown on GPU %s: the driver did not report the clock-event reasons of those readings", strings.Join(unknown, ", ")))
	}
}

func summarise(samples []timedSample, k int, start, end float64) *record.GPUSettingsBound {
	b := &record.GPUSettingsBound{}
	var sumClock float64
	var clocks, capped int
	other := map[string]int{}
	for _, ts := range samples {
		if ts.t < start || ts.t > end {
			continue
		}
		smp := ts.per[k]
		if smp.SMClockMHz < 0 {
			continue
		}
		b.Samples++
		if smp.SMClockMHz > 0 {
			sumClock += smp.SMClockMHz
			clocks++
		}
		if smp.ReasonsUnread {
			b.ReasonsUnread++
			continue
		}
		if smp.PowerCap {
			capped++
		}
		for _, r := range smp.Other {
			other[r]++
		}
	}
	if clocks > 0 {
		b.MeanSMClockMHz = sumClock / float64(clocks)
	}
	read := b.Samples - b.ReasonsUnread
	if read == 0 {
		return b
	}
	share := float64(capped) / float64(read)
	b.PowerCapShare = &share
	if bound := capped > 0; bound || b.ReasonsUnread == 0 {
		b.CapBound = &bound
	}
	if len(other) > 0 {
		b.OtherReasons = map[string]float64{}
		for r, n := range other {
			b.OtherReasons[r] = float64(n) / float64(read)
		}
	}
	return b
}

// RestoreJournals applies and clears every journal in js with ctl: every
// device found (by UUID, else index) gets its previous values back. A
// device no longer present is reported and its journal kept, as is one
// whose restore failed; a journal is removed once all its devices are
// back. The report says what was done.
func RestoreJournals(ctl Controller, js Journals) (string, error) {
	found, err := js.Find()
	if err != nil {
		return "", err
	}
	if len(found) == 0 {
		return "no GPU settings to restore (no journal in " + js.String() + ")", nil
	}
	devs, err := ctl.Devices()
	if err != nil {
		return "", fmt.Errorf("read the GPUs: %w", err)
	}
	var lines []string
	var errs []error
	left := 0
	for _, f := range found {
		if ctl.Volatile() || f.Journal.Controller != ctl.Name() {
			errs = append(errs, fmt.Errorf("the journal %s was written by the %q controller, not %q", f.Path, f.Journal.Controller, ctl.Name()))
			left++
			continue
		}
		l, n, derrs := restoreDevices(ctl, devs, f.Journal)
		lines, errs = append(lines, l...), append(errs, derrs...)
		if n > 0 {
			left += n
			continue
		}
		if err := RemoveJournal(f.Path); err != nil {
			errs = append(errs, err)
		} else {
			lines = append(lines, "journal "+f.Path+" cleared")
		}
	}
	if left > 0 {
		errs = append(errs, fmt.Errorf("%d GPU(s) not restored: their journals in %s keep them", left, js))
	}
	return strings.Join(lines, "\n"), errors.Join(errs...)
}

// restoreDevices restores j's devices; left counts those not restored.
func restoreDevices(ctl Controller, devs []DeviceState, j *Journal) (lines []string, left int, errs []error) {
	for _, jd := range j.Devices {
		d, ok := findDevice(devs, jd)
		if !ok {
			left++
			lines = append(lines, fmt.Sprintf("GPU %d (%s): not present: kept in the journal", jd.Index, orUnknown(jd.UUID)))
			continue
		}
		var derrs []error
		for _, st := range record.GPUSettingsTable() {
			if st.Reset != nil && *st.Reset(&jd.GPUSettingResets) {
				if err := unlock(ctl, d.Index, st); err != nil {
					derrs = append(derrs, err)
				}
			}
		}
		if jd.PreviousPowerLimitW > 0 {
			if err := restorePower(ctl, d.Index, jd.PreviousPowerLimitW); err != nil {
				derrs = append(derrs, err)
			}
		}
		if len(derrs) > 0 {
			left++
			errs = append(errs, grant(errors.Join(derrs...)))
			continue
		}
		lines = append(lines, fmt.Sprintf("GPU %d (%s): restored%s", d.Index, orUnknown(jd.UUID), restoredWhat(jd)))
	}
	return lines, left, errs
}

func findDevice(devs []DeviceState, jd JournalDevice) (DeviceState, bool) {
	for _, d := range devs {
		if jd.UUID != "" && d.UUID == jd.UUID || jd.UUID == "" && d.Index == jd.Index {
			return d, true
		}
	}
	return DeviceState{}, false
}

func restoredWhat(jd JournalDevice) string {
	var parts []string
	if jd.PreviousPowerLimitW > 0 {
		parts = append(parts, "power limit "+formatW(jd.PreviousPowerLimitW)+" W")
	}
	for _, st := range record.GPUSettingsTable() {
		if st.Reset != nil && *st.Reset(&jd.GPUSettingResets) {
			parts = append(parts, st.Name+" unlocked")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}

func orUnknown(s string) string {
	if s == "" {
		return "no UUID"
	}
	return s
}

// Restore is `joulebench restore`: the journals in their places
// (DefaultJournals of getenv) applied and cleared with the controller
// open returns (opened only when there is a journal, closed after), its
// report written to w.
func Restore(w io.Writer, getenv func(string) string, open func() (Controller, error)) error {
	js, err := DefaultJournals(getenv)
	if err != nil {
		return err
	}
	found, err := js.Find()
	if err != nil {
		return err
	}
	if len(found) == 0 {
		fmt.Fprintf(w, "no GPU settings to restore (no journal in %s)\n", js)
		return nil
	}
	ctl, err := open()
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer ctl.Close()
	report, err := RestoreJournals(ctl, js)
	if report != "" {
		fmt.Fprintln(w, report)
	}
	return err
}
