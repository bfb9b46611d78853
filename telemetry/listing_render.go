package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/joulebench/joulebench/internal/exitcode"
)

// Failed reports whether the listing has no device though measuring was
// wanted (not declined): `joulebench devices` then exits with a failure.
func (l Listing) Failed() bool { return len(l.Devices) == 0 && !l.Declined }

// WriteJSON writes the listing as indented JSON; with no device,
// "devices" is null.
func (l Listing) WriteJSON(w io.Writer) error {
	if len(l.Devices) == 0 {
		l.Devices = nil
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(l); err != nil {
		return fmt.Errorf("telemetry: listing: %w", err)
	}
	return nil
}

// WriteTable writes the listing as a table: a head naming the source, one
// row per device (ID, domain, name with its architecture, UUID, energy
// method, power field, memory, throttle reasons; "-" for what is unknown),
// then each device's energy note. With no device: the detail, and why
// (unless declined).
func (l Listing) WriteTable(w io.Writer) error {
	if len(l.Devices) == 0 {
		if l.Declined {
			_, err := fmt.Fprintln(w, l.Detail)
			return err
		}
		var b strings.Builder
		b.WriteString(l.Detail + ".\n")
		if len(l.Why) > 0 {
			b.WriteString("Why:\n")
			for _, y := range l.Why {
				b.WriteString("  - " + y + "\n")
			}
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	head := "source: " + l.Source
	if l.Detail != "" {
		head += " (" + l.Detail + ")"
	}
	fmt.Fprintln(w, head)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tDOMAIN\tNAME\tUUID\tENERGY\tPOWER FIELD\tMEMORY\tTHROTTLE REASONS")
	for _, d := range l.Devices {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, orDash(d.Domain), orDash(d.tableName()), orDash(d.UUID),
			d.tableEnergy(), orDash(d.PowerField), d.Memory, d.tableClockEvents())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, d := range l.Devices {
		if d.EnergyNote != "" {
			if _, err := fmt.Fprintf(w, "%s: %s\n", d.ID, d.EnergyNote); err != nil {
				return err
			}
		}
	}
	return nil
}

// tableEnergy is the ENERGY column: counter, else integrated power.
func (d DeviceInfo) tableEnergy() string {
	if d.Energy != "counter" {
		return "power only (integrated)"
	}
	return "counter"
}

// tableName is the NAME column: the name, its architecture when known,
// [SIMULATED] for a simulated device.
func (d DeviceInfo) tableName() string {
	name := d.Name
	if d.Architecture != "" && d.Architecture != "unknown" {
		name += " (" + d.Architecture + ")"
	}
	if d.Simulated {
		name += " [SIMULATED]"
	}
	return name
}

// tableClockEvents is the THROTTLE REASONS column: yes, no, or - (unknown).
func (d DeviceInfo) tableClockEvents() string {
	switch {
	case d.ClockEvents == nil:
		return "-"
	case *d.ClockEvents:
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// ListDevices is `joulebench devices`: it probes the one source sel names
// and writes its listing to w as format (table or json). failed says the
// listing has no device to measure (it says why). A format other than
// those and more than one source are invalid input; a source that cannot
// be probed, a failure.
func (r *Registry) ListDevices(ctx context.Context, w io.Writer, format string, sel Selection, v Values, env Env) (failed bool, err error) {
	if format != "table" && format != "json" {
		return false, exitcode.Invalidf("--format %q: want table or json", format)
	}
	if names := sel.Names(); len(names) > 1 {
		return false, exitcode.Invalidf("devices lists one power source at a time: give one --telemetry (not %s)", strings.Join(names, " + "))
	}
	l, err := r.Probe(ctx, sel, v, env)
	if err != nil {
		return false, exitcode.With(exitcode.Failure, err)
	}
	write := l.WriteTable
	if format == "json" {
		write = l.WriteJSON
	}
	if err := write(w); err != nil {
		return false, err
	}
	return l.Failed(), nil
}
