package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/telemetry"
	nvmltel "github.com/joulebench/joulebench/telemetry/nvml"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
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
	if len(rep.Devices) == 0 && (rep.Source != telNone || len(rep.Why) > 0) {
		return &exitError{code: exitFailure, err: errors.New("no GPU to measure"), silent: true}
	}
	return nil
}

func (a *app) devicesReport(ctx context.Context, o telemetryOpts) (devicesReport, error) {
	logf := func(msg string) { a.log.Warn().Str("component", "telemetry").Msg(msg) }
	if len(o.choices) > 1 {
		return devicesReport{}, invalidf("devices lists one power source at a time: give one --telemetry (not %s)", strings.Join(o.choices, " + "))
	}
	switch o.choice {
	case telNone:
		return devicesReport{Source: telNone, Detail: "--telemetry none: nothing is measured"}, nil
	case telSim:
		src := simtel.New(simtel.DefaultConfig(), nil, nil)
		return genericReport(ctx, src, "the built-in simulator's GPUs (with --engine sim)")
	case telAuto:
		if len(o.dcgmURLs) == 0 && o.replay == "" {
			return a.autoDevices(ctx, o, logf)
		}
	}
	choice := o.choice
	if choice == telAuto {
		choice = telDCGM
		if o.replay != "" {
			choice = telReplay
		}
	}
	src, info, err := openTelemetry(choice, o, nil, logf)
	if err != nil {
		return devicesReport{}, withCode(exitFailure, err)
	}
	defer src.Close()
	if s, ok := src.(*nvmltel.Source); ok {
		return nvmlReport(s), nil
	}
	return genericReport(ctx, src, info.Note)
}

// autoDevices tries NVML, then powermetrics on macOS, and says why
// neither works.
func (a *app) autoDevices(ctx context.Context, o telemetryOpts, logf func(string)) (devicesReport, error) {
	var why []string
	src, _, err := openTelemetry(telNVML, o, nil, logf)
	switch {
	case err == nil:
		defer src.Close()
		return nvmlReport(src.(*nvmltel.Source)), nil
	case errors.Is(err, nvmltel.ErrUnavailable):
		why = append(why, err.Error())
	default:
		return devicesReport{}, withCode(exitFailure, err)
	}
	if runtime.GOOS == "darwin" {
		src, info, err := openTelemetry(telPowermetrics, o, nil, logf)
		if err == nil {
			defer src.Close()
			return genericReport(ctx, src, info.Note)
		}
		why = append(why, err.Error())
	} else {
		why = append(why, "powermetrics: macOS only (this is "+runtime.GOOS+")")
	}
	why = append(why, "dcgm: no --dcgm-url given (GPUs on other hosts: --dcgm-url http://HOST:9400/metrics)")
	return devicesReport{Source: telNone, Why: why,
		Detail: "no GPU telemetry on this machine: a run here has no energy metrics (--telemetry none), or use --engine sim for the simulator"}, nil
}

func nvmlReport(src *nvmltel.Source) devicesReport {
	inv := src.Inventory()
	detail := "driver " + orDash(inv.Driver)
	if inv.CUDA != "" {
		detail += ", CUDA " + inv.CUDA
	}
	if inv.NVML != "" {
		detail += ", NVML " + inv.NVML
	}
	rep := devicesReport{Source: telNVML, Detail: detail}
	for _, d := range inv.Devices {
		mem := "no"
		if d.Memory {
			mem = "yes"
			if d.MemTotalBytes > 0 {
				mem = fmt.Sprintf("%.0f GiB", float64(d.MemTotalBytes)/(1<<30))
			}
		}
		ce := d.ClockEvents
		rep.Devices = append(rep.Devices, deviceEntry{
			ID: d.ID, Domain: archive.DomainGPU, Name: d.Name, UUID: d.UUID, Architecture: d.Architecture,
			Energy: d.Method, EnergyNote: d.EnergyNote, PowerField: d.PowerField,
			Memory: mem, ClockEvents: &ce,
		})
	}
	return rep
}

// genericReport lists a source's devices; one reading says whether memory
// use is known.
func genericReport(ctx context.Context, src telemetry.Source, detail string) (devicesReport, error) {
	devs, err := src.Devices(ctx)
	if err != nil {
		return devicesReport{}, withCode(exitFailure, err)
	}
	mem := map[string]bool{}
	if rs, err := src.Read(ctx); err == nil {
		for _, r := range rs {
			mem[r.Device] = mem[r.Device] || r.MemUsedBytes >= 0
		}
	}
	rep := devicesReport{Source: src.Name(), Detail: detail}
	for _, d := range devs {
		rep.Devices = append(rep.Devices, entryOf(d, mem[d.ID]))
	}
	return rep, nil
}

func entryOf(d archive.Device, mem bool) deviceEntry {
	e := deviceEntry{ID: d.ID, Domain: d.DomainOrGPU(), Name: d.Name, UUID: d.UUID, Host: d.Host, Energy: d.Method, PowerField: d.PowerField, Memory: "no", Simulated: d.Simulated}
	if mem {
		e.Memory = "yes"
	}
	return e
}

func writeDevices(w io.Writer, rep devicesReport) {
	if len(rep.Devices) == 0 {
		if rep.Source == telNone && len(rep.Why) == 0 {
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
