// Package rapl is the CPU and DRAM power source: Intel's (and AMD Zen's,
// which the same kernel driver exposes) Running Average Power Limit energy
// counters, read from Linux's powercap sysfs:
//
//	/sys/class/powercap/intel-rapl:0/name                "package-0"
//	/sys/class/powercap/intel-rapl:0/energy_uj           cumulative µJ
//	/sys/class/powercap/intel-rapl:0/max_energy_range_uj where energy_uj wraps to 0
//	/sys/class/powercap/intel-rapl:0:1/name              "dram"
//
// A package zone ("package-N") becomes device cpuN (domain cpu), a dram
// subzone of package N device dramN (domain dram). The core and uncore
// subzones are parts of their package and are not read (they would count
// the same energy twice), nor is psys (the whole platform on some laptops)
// or intel-rapl-mmio (the same package through another interface).
//
// Each device is a counter: energy_uj differences, a wrap at
// max_energy_range_uj added back, summed into a counter that starts at 0
// when the source opens; power is the energy since the previous read over
// its time. A read longer after the previous one than the counter takes to
// wrap at MaxZoneW is refused (a gap): how many wraps it hides cannot be
// known. Devices are fixed when the source opens: a zone that appears
// later is logged once and not read (the power audit expects every device
// from the start of each stage).
//
// energy_uj is readable by root only on current kernels (since the
// PLATYPUS side channel, CVE-2020-8694); Open says what to do when it is
// not.
package rapl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// DefaultRoot is the powercap class directory.
const DefaultRoot = "/sys/class/powercap"

// zonePrefix names the RAPL zones in the powercap class (Intel and AMD).
const zonePrefix = "intel-rapl:"

// ErrUnavailable is wrapped by errors that mean "no RAPL zone here".
var ErrUnavailable = errors.New("rapl unavailable")

// Options configure a source.
type Options struct {
	// Root is the powercap class directory (default DefaultRoot; tests and
	// --rapl-root give a fake tree).
	Root string
	// Clock stamps readings (nil: telemetry.WallClock).
	Clock telemetry.Clock
	// Logf, when not nil, gets one line per notable event.
	Logf func(string)
}

// zone is one RAPL zone read as a device.
type zone struct {
	dev      record.Device
	dir      string  // zone directory
	rangeUJ  float64 // max_energy_range_uj: energy_uj wraps to 0 past it
	lastUJ   float64 // energy_uj at the previous read
	lastT    float64 // time of the previous read
	counterJ float64 // cumulative energy since Open
	// read: a reading was returned; refused counts the intervals in a
	// row too long to count (tooLong), and warned says one was logged.
	read    bool
	refused int
	warned  bool
	// openT is the time of the read at Open.
	openT float64
}

// MaxZoneW bounds the power of one RAPL zone, package or DRAM: no CPU
// socket draws 1 kW. Over an interval longer than max_energy_range_uj
// takes at this power, the counter may have wrapped more than once, and
// how often cannot be known.
const MaxZoneW = 1000.0

// countableS is the longest interval between two reads of z whose wraps
// can be counted (at most one at MaxZoneW), in seconds.
func (z *zone) countableS() float64 { return z.rangeUJ / 1e6 / MaxZoneW }

// Source reads the RAPL zones of one machine.
type Source struct {
	root  string
	clock telemetry.Clock
	logf  func(string)

	mu     sync.Mutex
	zones  []*zone
	warned map[string]bool // zones seen appearing after Open
	closed bool
}

var _ telemetry.Source = (*Source)(nil)

// Open finds the package and dram zones under opts.Root and reads each
// counter once (the start of its energy counter).
func Open(opts Options) (*Source, error) {
	s := &Source{root: opts.Root, clock: opts.Clock, logf: opts.Logf, warned: map[string]bool{}}
	if s.root == "" {
		s.root = DefaultRoot
	}
	if s.clock == nil {
		s.clock = telemetry.WallClock
	}
	dirs, err := s.zoneDirs()
	if err != nil {
		return nil, err
	}
	for _, dir := range dirs {
		z, err := s.openZone(dir)
		if err != nil {
			return nil, err
		}
		if z != nil {
			s.zones = append(s.zones, z)
		}
	}
	if len(s.zones) == 0 {
		return nil, fmt.Errorf("rapl: no package or dram zone under %s (%d RAPL zones): %w", s.root, len(dirs), ErrUnavailable)
	}
	return s, nil
}

// zoneDirs lists the RAPL zone directories, sorted so that a package
// comes before its subzones.
func (s *Source) zoneDirs() ([]string, error) {
	ents, err := os.ReadDir(s.root)
	if err != nil {
		return nil, fmt.Errorf("rapl: %w: %w", err, ErrUnavailable)
	}
	var dirs []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), zonePrefix) {
			dirs = append(dirs, filepath.Join(s.root, e.Name()))
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("rapl: no %s* zone under %s (not Linux, no RAPL, or the intel_rapl_msr module is not loaded): %w", zonePrefix, s.root, ErrUnavailable)
	}
	sort.Strings(dirs)
	return dirs, nil
}

// openZone returns the device of a package or dram zone, nil for the zones
// not read (core, uncore, psys).
func (s *Source) openZone(dir string) (*zone, error) {
	base := filepath.Base(dir)
	parts := strings.Split(strings.TrimPrefix(base, zonePrefix), ":")
	name, err := readString(filepath.Join(dir, "name"))
	if err != nil {
		return nil, fmt.Errorf("rapl: %w", err)
	}
	var dev record.Device
	switch {
	case len(parts) == 1 && strings.HasPrefix(name, "package-"):
		dev = record.Device{ID: "cpu" + strings.TrimPrefix(name, "package-"), Domain: record.DomainCPU}
	case len(parts) == 2 && name == "dram":
		dev = record.Device{ID: "dram" + parts[0], Domain: record.DomainDRAM}
	default:
		return nil, nil
	}
	dev.Name = "RAPL " + name + " (" + base + ")"
	dev.Method = "counter"
	dev.PowerField = "energy_uj"
	z := &zone{dev: dev, dir: dir}
	if z.rangeUJ, err = readUint(filepath.Join(dir, "max_energy_range_uj")); err != nil {
		return nil, err
	}
	if z.lastUJ, err = readUint(filepath.Join(dir, "energy_uj")); err != nil {
		return nil, err
	}
	z.lastT = s.clock()
	z.openT = z.lastT
	return z, nil
}

// Name returns "rapl".
func (s *Source) Name() string { return Name }

// Devices returns the package (cpuN) and dram (dramN) devices.
func (s *Source) Devices(context.Context) ([]record.Device, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]record.Device, len(s.zones))
	for i, z := range s.zones {
		out[i] = z.dev
	}
	return out, nil
}

// Read reads every zone's counter: the energy since the previous read
// (a wrap at max_energy_range_uj added back) goes into the device's
// counter, and over the time since then gives its power.
func (s *Source) Read(ctx context.Context) ([]telemetry.Reading, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, telemetry.ErrStopped
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.noteNewZones()
	out := make([]telemetry.Reading, 0, len(s.zones))
	for _, z := range s.zones {
		uj, err := readUint(filepath.Join(z.dir, "energy_uj"))
		if err != nil {
			return nil, err
		}
		t := s.clock()
		dt := t - z.lastT
		if dt > z.countableS() {
			// The counter may have wrapped several times: the energy
			// of this interval is unknown, and the reading is refused
			// (a gap). The next interval starts here.
			prevT := z.lastT
			z.lastUJ, z.lastT = uj, t
			if err := s.tooLong(z, dt, prevT); err != nil {
				return nil, err
			}
			continue
		}
		z.read, z.refused = true, 0
		d := Delta(z.lastUJ, uj, z.rangeUJ)
		w := 0.0
		if dt > 0 {
			w = d / 1e6 / dt
		}
		z.counterJ += d / 1e6
		z.lastUJ, z.lastT = uj, t
		out = append(out, telemetry.Reading{Device: z.dev.ID, PowerW: w, EnergyJ: z.counterJ, HasEnergy: true, MemUsedBytes: -1, T: t})
	}
	return out, nil
}

// tooLong handles a read of z dt seconds after the previous one (at
// prevT), too long for its wraps to be counted. The first read after Open
// only starts the counting (whatever time the run took to start sampling).
// Later ones are refused and logged once; a zone with no reading yet whose
// intervals are all too long (telemetry.RefusedRun in a row) is an error:
// the sampling interval is too long for it.
func (s *Source) tooLong(z *zone, dt, prevT float64) error {
	if prevT == z.openT {
		return nil
	}
	z.refused++
	limit := z.countableS()
	if !z.read && z.refused >= telemetry.RefusedRun {
		return fmt.Errorf("rapl: %s: its counter wraps at max_energy_range_uj %.0f µJ, which takes %s s at up to %.0f W, less than the %s s between reads: how many times it wrapped cannot be known; sample more often than every %s s (a monitor interval below it), or leave out --telemetry rapl",
			z.dev.ID, z.rangeUJ, fmtS(limit), MaxZoneW, fmtS(dt), fmtS(limit))
	}
	if !z.warned && s.logf != nil {
		z.warned = true
		s.logf(fmt.Sprintf("rapl: %s: %s s since the previous read, longer than the %s s its counter (max_energy_range_uj %.0f µJ) takes to wrap at up to %.0f W: it may have wrapped more than once, so the reading is refused (a gap in the samples); further ones are not logged",
			z.dev.ID, fmtS(dt), fmtS(limit), z.rangeUJ, MaxZoneW))
	}
	return nil
}

func fmtS(s float64) string { return strconv.FormatFloat(s, 'g', 4, 64) }

// noteNewZones logs, once each, a package or dram zone that appeared after
// Open: it is not measured.
func (s *Source) noteNewZones() {
	if s.logf == nil {
		return
	}
	dirs, err := s.zoneDirs()
	if err != nil {
		return
	}
	known := map[string]bool{}
	for _, z := range s.zones {
		known[z.dir] = true
	}
	for _, dir := range dirs {
		if known[dir] || s.warned[dir] {
			continue
		}
		s.warned[dir] = true
		if name, err := readString(filepath.Join(dir, "name")); err == nil && (strings.HasPrefix(name, "package-") || name == "dram") {
			s.logf(fmt.Sprintf("rapl: zone %s (%s) appeared after sampling started: not measured in this run", filepath.Base(dir), name))
		}
	}
}

// Delta is the energy in µJ from counter value prev to cur of a counter
// that wraps to 0 past rangeUJ (max_energy_range_uj): cur - prev, plus
// rangeUJ when the counter wrapped (cur < prev). One wrap at most: at
// 1 kW a 2^32 µJ range lasts 4.3 s, the common 2^38-ish ranges minutes.
func Delta(prev, cur, rangeUJ float64) float64 {
	if cur >= prev {
		return cur - prev
	}
	return cur + rangeUJ - prev
}

// Close stops the source.
func (s *Source) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

func readString(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", explain(path, err)
	}
	return strings.TrimSpace(string(b)), nil
}

func readUint(path string) (float64, error) {
	s, err := readString(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("rapl: %s: %q is not a counter value: %w", path, s, err)
	}
	return float64(v), nil
}

// explain turns a permission error into what to do about it.
func explain(path string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("rapl: %s is not readable: RAPL energy counters are root-only on current kernels (CVE-2020-8694); "+
			"run joulebench as root, or let this user read them (e.g. sudo chmod o+r %s, or a udev rule / systemd-tmpfiles entry that does it at boot), "+
			"or leave out --telemetry rapl: %w", path, filepath.Join(filepath.Dir(filepath.Dir(path)), zonePrefix+"*", "energy_uj"), err)
	}
	return fmt.Errorf("rapl: %w", err)
}
