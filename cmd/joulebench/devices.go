package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/telemetry"
)

// devicesCmd is `joulebench devices`: the GPUs a run would measure and what
// each can measure, or why there are none.
func (a *app) devicesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "devices",
		Short: "List the GPUs a run would measure and what each can measure",
		Long: `devices opens the power source that --telemetry chooses (auto: NVML when an
NVIDIA GPU is there, powermetrics on macOS, the endpoints of --dcgm-url) and
lists its devices: name, UUID, whether energy comes from the device's
cumulative counter or is integrated from power samples, which power field is
read, and whether memory use is known. With no source it says why.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.devices(cmd.Context())
		},
	}
	f := cmd.Flags()
	telemetryFlags(f)
	f.String("format", "table", "output: table or json")
	return cmd
}

// devicesReport is the devices command's output (json).
type devicesReport struct {
	Source  string        `json:"source"`
	Detail  string        `json:"detail,omitempty"`
	Devices []deviceEntry `json:"devices"`
	// Why says why there is no device (auto found no source).
	Why []string `json:"why,omitempty"`
	// declined: nothing is measured by choice (--telemetry none), so no
	// device is no failure.
	declined bool
}

type deviceEntry struct {
	ID string `json:"id"`
	// Domain is what the device's power covers: gpu, cpu, dram, node.
	Domain       string `json:"domain"`
	Name         string `json:"name,omitempty"`
	UUID         string `json:"uuid,omitempty"`
	Host         string `json:"host,omitempty"`
	Architecture string `json:"architecture,omitempty"`
	// Energy is "counter" or "power".
	Energy     string `json:"energy"`
	EnergyNote string `json:"energy_note,omitempty"`
	PowerField string `json:"power_field,omitempty"`
	// Memory is "yes", "no" or the total ("80 GiB").
	Memory      string `json:"memory"`
	ClockEvents *bool  `json:"clock_events,omitempty"`
	Simulated   bool   `json:"simulated,omitempty"`
}

func (a *app) devices(ctx context.Context) error {
	format := a.v.GetString("format")
	if format != "table" && format != "json" {
		return invalidf("--format %q: want table or json", format)
	}
	o, err := a.telemetryOptions()
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	rep, err := a.devicesReport(ctx, o)
	if err != nil {
		return err
	}
	if format == "json" {
		enc := json.NewEncoder(a.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		writeDevices(a.out, rep)
	}
	if len(rep.Devices) == 0 && !rep.declined {
		return &exitError{code: exitFailure, err: errors.New("no GPU to measure"), silent: true}
	}
	return nil
}

func (a *app) devicesReport(ctx context.Context, o telemetryOpts) (devicesReport, error) {
	if names := o.sel.Names(); len(names) > 1 {
		return devicesReport{}, invalidf("devices lists one power source at a time: give one --telemetry (not %s)", strings.Join(names, " + "))
	}
	l, err := telemetrySources().Probe(ctx, o.sel, a.v, telemetry.Env{Logf: a.telemetryLogf})
	if err != nil {
		return devicesReport{}, withCode(exitFailure, err)
	}
	rep := devicesReport{Source: l.Source, Detail: l.Detail, Why: l.Why, declined: l.Declined}
	for _, d := range l.Devices {
		rep.Devices = append(rep.Devices, deviceEntry(d))
	}
	return rep, nil
}

func writeDevices(w io.Writer, rep devicesReport) {
	if len(rep.Devices) == 0 {
		if rep.declined {
			fmt.Fprintln(w, rep.Detail)
			return
		}
		fmt.Fprintln(w, rep.Detail+".")
		if len(rep.Why) > 0 {
			fmt.Fprintln(w, "Why:")
			for _, y := range rep.Why {
				fmt.Fprintln(w, "  - "+y)
			}
		}
		return
	}
	head := "source: " + rep.Source
	if rep.Detail != "" {
		head += " (" + rep.Detail + ")"
	}
	fmt.Fprintln(w, head)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tDOMAIN\tNAME\tUUID\tENERGY\tPOWER FIELD\tMEMORY\tTHROTTLE REASONS")
	for _, d := range rep.Devices {
		energy := "counter"
		if d.Energy != "counter" {
			energy = "power only (integrated)"
		}
		name := d.Name
		if d.Architecture != "" && d.Architecture != "unknown" {
			name += " (" + d.Architecture + ")"
		}
		if d.Simulated {
			name += " [SIMULATED]"
		}
		ce := "-"
		if d.ClockEvents != nil {
			ce = map[bool]string{true: "yes", false: "no"}[*d.ClockEvents]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, orDash(d.Domain), orDash(name), orDash(d.UUID), energy, orDash(d.PowerField), d.Memory, ce)
	}
	_ = tw.Flush()
	for _, d := range rep.Devices {
		if d.EnergyNote != "" {
			fmt.Fprintf(w, "%s: %s\n", d.ID, d.EnergyNote)
		}
	}
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
