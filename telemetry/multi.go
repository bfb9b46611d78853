package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/joulebench/joulebench/archive"
)

// Multi reads several sources side by side (--telemetry sim --telemetry
// rapl): its devices are theirs in the order given, and each Read reads all
// of them at once, one goroutine per source, so a slow source (a Redfish
// BMC) does not delay the others' timestamps. Device IDs must be unique
// across the sources. A read error of any source is the Read's error (the
// sampler ends, as with one source). The optional abilities (anomalies,
// throttling, the driver version) are those of the sources that have them.
type Multi struct {
	srcs []Source
}

var (
	_ Source           = (*Multi)(nil)
	_ AnomalyReporter  = (*Multi)(nil)
	_ ThrottleReporter = (*Multi)(nil)
	_ DriverReporter   = (*Multi)(nil)
)

// NewMulti combines sources; with one source, use it directly.
func NewMulti(srcs ...Source) *Multi { return &Multi{srcs: srcs} }

// Sources returns the combined sources.
func (m *Multi) Sources() []Source { return m.srcs }

// Name is the sources' names joined by "+", e.g. "sim+rapl".
func (m *Multi) Name() string {
	names := make([]string, len(m.srcs))
	for i, s := range m.srcs {
		names[i] = s.Name()
	}
	return strings.Join(names, "+")
}

// Devices lists every source's devices; two devices with one ID are an
// error naming both sources.
func (m *Multi) Devices(ctx context.Context) ([]archive.Device, error) {
	var out []archive.Device
	owner := map[string]string{}
	for _, s := range m.srcs {
		devs, err := s.Devices(ctx)
		if err != nil {
			return nil, fmt.Errorf("telemetry %s: %w", s.Name(), err)
		}
		for _, d := range devs {
			if o, dup := owner[d.ID]; dup {
				return nil, fmt.Errorf("telemetry: device %s is named by both %s and %s: device IDs must be unique across sources", d.ID, o, s.Name())
			}
			owner[d.ID] = s.Name()
		}
		out = append(out, devs...)
	}
	return out, nil
}

// Read reads every source concurrently and returns their readings in the
// sources' order.
func (m *Multi) Read(ctx context.Context) ([]Reading, error) {
	res := make([][]Reading, len(m.srcs))
	errs := make([]error, len(m.srcs))
	var wg sync.WaitGroup
	for i, s := range m.srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs, err := s.Read(ctx)
			if err != nil {
				err = fmt.Errorf("%s: %w", s.Name(), err)
			}
			res[i], errs[i] = rs, err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []Reading
	for _, rs := range res {
		out = append(out, rs...)
	}
	return out, nil
}

// Close closes every source and returns their errors joined.
func (m *Multi) Close() error {
	var errs []error
	for _, s := range m.srcs {
		if err := s.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// Anomalies concatenates the anomalies of the sources that report them.
func (m *Multi) Anomalies() []Anomaly {
	var out []Anomaly
	for _, s := range m.srcs {
		if ar, ok := s.(AnomalyReporter); ok {
			out = append(out, ar.Anomalies()...)
		}
	}
	return out
}

// Throttled is true when any source that can tell saw throttling; the
// reasons are joined.
func (m *Multi) Throttled() (bool, string) {
	any := false
	var why []string
	for _, s := range m.srcs {
		if tr, ok := s.(ThrottleReporter); ok {
			if t, r := tr.Throttled(); t {
				any = true
				why = append(why, r)
			}
		}
	}
	return any, strings.Join(why, "; ")
}

// Driver is the first driver version a source knows.
func (m *Multi) Driver() string {
	for _, s := range m.srcs {
		if dr, ok := s.(DriverReporter); ok {
			if v := dr.Driver(); v != "" {
				return v
			}
		}
	}
	return ""
}
