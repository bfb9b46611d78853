package htmlreport

import (
	"bufio"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/report"
)

// Format is the --format value that selects this package.
const Format = "html"

//go:embed templates/*.tmpl
var templateFS embed.FS

//go:embed assets/uPlot.iife.min.js
var uplotJS string

//go:embed assets/uPlot.min.css
var uplotCSS string

//go:embed assets/report.js
var reportJS string

//go:embed assets/report.css
var reportCSS string

// Options are what every page says about itself.
type Options struct {
	// Version is joulebench's version, printed in the page.
	Version string
	// Now is the time written in the page; zero: time.Now().
	Now time.Time
}

// page is the template's root.
type page struct {
	Title, Version, Written string
	Simulated               bool
	SimNote                 string
	Compare                 *compareView
	Runs                    []*runView
	Data                    pageData
	UPlotJS, ReportJS       template.JS
	UPlotCSS, CSS           template.CSS
	// links maps a run id to its section's anchor; formal to its formal
	// J/token (the comparison's runs).
	links  map[string]string
	formal map[string]*float64
	loads  map[string]string
	// labels and settings are each run's point label ("c32 · 250 W") and
	// GPU setting; chosen the decision's run ("" when none).
	labels, settings map[string]string
	chosen           string
}

// pageData is the JSON the scripts read (window.JB).
type pageData struct {
	Runs     []*runData `json:"runs"`
	Frontier *frontier  `json:"frontier,omitempty"`
	Asiai    *frontier  `json:"asiai,omitempty"`
}

// WriteRun writes the HTML report of one or more runs, each in its own
// section.
func WriteRun(w io.Writer, runs []RunInput, opt Options) error {
	if len(runs) == 0 {
		return fmt.Errorf("html report: no run")
	}
	p := newPage(opt)
	for _, in := range runs {
		v, err := buildRun(in)
		if err != nil {
			return err
		}
		p.Runs = append(p.Runs, v)
		p.Data.Runs = append(p.Data.Runs, v.Data)
		p.Simulated = p.Simulated || v.Simulated
	}
	p.links = uniqueAnchors(p.Runs)
	if len(p.Runs) == 1 {
		p.Title = "joulebench report: " + p.Runs[0].Title
	} else {
		p.Title = fmt.Sprintf("joulebench report: %d runs", len(p.Runs))
	}
	return p.write(w)
}

// WriteCompare writes the HTML comparison: compare's tables (rep, as
// compare.Profile.Compare built them), the energy–latency points of the
// runs, and a section per run that the tables link to.
func WriteCompare(w io.Writer, rep *compare.Report, runs []compare.Run, opt Options) error {
	if rep == nil {
		return fmt.Errorf("html comparison: no report")
	}
	p := newPage(opt)
	cv, fr := buildCompare(rep, runs)
	p.Compare, p.Data.Frontier, p.Data.Asiai = cv, fr, buildAsiai(rep.Asiai)
	p.links = uniqueAnchors(cv.Briefs)
	p.formal, p.loads = map[string]*float64{}, map[string]string{}
	p.labels, p.settings = map[string]string{}, map[string]string{}
	for _, r := range rep.Runs {
		p.labels[r.RunID], p.settings[r.RunID] = r.Label, settingText(r.GPUSetting)
	}
	if d := rep.Decision; d != nil && d.Chosen {
		p.chosen = d.Run
	}
	for _, r := range runs {
		p.loads[r.Meta.RunID] = compare.LoadText(loadOf(r.Meta.Parameters))
		if v, ok := number(r.Results, "formal_j_per_token"); ok {
			p.formal[r.Meta.RunID] = &v
		}
	}
	p.Simulated = rep.Simulated
	for _, b := range cv.Briefs {
		p.Simulated = p.Simulated || b.Simulated
	}
	p.Title = "joulebench comparison (" + rep.CompareProfile + ")"
	return p.write(w)
}

func newPage(opt Options) *page {
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	return &page{Version: cmpOr(opt.Version, "dev"), Written: now.UTC().Format("2006-01-02 15:04 UTC"), SimNote: report.SimulatedNote,
		Data:    pageData{Runs: []*runData{}},
		UPlotJS: template.JS(uplotJS), ReportJS: template.JS(reportJS), UPlotCSS: template.CSS(uplotCSS), CSS: template.CSS(reportCSS)}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (p *page) write(w io.Writer) error {
	// The template marshals the data itself (escaping it for the script
	// element); a value JSON cannot hold (NaN) would become null there,
	// so it is caught here with its reason instead.
	if _, err := json.Marshal(p.Data); err != nil {
		return fmt.Errorf("html report: chart data: %w", err)
	}
	t, err := parseTemplates()
	if err != nil {
		return err
	}
	t.Funcs(template.FuncMap{"link": func(id string) string { return p.links[id] }, "formal": func(id string) *float64 { return p.formal[id] },
		"runload":    func(id string) string { return orDash(p.loads[id]) },
		"runlabel":   func(id string) string { return orDash(p.labels[id]) },
		"runsetting": func(id string) string { return orDash(p.settings[id]) },
		"chosen":     func(id string) bool { return id != "" && id == p.chosen }})
	bw := bufio.NewWriter(w)
	if err := t.ExecuteTemplate(bw, "page", p); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("html report: write: %w", err)
	}
	return nil
}

// uniqueAnchors makes the runs' element ids distinct (two run ids can
// map to the same anchor).
func uniqueAnchors(runs []*runView) map[string]string {
	seen := map[string]bool{}
	byID := map[string]string{}
	for _, r := range runs {
		a := r.Anchor
		for i := 2; seen[a]; i++ {
			a = r.Anchor + "-" + strconv.Itoa(i)
		}
		seen[a], r.Anchor = true, a
		if _, ok := byID[r.Meta.RunID]; !ok {
			byID[r.Meta.RunID] = a
		}
	}
	return byID
}

func parseTemplates() (*template.Template, error) {
	t, err := template.New("joulebench").Funcs(funcs).ParseFS(templateFS, "templates/*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("html report: templates: %w", err)
	}
	return t, nil
}

// funcs format numbers as compare's text tables do.
var funcs = template.FuncMap{
	"f1":   func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"pf0":  func(v *float64) string { return fmtF(v, 0) },
	"pf1":  func(v *float64) string { return fmtF(v, 1) },
	"pf2":  func(v *float64) string { return fmtF(v, 2) },
	"pf3":  func(v *float64) string { return fmtF(v, 3) },
	"pf4":  func(v *float64) string { return fmtF(v, 4) },
	"ppct": pctPtr,
	"pct":  func(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + " %" },
	"join": strings.Join,
	"params": func(v *float64) string {
		if v == nil {
			return "-"
		}
		x := *v
		for _, s := range []struct {
			div    float64
			suffix string
		}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}} {
			if x >= s.div {
				return strconv.FormatFloat(x/s.div, 'g', 4, 64) + s.suffix
			}
		}
		return strconv.FormatFloat(x, 'g', 4, 64)
	},
	// used writes a run's value, in brackets when a flag leaves it out
	// of the statistics (as compare's table).
	"used": func(r compare.RunRow, name string, v *float64, prec int) string {
		s := fmtF(v, prec)
		if v != nil && !r.Uses(name) {
			return "[" + s + "]"
		}
		return s
	},
	"flags": func(fs []compare.Flag) string {
		if len(fs) == 0 {
			return "-"
		}
		names := make([]string, len(fs))
		for i, f := range fs {
			names[i] = f.Name
		}
		return strings.Join(names, ", ")
	},
	"spread": func(s *compare.Spread) string {
		if s == nil {
			return "-"
		}
		if s.N == 1 {
			return "n=1: " + fmtF(&s.Median, 4)
		}
		sp := "-"
		if s.SpreadPct != nil {
			sp = strconv.FormatFloat(*s.SpreadPct, 'f', 1, 64) + " %"
		}
		return fmt.Sprintf("n=%d: %s (%s–%s, %s)", s.N, fmtF(&s.Median, 4), fmtF(&s.Min, 4), fmtF(&s.Max, 4), sp)
	},
	"rank": func(r *float64) string {
		if r == nil {
			return "-"
		}
		return strconv.FormatFloat(*r, 'f', -1, 64)
	},
	"removes": func(vs []string) string {
		if slices.Contains(vs, compare.ValueAll) {
			return "the whole run"
		}
		names := map[string]string{compare.ValueSteady: "steady J/token", compare.ValueFull: "full-lifecycle J/token",
			compare.ValueStartup: "startup J", compare.ValueRelease: "release J"}
		out := make([]string, 0, len(vs))
		for _, v := range vs {
			out = append(out, cmpOr(names[v], v))
		}
		return orDash(strings.Join(out, ", "))
	},
	// link and formal are filled per page (the run id → its section's
	// anchor, its formal J/token).
	"link":       func(string) string { return "" },
	"formal":     func(string) *float64 { return nil },
	"runload":    func(string) string { return "" },
	"runlabel":   func(string) string { return "" },
	"runsetting": func(string) string { return "" },
	"chosen":     func(string) bool { return false },
	"objective": func(o string) string {
		switch o {
		case "usd_per_mtoken":
			return "cost per million output tokens"
		case "gco2_per_mtoken":
			return "carbon per million output tokens"
		}
		return "energy per output token (J/token)"
	},
	"basis": basisWords,
	// config names a configuration's fields but its GPU setting, which
	// has a column (or words) of its own.
	"config": func(fv []compare.FieldValue) string {
		parts := make([]string, 0, len(fv))
		for _, v := range fv {
			if !strings.HasPrefix(v.Field, gpuSettingsField) {
				parts = append(parts, strings.TrimPrefix(v.Field, "parameters.")+" "+v.Value)
			}
		}
		return orDash(strings.Join(parts, ", "))
	},
	"setting": settingText,
	// cfgload names a configuration's fields but its GPU setting, then
	// its load: "max_num_seqs 64; load concurrency=32".
	"cfgload": func(fv, load []compare.FieldValue) string {
		var parts []string
		for _, v := range fv {
			if !strings.HasPrefix(v.Field, gpuSettingsField) {
				parts = append(parts, strings.TrimPrefix(v.Field, "parameters.")+" "+v.Value)
			}
		}
		if len(load) > 0 {
			l := make([]string, len(load))
			for i, v := range load {
				l[i] = strings.TrimPrefix(v.Field, "parameters.") + "=" + v.Value
			}
			parts = append(parts, "load "+strings.Join(l, " "))
		}
		return orDash(strings.Join(parts, "; "))
	},
	"ci": func(c *[2]float64) string {
		return strconv.FormatFloat(c[0], 'f', 4, 64) + "–" + strconv.FormatFloat(c[1], 'f', 4, 64)
	},
	"cfgsetting": configSetting,
	"gschoice":   gpuChoiceText,
	"loadtext":   compare.LoadText,
	"meets": func(b *bool) string {
		switch {
		case b == nil:
			return "-"
		case *b:
			return "yes"
		}
		return "no"
	},
}

func fmtF(v *float64, prec int) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}

func pctPtr(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v*100, 'f', 1, 64) + " %"
}
