package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/internal/redact"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/telemetry/dcgm"
	"github.com/joulebench/joulebench/telemetry/ipmi"
	nvmltel "github.com/joulebench/joulebench/telemetry/nvml"
	"github.com/joulebench/joulebench/telemetry/powermetrics"
	"github.com/joulebench/joulebench/telemetry/prometheus"
	"github.com/joulebench/joulebench/telemetry/rapl"
	"github.com/joulebench/joulebench/telemetry/redfish"
	"github.com/joulebench/joulebench/telemetry/replay"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
	"github.com/joulebench/joulebench/workflow"
)

// Telemetry source names (--telemetry).
const (
	telAuto         = "auto"
	telNVML         = "nvml"
	telPowermetrics = "powermetrics"
	telDCGM         = "dcgm"
	telPrometheus   = "prometheus"
	telSim          = "sim"
	telReplay       = "replay"
	telNone         = "none"
	telRAPL         = "rapl"
	telRedfish      = "redfish"
	telIPMI         = "ipmi"
)

var telemetryChoices = []string{telAuto, telNVML, telPowermetrics, telDCGM, telSim, telReplay, telNone, telPrometheus, telRAPL, telRedfish, telIPMI}

// domainSource is a power source of a boundary other than the GPU (CPU,
// DRAM, node), opened by name: one row each, so that moving the sources
// to descriptors is a move of this table.
type domainSource struct {
	name string
	open func(o telemetryOpts, now telemetry.Clock, logf func(string)) (telemetry.Source, archive.TelemetryInfo, error)
}

// nodeReadFailures is how many reads in a row of a BMC may fail before
// sampling ends: each is a missing sample the power audit judges.
const nodeReadFailures = 5

// tolerantNote says so in run.json's telemetry note.
func tolerantNote() string {
	return fmt.Sprintf("a failed read leaves its sample out (event %s; at most %d in a row)", telemetry.AnomalyReadFailed, nodeReadFailures)
}

var domainSources = []domainSource{
	{telRAPL, func(o telemetryOpts, now telemetry.Clock, logf func(string)) (telemetry.Source, archive.TelemetryInfo, error) {
		src, err := rapl.Open(rapl.Options{Root: o.raplRoot, Clock: now, Logf: logf})
		if err != nil {
			return nil, archive.TelemetryInfo{}, err
		}
		devs, _ := src.Devices(context.Background())
		return src, archive.TelemetryInfo{Source: telRAPL, Note: fmt.Sprintf("RAPL energy counters (powercap sysfs %s): CPU package (domain cpu) and DRAM (domain dram); %s",
			orDefault(o.raplRoot, rapl.DefaultRoot), deviceSummary(devs))}, nil
	}},
	{telRedfish, func(o telemetryOpts, now telemetry.Clock, logf func(string)) (telemetry.Source, archive.TelemetryInfo, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*redfish.DefaultTimeout)
		defer cancel()
		ro := o.redfish
		ro.Logf = logf
		src, err := redfish.Open(ctx, ro)
		if err != nil {
			return nil, archive.TelemetryInfo{}, err
		}
		devs, _ := src.Devices(ctx)
		auth := "no authentication"
		switch {
		case ro.Username != "" && ro.Session:
			auth = "a Redfish session"
		case ro.Username != "":
			auth = "basic authentication"
		}
		tlsNote := "TLS verified"
		if ro.Insecure {
			tlsNote = "TLS NOT verified (--redfish-insecure)"
		}
		return telemetry.NewTolerant(src, nodeReadFailures, now), archive.TelemetryInfo{Source: telRedfish, Note: fmt.Sprintf("Redfish %s (%s, %s): whole-node power (domain node) from %s; %s; %s",
			ro.URL, auth, tlsNote, devs[0].PowerField, deviceSummary(devs), tolerantNote())}, nil
	}},
	{telIPMI, func(o telemetryOpts, now telemetry.Clock, _ func(string)) (telemetry.Source, archive.TelemetryInfo, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*ipmi.DefaultTimeout)
		defer cancel()
		src, err := ipmi.Open(ctx, o.ipmi)
		if err != nil {
			return nil, archive.TelemetryInfo{}, err
		}
		devs, _ := src.Devices(ctx)
		return telemetry.NewTolerant(src, nodeReadFailures, now), archive.TelemetryInfo{Source: telIPMI, Note: fmt.Sprintf("IPMI DCMI (%s dcmi power reading, run per sample): whole-node power (domain node); %s; %s",
			orDefault(o.ipmi.Binary, ipmi.DefaultBinary), deviceSummary(devs), tolerantNote())}, nil
	}},
}

// telemetryFlags registers the flags that choose the power source.
func telemetryFlags(f *pflag.FlagSet) {
	f.StringArray("telemetry", []string{telAuto}, "power source: auto (NVML if an NVIDIA GPU is there, powermetrics on macOS, the simulator's GPU with --engine sim, else none), nvml, powermetrics, dcgm, prometheus, sim, replay, none; rapl (CPU package and DRAM), redfish or ipmi (whole node); repeatable: several sources side by side, e.g. --telemetry nvml --telemetry rapl")
	f.String("rapl-root", "", "powercap sysfs directory of --telemetry rapl (default "+rapl.DefaultRoot+"; a copy or fake tree for tests)")
	f.String("redfish-url", "", "BMC Redfish service of --telemetry redfish, e.g. https://bmc1 (node power; the password in JOULEBENCH_REDFISH_PASSWORD, never on the command line)")
	f.String("redfish-user", "", "Redfish user name (--telemetry redfish)")
	f.StringArray("redfish-chassis", nil, "Redfish chassis ID to read (repeatable; default: the first chassis with a power reading)")
	f.Bool("redfish-session", false, "authenticate with a Redfish session (X-Auth-Token) instead of basic auth")
	f.Bool("redfish-insecure", false, "do not verify the BMC's TLS certificate (--telemetry redfish)")
	f.String("ipmitool", "", "ipmitool binary of --telemetry ipmi (default: ipmitool on PATH)")
	f.StringArray("ipmi-arg", nil, "ipmitool argument before 'dcmi power reading' (repeatable), e.g. --ipmi-arg=-I --ipmi-arg=lanplus --ipmi-arg=-H --ipmi-arg=bmc1 --ipmi-arg=-U --ipmi-arg=admin --ipmi-arg=-E (password in IPMI_PASSWORD)")
	f.String("gpus", "", "NVML GPUs to measure: indexes or UUIDs, comma-separated (default: all)")
	f.StringArray("dcgm-url", nil, "dcgm-exporter endpoint to scrape, e.g. http://node1:9400/metrics (repeatable; GPUs of several hosts)")
	f.String("replay", "", "power.csv or run directory whose power data to replay (--telemetry replay)")
	f.Float64("replay-offset", 0, "start the replay this many seconds into the recording (--replay)")
	f.String("prometheus-url", "", "Prometheus server that scrapes the GPUs' exporter, e.g. http://prometheus:9090 (--telemetry prometheus)")
	f.String("prometheus-selector", "", `label matchers of the engine's GPUs, e.g. 'Hostname="node1",gpu=~"0|1"' (--telemetry prometheus)`)
	f.String("prometheus-power-metric", prometheus.DefaultPowerMetric, "power gauge in W (--telemetry prometheus)")
	f.String("prometheus-energy-metric", prometheus.DefaultEnergyMetric, "cumulative energy counter in mJ, or - for none (--telemetry prometheus)")
	f.String("prometheus-mem-metric", prometheus.DefaultMemMetric, "GPU memory used in MiB, or - for none (--telemetry prometheus)")
}

// telemetryOpts are the telemetry flags, read once.
type telemetryOpts struct {
	// choice is the source when one is named; with several (choices),
	// it is empty.
	choice   string
	choices  []string
	raplRoot string
	redfish  redfish.Options
	ipmi     ipmi.Options
	gpus     []string
	gpusFlag string
	dcgmURLs []string
	replay   string
	prom     prometheus.Options

	// replayOffset is --replay-offset in seconds.
	replayOffset float64
}

func (a *app) telemetryOptions() (telemetryOpts, error) {
	o := telemetryOpts{
		gpusFlag: strings.TrimSpace(a.v.GetString("gpus")),
		raplRoot: strings.TrimSpace(a.v.GetString("rapl-root")),
		redfish: redfish.Options{
			URL:      strings.TrimSpace(a.v.GetString("redfish-url")),
			Username: a.v.GetString("redfish-user"),
			Password: a.v.GetString("redfish-password"), // JOULEBENCH_REDFISH_PASSWORD only: no flag
			Chassis:  a.v.GetStringSlice("redfish-chassis"),
			Session:  a.v.GetBool("redfish-session"),
			Insecure: a.v.GetBool("redfish-insecure"),
		},
		ipmi:   ipmi.Options{Binary: strings.TrimSpace(a.v.GetString("ipmitool")), Args: a.v.GetStringSlice("ipmi-arg")},
		replay: strings.TrimSpace(a.v.GetString("replay")),
		prom: prometheus.Options{
			URL:          strings.TrimSpace(a.v.GetString("prometheus-url")),
			Selector:     strings.TrimSpace(a.v.GetString("prometheus-selector")),
			PowerMetric:  strings.TrimSpace(a.v.GetString("prometheus-power-metric")),
			EnergyMetric: strings.TrimSpace(a.v.GetString("prometheus-energy-metric")),
			MemMetric:    strings.TrimSpace(a.v.GetString("prometheus-mem-metric")),
		},
	}
	for _, u := range a.v.GetStringSlice("dcgm-url") {
		if u = strings.TrimSpace(u); u != "" {
			o.dcgmURLs = append(o.dcgmURLs, u)
		}
	}
	if err := o.parseChoices(a.telemetryFlag()); err != nil {
		return o, err
	}
	gpus, err := nvmltel.ParseGPUs(o.gpusFlag)
	if err != nil {
		return o, invalidf("%v", err)
	}
	o.gpus = gpus
	// A flag of one source given with another source is a mistake.
	if len(o.dcgmURLs) > 0 && !o.has(telDCGM) && !o.has(telAuto) {
		return o, invalidf("--dcgm-url is for --telemetry dcgm (or auto), not %s", o.choice)
	}
	if o.replay != "" && !o.has(telReplay) && !o.has(telAuto) {
		return o, invalidf("--replay is for --telemetry replay (or auto), not %s", o.choice)
	}
	if o.gpusFlag != "" && !o.has(telNVML) && !o.has(telAuto) {
		return o, invalidf("--gpus selects NVML GPUs: it is for --telemetry nvml (or auto), not %s", o.choice)
	}
	if o.has(telDCGM) && len(o.dcgmURLs) == 0 {
		return o, invalidf("--telemetry dcgm needs at least one --dcgm-url http://HOST:9400/metrics")
	}
	if o.prom.URL != "" && !o.has(telPrometheus) {
		return o, invalidf("--prometheus-url is for --telemetry prometheus, not %s", o.choice)
	}
	if o.has(telPrometheus) && o.prom.URL == "" {
		return o, invalidf("--telemetry prometheus needs --prometheus-url http://HOST:9090 (and usually --prometheus-selector)")
	}
	if o.replayOffset = a.v.GetFloat64("replay-offset"); o.replayOffset != 0 && o.replay == "" {
		return o, invalidf("--replay-offset is for --replay FILE")
	}
	if o.raplRoot != "" && !o.has(telRAPL) {
		return o, invalidf("--rapl-root is for --telemetry rapl, not %s", strings.Join(o.choices, " + "))
	}
	if err := o.checkNodeFlags(); err != nil {
		return o, err
	}
	if o.has(telReplay) && o.replay == "" {
		return o, invalidf("--telemetry replay needs --replay FILE (a power.csv or a run directory)")
	}
	if o.choice == telAuto && len(o.dcgmURLs) > 0 && o.replay != "" {
		return o, invalidf("--dcgm-url and --replay name two different power sources: choose one with --telemetry")
	}
	return o, nil
}

// telemetryFlag is --telemetry as given: repeated, or one value that may
// list several separated by commas or spaces (JOULEBENCH_TELEMETRY,
// the config file).
func (a *app) telemetryFlag() []string {
	var out []string
	for _, v := range a.v.GetStringSlice("telemetry") {
		out = append(out, strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })...)
	}
	return out
}

// parseChoices checks the sources named by --telemetry: each known, none
// twice, and auto or none only alone.
func (o *telemetryOpts) parseChoices(given []string) error {
	if len(given) == 0 {
		given = []string{telAuto}
	}
	seen := map[string]bool{}
	for _, c := range given {
		if !slices.Contains(telemetryChoices, c) {
			return invalidf("--telemetry %q: valid are %s", c, strings.Join(telemetryChoices, ", "))
		}
		if seen[c] {
			return invalidf("--telemetry %s is given twice", c)
		}
		seen[c] = true
		o.choices = append(o.choices, c)
	}
	if len(o.choices) == 1 {
		o.choice = o.choices[0]
		return nil
	}
	for _, c := range o.choices {
		if c == telAuto || c == telNone {
			return invalidf("--telemetry %s cannot be combined with other sources (%s): name each source to run side by side", c, strings.Join(o.choices, ", "))
		}
	}
	return nil
}

// checkNodeFlags refuses a Redfish or IPMI flag without its source, and
// Redfish without its URL.
func (o telemetryOpts) checkNodeFlags() error {
	r := o.redfish
	if (r.URL != "" || r.Username != "" || len(r.Chassis) > 0 || r.Session || r.Insecure) && !o.has(telRedfish) {
		return invalidf("--redfish-* flags are for --telemetry redfish, not %s", strings.Join(o.choices, " + "))
	}
	if o.has(telRedfish) && r.URL == "" {
		return invalidf("--telemetry redfish needs --redfish-url https://BMC (and usually --redfish-user, the password in JOULEBENCH_REDFISH_PASSWORD)")
	}
	if r.Session && r.Username == "" {
		return invalidf("--redfish-session needs --redfish-user")
	}
	if (o.ipmi.Binary != "" || len(o.ipmi.Args) > 0) && !o.has(telIPMI) {
		return invalidf("--ipmitool and --ipmi-arg are for --telemetry ipmi, not %s", strings.Join(o.choices, " + "))
	}
	return nil
}

// has reports whether --telemetry names source c.
func (o telemetryOpts) has(c string) bool { return slices.Contains(o.choices, c) }

// setupTelemetry picks the power source of a run. A nil source means none.
// The returned info (run.json "telemetry") names the source, how auto chose
// it, and each device's energy method; the devices themselves go to
// run.json's hardware when sampling starts.
func (a *app) setupTelemetry(es *engineSetup, clock *workflow.Clock) (telemetry.Source, archive.TelemetryInfo, error) {
	o, err := a.telemetryOptions()
	if err != nil {
		return nil, archive.TelemetryInfo{}, err
	}
	var now telemetry.Clock = telemetry.WallClock
	if clock != nil {
		now = clock.Now
	}
	logf := func(msg string) { a.log.Warn().Str("component", "telemetry").Msg(msg) }

	if len(o.choices) > 1 {
		return a.multiTelemetry(es, o, now, logf)
	}
	switch o.choice {
	case telSim:
		if es == nil || es.SimLoad == nil {
			return nil, archive.TelemetryInfo{}, invalidf("--telemetry sim: the simulated GPU follows the simulated engine only (--engine sim)")
		}
		return a.simTelemetry(es, now, "")
	case telNone:
		return nil, archive.TelemetryInfo{Source: telNone, Declined: true, Note: "energy not measured (--telemetry none): energy metrics are not applicable"}, nil
	case telAuto:
		return a.autoTelemetry(es, o, now, logf)
	}
	src, info, err := openTelemetry(o.choice, o, now, logf)
	if err != nil {
		return nil, archive.TelemetryInfo{}, withCode(exitInvalid, err)
	}
	return src, info, nil
}

func (a *app) simTelemetry(es *engineSetup, now telemetry.Clock, how string) (telemetry.Source, archive.TelemetryInfo, error) {
	src := simtel.New(es.SimTelemetry, es.SimLoad, now)
	note := "simulated GPU power tied to the simulated engine's load"
	if how != "" {
		note = how + ": " + note
	}
	devs, _ := src.Devices(context.Background())
	return src, archive.TelemetryInfo{Source: telSim, Simulated: true, Note: note + "; " + deviceSummary(devs)}, nil
}

// multiTelemetry opens every source named by --telemetry and reads them
// side by side; run.json's telemetry source is their names joined by "+",
// the note each source's note.
func (a *app) multiTelemetry(es *engineSetup, o telemetryOpts, now telemetry.Clock, logf func(string)) (telemetry.Source, archive.TelemetryInfo, error) {
	var srcs []telemetry.Source
	closeAll := func() {
		for _, s := range srcs {
			_ = s.Close()
		}
	}
	var notes []string
	sim := false
	for _, c := range o.choices {
		var src telemetry.Source
		var info archive.TelemetryInfo
		var err error
		if c == telSim {
			if es == nil || es.SimLoad == nil {
				closeAll()
				return nil, archive.TelemetryInfo{}, invalidf("--telemetry sim: the simulated GPU follows the simulated engine only (--engine sim)")
			}
			src, info, err = a.simTelemetry(es, now, "")
		} else {
			src, info, err = openTelemetry(c, o, now, logf)
		}
		if err != nil {
			closeAll()
			return nil, archive.TelemetryInfo{}, withCode(exitInvalid, err)
		}
		srcs = append(srcs, src)
		notes = append(notes, c+": "+info.Note)
		sim = sim || info.Simulated
	}
	m := telemetry.NewMulti(now, srcs...)
	if _, err := m.Devices(context.Background()); err != nil {
		closeAll()
		return nil, archive.TelemetryInfo{}, withCode(exitInvalid, err)
	}
	return m, archive.TelemetryInfo{Source: m.Name(), Simulated: sim, Note: "side by side: " + strings.Join(notes, " | ")}, nil
}

// openTelemetry opens a real (or replayed) source by name.
func openTelemetry(choice string, o telemetryOpts, now telemetry.Clock, logf func(string)) (telemetry.Source, archive.TelemetryInfo, error) {
	for _, ds := range domainSources {
		if ds.name == choice {
			return ds.open(o, now, logf)
		}
	}
	switch choice {
	case telNVML:
		src, err := nvmltel.Open(nvmltel.Options{GPUs: o.gpus, Clock: now, Logf: logf})
		if err != nil {
			return nil, archive.TelemetryInfo{}, err
		}
		return src, archive.TelemetryInfo{Source: telNVML, Note: "NVML: " + src.Inventory().Summary()}, nil
	case telPowermetrics:
		src, err := powermetrics.Open(powermetrics.Options{Clock: now, Logf: logf})
		if err != nil {
			return nil, archive.TelemetryInfo{}, err
		}
		devs, _ := src.Devices(context.Background())
		return src, archive.TelemetryInfo{Source: telPowermetrics, Note: fmt.Sprintf(
			"macOS powermetrics (gpu_power and thermal samplers every %d ms): estimated Apple GPU power; each sample's energy summed into a counter; %s",
			powermetrics.DefaultIntervalMS, deviceSummary(devs))}, nil
	case telDCGM:
		ctx, cancel := context.WithTimeout(context.Background(), 2*dcgm.DefaultTimeout)
		defer cancel()
		src, err := dcgm.Open(ctx, dcgm.Options{URLs: o.dcgmURLs, Clock: now, Logf: logf})
		if err != nil {
			return nil, archive.TelemetryInfo{}, err
		}
		devs, _ := src.Devices(ctx)
		shown := make([]string, len(o.dcgmURLs))
		for i, u := range o.dcgmURLs {
			shown[i] = redact.URL(u)
		}
		return src, archive.TelemetryInfo{Source: telDCGM, Note: fmt.Sprintf("dcgm-exporter endpoints %s; %s",
			strings.Join(shown, ", "), deviceSummary(devs))}, nil
	case telPrometheus:
		ctx, cancel := context.WithTimeout(context.Background(), 2*prometheus.DefaultTimeout)
		defer cancel()
		po := o.prom
		po.Clock, po.Logf = now, logf
		src, err := prometheus.Open(ctx, po)
		if err != nil {
			return nil, archive.TelemetryInfo{}, err
		}
		devs, _ := src.Devices(ctx)
		return src, archive.TelemetryInfo{Source: telPrometheus, Note: fmt.Sprintf("Prometheus %s, %s{%s} (samples at their scrape times; scrape interval seen recorded as events scrape_interval_*); %s",
			redact.URL(po.URL), orDefault(po.PowerMetric, prometheus.DefaultPowerMetric), po.Selector, deviceSummary(devs))}, nil
	case telReplay:
		src, err := replay.Open(o.replay, replay.Options{Realtime: true, Clock: now, Logf: logf, OffsetS: o.replayOffset})
		if err != nil {
			return nil, archive.TelemetryInfo{}, err
		}
		first, last := src.Span()
		devs, _ := src.Devices(context.Background())
		return src, archive.TelemetryInfo{Source: telReplay, Simulated: true, Note: fmt.Sprintf(
			"REPLAYED power data, not measured in this run: %s (%.1f s, from %g s into it, re-stamped on this run's clock; a run shorter than that replays only its first part); %s",
			src.File(), last-first, o.replayOffset, deviceSummary(devs))}, nil
	}
	return nil, archive.TelemetryInfo{}, fmt.Errorf("telemetry %q cannot be opened", choice)
}

// autoTelemetry is --telemetry auto: the simulator's GPU with the simulated
// engine; the source named by --dcgm-url or --replay; NVML when an NVIDIA
// GPU is there; powermetrics on macOS; otherwise none, with a warning that
// says why.
func (a *app) autoTelemetry(es *engineSetup, o telemetryOpts, now telemetry.Clock, logf func(string)) (telemetry.Source, archive.TelemetryInfo, error) {
	if es != nil && es.SimLoad != nil && len(o.dcgmURLs) == 0 && o.replay == "" {
		return a.simTelemetry(es, now, "auto (the simulated engine runs)")
	}
	withHow := func(src telemetry.Source, info archive.TelemetryInfo, err error, how string) (telemetry.Source, archive.TelemetryInfo, error) {
		if err != nil {
			return nil, archive.TelemetryInfo{}, withCode(exitInvalid, err)
		}
		info.Note = "auto (" + how + "): " + info.Note
		return src, info, nil
	}
	if len(o.dcgmURLs) > 0 {
		src, info, err := openTelemetry(telDCGM, o, now, logf)
		return withHow(src, info, err, "--dcgm-url given")
	}
	if o.replay != "" {
		src, info, err := openTelemetry(telReplay, o, now, logf)
		return withHow(src, info, err, "--replay given")
	}
	var why []string
	src, info, err := openTelemetry(telNVML, o, now, logf)
	switch {
	case err == nil:
		return withHow(src, info, nil, "NVIDIA GPU found")
	case errors.Is(err, nvmltel.ErrUnavailable):
		why = append(why, err.Error())
	default:
		// NVML works but the GPUs cannot be measured as asked.
		return nil, archive.TelemetryInfo{}, withCode(exitInvalid, err)
	}
	if runtime.GOOS == "darwin" {
		src, info, err := openTelemetry(telPowermetrics, o, now, logf)
		if err == nil {
			return withHow(src, info, nil, "macOS")
		}
		why = append(why, err.Error())
	} else {
		why = append(why, "powermetrics: macOS only (this is "+runtime.GOOS+")")
	}
	msg := "no power source found, energy metrics will be not applicable: " + strings.Join(why, "; ") +
		". For GPUs on other hosts use --telemetry dcgm --dcgm-url http://HOST:9400/metrics; --telemetry none silences this warning"
	// Once per command: an asiai run looks for a source per engine and for
	// the cooldown between them, and printed this three times.
	if !a.noPowerWarned {
		a.noPowerWarned = true
		a.log.Warn().Str("component", "telemetry").Msg(msg)
	}
	return nil, archive.TelemetryInfo{Source: telNone, Note: "auto: " + msg}, nil
}

// deviceSummary is "gpu0 counter, gpu1 power" for run.json's telemetry
// note.
func deviceSummary(devs []archive.Device) string {
	if len(devs) == 0 {
		return "no devices"
	}
	parts := make([]string, len(devs))
	for i, d := range devs {
		parts[i] = d.ID + " " + d.Method
	}
	return "energy method per device: " + strings.Join(parts, ", ")
}
