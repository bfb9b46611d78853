package htmlreport

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/plot"
	"github.com/joulebench/joulebench/report"
	"github.com/joulebench/joulebench/workflow"
)

// RunInput is one evaluated run to render.
type RunInput struct {
	Run     *record.Run
	Results *record.Results
	// Stages is the run's energy by stage (report.Stages); nil leaves the
	// table out.
	Stages *report.StageBreakdown
	// Hosts is the run's energy by host (report.Hosts); nil (a run on
	// one host without roles) leaves the table out.
	Hosts *report.HostBreakdown
	// Params are the evaluating profile's parameter declarations: the
	// provenance lists the run's parameters whose value differs from
	// their default. Nil lists them all.
	Params []workflow.ParamDecl
	// ParamsFrom says where the evaluation's parameter values came from
	// (run.json, the profile's defaults, --set); "" shows nothing.
	ParamsFrom string
	// EvalErr says which formulas could not be evaluated (shown).
	EvalErr error
}

// headlineCount is how many metrics, in profile order, the headline shows
// (the profiles put their main figures first).
const headlineCount = 8

// metricRow is one metric or check for a table.
type metricRow struct {
	Name, Value, Unit, Note, Description string
	// Label is the name people read (the profile's label:, else the
	// metric's name in words), Boundary what its power covers (GPU, CPU,
	// node; "" for none).
	Label, Boundary string
	// Severity, Passed and Message are for checks; Status is "pass",
	// "FAIL" or "n/a".
	Severity, Status, Message string
	Failed                    bool
	// Invalid is true for a figure a failed check invalidates (Note
	// names the check).
	Invalid bool
}

// kv is one line of a definition list.
type kv struct{ Key, Value string }

// paramRow is one parameter of the run.
type paramRow struct{ Name, Value, Default string }

// runView is what the run template shows.
type runView struct {
	Anchor     string
	Meta       record.Meta
	Title      string
	Simulated  bool
	SimNote    string
	Replayed   string
	Excluded   string
	Headline   []metricRow
	Metrics    []metricRow
	Checks     []metricRow
	Boundary   string
	Devices    []record.Device
	Prov       []kv
	Params     []paramRow
	ParamNote  string
	ParamsFrom string
	Stages     *report.StageBreakdown
	Hosts      *report.HostBreakdown
	Steady     string
	EvalErr    string
	Notes      []string
	Data       *runData
}

// runData is what the charts draw, embedded as JSON.
type runData struct {
	ID        string    `json:"id"`
	Simulated bool      `json:"simulated"`
	Power     []series  `json:"power"`
	Stages    []band    `json:"stages"`
	Steady    *band     `json:"steady"`
	Baseline  *baseline `json:"baseline,omitempty"`
	Engine    []series  `json:"engine"`
	JPerToken series    `json:"jpt"`
	CV        series    `json:"cv"`
	CVMax     float64   `json:"cv_max"`
	Window    int       `json:"window"`
	Steady1   int       `json:"steady_first"`
	SteadyN   int       `json:"steady_last"`
	Latency   []latency `json:"latency"`
	Requests  reqTable  `json:"requests"`
}

// series is one line: X and Y of the same length (seconds since the run's
// start for timelines).
type series struct {
	Name  string    `json:"name"`
	Unit  string    `json:"unit,omitempty"`
	Scale string    `json:"scale,omitempty"`
	X     []float64 `json:"x"`
	Y     []float64 `json:"y"`
}

type band struct {
	Name  string  `json:"name"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	Level int     `json:"level"`
}

type baseline struct {
	W     float64 `json:"w"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// buildRun turns an input into the template's view.
func buildRun(in RunInput) (*runView, error) {
	if in.Run == nil {
		return nil, fmt.Errorf("html report: no run")
	}
	m := in.Run.Meta
	v := &runView{Anchor: anchor(m.RunID), Meta: m, Simulated: m.Simulated, Stages: in.Stages, Hosts: in.Hosts}
	v.Title = fmt.Sprintf("run %s · %s · %s · %s", m.RunID, orDash(m.Profile.Name), orDash(m.Engine.Kind), orDash(m.Engine.Model))
	if m.Simulated {
		v.SimNote = report.SimulatedNoteOf(m)
	}
	if m.PowerReplayed() {
		v.Replayed = "REPLAYED: power comes from an archived power.csv replayed, not from a live measurement" + noteSuffix(m.Telemetry.Note)
	}
	if wn := report.WorkloadNote(m); wn != "" {
		v.Notes = append(v.Notes, wn)
	}
	if in.EvalErr != nil {
		v.EvalErr = in.EvalErr.Error()
	}
	if res := in.Results; res != nil {
		if res.Excluded {
			v.Excluded = res.ExcludeReason
		}
		v.results(res)
		v.Steady = steadyNote(res)
	} else {
		v.Notes = append(v.Notes, "run not evaluated: no metrics or checks")
	}
	v.Devices = m.Hardware.Devices
	v.Boundary = boundary(m)
	v.Prov = provenance(m)
	v.Params, v.ParamNote = changedParams(m.Parameters, in.Params)
	v.ParamsFrom = in.ParamsFrom
	pd, err := plot.Prepare(in.Run, in.Results)
	if err != nil {
		return nil, fmt.Errorf("html report: %w", err)
	}
	v.Notes = append(v.Notes, pd.Notes...)
	d, notes := chartData(in.Run, pd)
	v.Notes = append(v.Notes, notes...)
	v.Data = d
	return v, nil
}

func noteSuffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// results fills the metric and check rows.
func (v *runView) results(in *record.Results) {
	stored := in.Stored() // as results.json holds them
	res := &stored
	invalid := report.InvalidatedBy(res)
	for _, n := range res.Order {
		r := res.Values[n]
		row := metricRow{Name: n, Value: report.FormatValue(r), Unit: r.Unit, Note: r.Note, Description: r.Description,
			Label: r.NameOf(n), Boundary: report.BoundaryLabel(r.Boundary)}
		if by := invalid[n]; len(by) > 0 && r.Value != nil {
			// As the summary: a figure a failed check invalidates says so.
			row.Note, row.Invalid = report.InvalidNote(by), true
		}
		if row.Label == n {
			row.Label = metricLabel(n, r.Unit)
		}
		switch r.Kind {
		case "metric":
			if len(v.Headline) < headlineCount && r.Value != nil {
				v.Headline = append(v.Headline, row)
			}
			v.Metrics = append(v.Metrics, row)
		case "check":
			row.Severity, row.Message = r.Severity, report.InWords(r.Message)
			switch {
			case r.Passed == nil:
				row.Status = "n/a"
			case *r.Passed:
				row.Status = "pass"
			default:
				row.Status, row.Failed = "FAIL", true
			}
			v.Checks = append(v.Checks, row)
		}
	}
}

// steadyNote says where steady state starts, where its span starts and
// the CV of each of its windows, from the results' derived value "steady"
// (the profile's steady_state(), which returns the window and cv_max it
// searched with: the run's parameters as its profile passed them); empty
// when the profile has none.
func steadyNote(res *record.Results) string {
	r, ok := res.Values["steady"]
	if !ok || r.Value == nil {
		return ""
	}
	var st struct {
		Reached    bool      `json:"reached"`
		Reason     string    `json:"reason"`
		StartIndex int       `json:"start_index"`
		EndIndex   int       `json:"end_index"`
		SpanStart  string    `json:"span_start"`
		Windows    int       `json:"windows"`
		WindowCVs  []float64 `json:"window_cvs"`
		Window     int       `json:"window"`
		CVMax      float64   `json:"cv_max"`
	}
	b, err := json.Marshal(r.Value)
	if err != nil || json.Unmarshal(b, &st) != nil {
		return ""
	}
	if !st.Reached {
		return "Steady state not reached: " + orDash(st.Reason)
	}
	cvs := make([]string, len(st.WindowCVs))
	for i, c := range st.WindowCVs {
		cvs[i] = strconv.FormatFloat(c, 'f', 5, 64)
	}
	note := fmt.Sprintf("Steady state from request %d to %d in completion order: %d windows of %d requests, CV of each window %s (threshold %s)",
		st.StartIndex, st.EndIndex, st.Windows, st.Window, strings.Join(cvs, ", "), strconv.FormatFloat(st.CVMax, 'g', -1, 64))
	switch st.SpanStart {
	case "first_completion":
		note += fmt.Sprintf("; the span starts at the completion of request %d (steady_span_start first_completion)", st.StartIndex)
	case "earliest_first_token":
		note += "; the span starts at the earliest first token among the requests of the first window (steady_span_start earliest_first_token)"
	}
	return note + "."
}

// boundary says whose power the figures cover: the devices of each
// domain (GPU, CPU, DRAM, node), and the domains the run did not measure.
func boundary(m record.Meta) string {
	n := len(m.Hardware.Devices)
	if n == 0 {
		return "no measured device recorded in run.json"
	}
	hosts := map[string]bool{}
	count := map[string]int{}
	for _, d := range m.Hardware.Devices {
		hosts[cmp.Or(d.Host, m.Host.Hostname)] = true
		count[d.DomainOrGPU()]++
	}
	var have, missing []string
	for _, dom := range record.Domains {
		name := report.BoundaryLabel(dom)
		if count[dom] > 0 {
			have = append(have, fmt.Sprintf("%s: %d device(s)", name, count[dom]))
		} else {
			missing = append(missing, name)
		}
	}
	s := fmt.Sprintf("%s on %d host(s), power from %s", strings.Join(have, ", "), len(hosts), orDash(m.Telemetry.Source))
	if m.Telemetry.IntervalS > 0 {
		s += " every " + strconv.FormatFloat(m.Telemetry.IntervalS, 'g', -1, 64) + " s"
	}
	if len(missing) > 0 {
		s += "; " + strings.Join(missing, ", ") + " power not in this run"
	}
	return s
}

// provenance lists where the run's numbers come from.
func provenance(m record.Meta) []kv {
	e, rs := m.Engine, m.RequestSet
	out := []kv{
		{"run", m.RunID},
		{"status", m.Status + noteSuffix(m.Reason)},
		{"profile", fmt.Sprintf("%s (version %d, %s)", orDash(m.Profile.Name), m.Profile.Version, orDash(m.Profile.Source))},
		{"profile sha256", orDash(m.Profile.SHA256)},
		{"engine", strings.TrimSpace(orDash(e.Kind) + " " + e.Version)},
		{"engine command", orDash(strings.Join(e.Command, " "))},
		{"engine URL", orDash(e.URL)},
		{"model (weights)", orDash(e.Model)},
		{"revision", orDash(e.Revision)},
		{"precision, format, quantization", orDash(strings.Trim(strings.Join([]string{e.Precision, e.ModelFormat, e.Quantization}, ", "), ", "))},
		{"context length, tensor parallel", fmt.Sprintf("%d, %d", e.ContextLength, e.TensorParallel)},
		{"dataset", fmt.Sprintf("%s (%s), %d requests, sha256 %s", orDash(rs.Source), orDash(rs.Format), rs.Count, orDash(rs.SHA256))},
		{"host", fmt.Sprintf("%s (%s %s, %s, %d CPUs)", orDash(m.Host.Hostname), m.Host.OS, m.Host.OSVersion, m.Host.Arch, m.Host.CPUs)},
		{"telemetry", orDash(m.Telemetry.Source) + noteSuffix(m.Telemetry.Note)},
		{"GPU driver", orDash(m.Hardware.Driver)},
		{"started", unixTime(m.StartedAt)},
		{"ended", unixTime(m.EndedAt)},
	}
	if rs.Origin != nil {
		out = append(out, kv{"dataset origin", fmt.Sprintf("%s @ %s (sha256 %s)", rs.Origin.URL, orDash(rs.Origin.Revision), rs.Origin.SHA256)})
	}
	for _, k := range sortedKeys(m.Software) {
		out = append(out, kv{"software: " + k, m.Software[k]})
	}
	for _, k := range sortedKeys(m.Labels) {
		out = append(out, kv{"label: " + k, m.Labels[k]})
	}
	return out
}

func unixTime(t float64) string {
	if t <= 0 {
		return "-"
	}
	sec, frac := math.Modf(t)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC().Format("2006-01-02 15:04:05.000 UTC")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// changedParams lists the run's parameters whose value differs from the
// profile's default (all of them when decls is nil).
func changedParams(params map[string]any, decls []workflow.ParamDecl) ([]paramRow, string) {
	defaults := map[string]string{}
	for _, d := range decls {
		defaults[d.Name] = paramString(d.Default)
	}
	var rows []paramRow
	for _, k := range sortedKeys(params) {
		val := paramString(params[k])
		def, ok := defaults[k]
		if decls != nil && ok && def == val {
			continue
		}
		if !ok {
			def = "(not declared)"
		}
		rows = append(rows, paramRow{Name: k, Value: val, Default: def})
	}
	if decls == nil {
		return rows, "all parameters of the run (the profile's defaults were not given)"
	}
	return rows, fmt.Sprintf("%d of %d parameters differ from the profile's defaults", len(rows), len(params))
}

// paramString writes a parameter so that a default and the archived value
// compare equal: durations in seconds, as run.json holds them, and
// integral numbers without a fraction.
func paramString(v any) string {
	switch x := v.(type) {
	case time.Duration:
		return strconv.FormatFloat(x.Seconds(), 'g', -1, 64)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// anchor is an element id for a run: letters, digits, '-' and '_' kept,
// anything else as '_' (html/template escapes the value anyway; this keeps
// the id usable in a URL fragment).
func anchor(runID string) string {
	var b strings.Builder
	b.WriteString("run-")
	for _, r := range runID {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// labelWords are how a metric name's words read in a heading.
var labelWords = map[string]string{"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2e": "E2E", "slo": "SLO", "cv": "CV", "gpu": "GPU",
	"cpu": "CPU", "kv": "KV", "rps": "requests/s", "pct": "%", "j": "energy", "w": "power", "mtoken": "million tokens"}

// unitSuffixes are name endings that only repeat the unit shown beside
// the value.
var unitSuffixes = [][]string{{"tok", "s"}, {"ms"}, {"s"}, {"pct"}, {"mb"}, {"gb"}, {"hz"}, {"mhz"}}

// metricLabel is a metric's name in words: steady_state_j_per_token is
// "Steady state energy per output token", ttft_p99_ms "TTFT p99" (the
// unit is shown beside the value, so a unit ending is left out).
func metricLabel(name, unit string) string {
	words := strings.Split(name, "_")
	for _, suf := range unitSuffixes {
		if len(words) > len(suf) && slices.Equal(words[len(words)-len(suf):], suf) && unit != "" {
			words = words[:len(words)-len(suf)]
			break
		}
	}
	if len(words) > 1 && (words[len(words)-1] == "j" || words[len(words)-1] == "w") && !slices.Contains(words, "energy") && !slices.Contains(words, "power") {
		words[len(words)-1] = labelWords[words[len(words)-1]]
	} else if len(words) > 1 && (words[len(words)-1] == "j" || words[len(words)-1] == "w") {
		words = words[:len(words)-1]
	}
	out := strings.Join(words, " ")
	out = strings.ReplaceAll(out, "j per good token", "energy per good output token")
	out = strings.ReplaceAll(out, "j per answer token", "energy per answer token")
	out = strings.ReplaceAll(out, "j per token", "energy per output token")
	words = strings.Fields(out)
	for i, w := range words {
		if r, ok := labelWords[w]; ok && w != "j" && w != "w" {
			words[i] = r
		}
	}
	out = strings.Join(words, " ")
	if out == "" {
		return name
	}
	return strings.ToUpper(out[:1]) + out[1:]
}
