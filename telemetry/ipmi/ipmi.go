// Package ipmi is a whole-node power source: the BMC's DCMI power reading,
// read by running
//
//	ipmitool [ARGS] dcmi power reading
//
// once per sample (in-band through /dev/ipmi0 with no ARGS, or out of band
// with e.g. -I lanplus -H bmc1 -U admin -E, the password in IPMI_PASSWORD:
// a -P password in ARGS is refused, so it is never archived or logged).
// The reading is the "Instantaneous power reading" in W of the whole node;
// a BMC whose power reading state is not "activated" gives no reading.
// One device, ipmi0, domain node, method power.
package ipmi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// DefaultBinary is the ipmitool run when Options.Binary is empty.
const DefaultBinary = "ipmitool"

// DefaultTimeout bounds one ipmitool run (a BMC over the LAN is slow).
const DefaultTimeout = 10 * time.Second

// Options configure a source.
type Options struct {
	// Binary is the ipmitool executable (default DefaultBinary).
	Binary string
	// Args go before "dcmi power reading" (interface, host, user, -E).
	Args []string
	// Timeout bounds one run (default DefaultTimeout).
	Timeout time.Duration
}

// Reading is what `ipmitool dcmi power reading` printed.
type Reading struct {
	// InstantW is the instantaneous power reading in W.
	InstantW float64
	// MinW, MaxW and AvgW are over the BMC's sampling period (0 when
	// absent).
	MinW, MaxW, AvgW float64
	// Active is true when the power reading state is "activated".
	Active bool
}

// Parse reads the output of `ipmitool dcmi power reading`. A line that
// should hold watts but does not is an error naming its line.
func Parse(out []byte) (Reading, error) {
	var r Reading
	haveInstant, haveState := false, false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for line := 1; sc.Scan(); line++ {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		var dst *float64
		switch key {
		case "Instantaneous power reading":
			dst, haveInstant = &r.InstantW, true
		case "Minimum during sampling period":
			dst = &r.MinW
		case "Maximum during sampling period":
			dst = &r.MaxW
		case "Average power reading over sample period":
			dst = &r.AvgW
		case "Power reading state is":
			r.Active, haveState = val == "activated", true
			continue
		default:
			continue
		}
		num, unit, _ := strings.Cut(val, " ")
		w, err := strconv.ParseFloat(num, 64)
		if err != nil || strings.TrimSpace(unit) != "Watts" || w < 0 {
			return Reading{}, fmt.Errorf("line %d: %s: %q is not a number of Watts", line, key, val)
		}
		*dst = w
	}
	if !haveInstant {
		return Reading{}, errors.New(`no "Instantaneous power reading" line: not the output of ipmitool dcmi power reading`)
	}
	if !haveState {
		// Older ipmitool versions do not print the state.
		r.Active = true
	}
	return r, nil
}

// Source runs ipmitool for each reading.
type Source struct {
	opts Options
	host string
}

var _ telemetry.Source = (*Source)(nil)

// Open checks the arguments and takes one reading, so that a missing
// ipmitool, a BMC without DCMI power or a deactivated reading fail at
// the start.
func Open(ctx context.Context, opts Options) (*Source, error) {
	if opts.Binary == "" {
		opts.Binary = DefaultBinary
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	s := &Source{opts: opts, host: "local"}
	for i, a := range opts.Args {
		switch {
		case a == "-P" || strings.HasPrefix(a, "-P"):
			return nil, errors.New("ipmi: a password given with -P would be archived and logged: put it in IPMI_PASSWORD and pass -E")
		case a == "-H" && i+1 < len(opts.Args):
			s.host = opts.Args[i+1]
		}
	}
	if _, err := s.reading(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Name returns "ipmi".
func (s *Source) Name() string { return Name }

// Devices returns the node.
func (s *Source) Devices(context.Context) ([]record.Device, error) {
	return []record.Device{{ID: "ipmi0", Name: "IPMI DCMI power reading (" + s.host + ")", Host: s.host,
		Method: "power", PowerField: "dcmi instantaneous power reading", Domain: record.DomainNode}}, nil
}

// Read runs ipmitool once.
func (s *Source) Read(ctx context.Context) ([]telemetry.Reading, error) {
	w, err := s.reading(ctx)
	if err != nil {
		return nil, err
	}
	return []telemetry.Reading{{Device: "ipmi0", PowerW: w, MemUsedBytes: -1}}, nil
}

func (s *Source) reading(ctx context.Context) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	args := append(append([]string{}, s.opts.Args...), "dcmi", "power", "reading")
	cmd := exec.CommandContext(ctx, s.opts.Binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return 0, fmt.Errorf("ipmi: %s not found (install ipmitool, or give its path with --ipmitool): %w", s.opts.Binary, err)
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("ipmi: %s dcmi power reading: no answer within %s: %w", s.opts.Binary, s.opts.Timeout, ctx.Err())
		}
		return 0, fmt.Errorf("ipmi: %s dcmi power reading: %w: %s", s.opts.Binary, err, lastLine(stderr.String()))
	}
	r, err := Parse(stdout.Bytes())
	if err != nil {
		return 0, fmt.Errorf("ipmi: %s dcmi power reading output: %w", s.opts.Binary, err)
	}
	if !r.Active {
		return 0, errors.New("ipmi: the BMC's DCMI power reading state is deactivated: its readings are not valid (enable power monitoring in the BMC's settings, or use --telemetry redfish)")
	}
	return r.InstantW, nil
}

// lastLine is the last non-empty line of s, for an error message.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Close does nothing: nothing is left running between readings.
func (s *Source) Close() error { return nil }
