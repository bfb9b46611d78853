package importer

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// Mapping says which CSV columns (by header name) hold what.
type Mapping struct {
	// Time is Unix seconds or RFC 3339; TimeMS Unix milliseconds (one of
	// the two).
	Time, TimeMS string
	// Device names the device of each row; empty: one device, DefaultDevice.
	Device string
	// Watts is power in W; Joules a cumulative energy counter in J (at
	// least one of the two). With Joules only, each row's power is the
	// counter's increase since the device's previous row over the time
	// between them (the first row takes the second's).
	Watts, Joules string
}

// DefaultDevice is the device id when the mapping names no device column.
const DefaultDevice = "dev0"

// ParseMapping reads "time=COL,device=COL,watts=COL" (keys time, time_ms,
// device, watts, joules).
func ParseMapping(s string) (Mapping, error) {
	var m Mapping
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || strings.TrimSpace(v) == "" {
			return m, fmt.Errorf("column mapping %q: want KEY=COLUMN, got %q", s, part)
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "time":
			m.Time = v
		case "time_ms":
			m.TimeMS = v
		case "device":
			m.Device = v
		case "watts":
			m.Watts = v
		case "joules":
			m.Joules = v
		default:
			return m, fmt.Errorf("column mapping %q: unknown key %q (keys: time, time_ms, device, watts, joules)", s, k)
		}
	}
	switch {
	case (m.Time == "") == (m.TimeMS == ""):
		return m, fmt.Errorf("column mapping %q: give exactly one of time= (Unix s or RFC 3339) and time_ms= (Unix ms)", s)
	case m.Watts == "" && m.Joules == "":
		return m, fmt.Errorf("column mapping %q: give watts= or joules= (or both)", s)
	}
	return m, nil
}

// csvCols are the column indexes of a mapping; -1 when not mapped.
type csvCols struct{ t, tms, dev, w, j int }

func (m Mapping) columns(header []string, name string) (csvCols, error) {
	find := func(col string) (int, error) {
		if col == "" {
			return -1, nil
		}
		if i := slices.Index(header, col); i >= 0 {
			return i, nil
		}
		return -1, fmt.Errorf("%s:1: no column %q in the header (columns: %s)", name, col, strings.Join(header, ", "))
	}
	var c csvCols
	var errs []error
	for _, p := range []struct {
		dst *int
		col string
	}{{&c.t, m.Time}, {&c.tms, m.TimeMS}, {&c.dev, m.Device}, {&c.w, m.Watts}, {&c.j, m.Joules}} {
		var err error
		*p.dst, err = find(p.col)
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// CSV reads a CSV recording with a header line. An empty power cell is a
// failed sample (a gap, counted); a cell that is not a number, a negative
// power or a time that is not finite is an error naming name:line:column.
func CSV(r io.Reader, name string, m Mapping) (*Recording, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s:1: header: %w", name, err)
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff")
	}
	cols, err := m.columns(header, name)
	if err != nil {
		return nil, err
	}
	rec := &Recording{Format: "csv", Notes: []string{"column mapping: " + m.String()}}
	var rows []csvRow
	for {
		f, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		row, ok, err := parseCSVRow(f, cols, name, line, cr)
		if err != nil {
			return nil, err
		}
		if !ok {
			rec.FailedSamples++
			continue
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows with a power reading", name)
	}
	if err := rec.fromRows(rows, m, name); err != nil {
		return nil, err
	}
	return rec, nil
}

// String is the mapping as ParseMapping reads it.
func (m Mapping) String() string {
	var parts []string
	for _, p := range [][2]string{{"time", m.Time}, {"time_ms", m.TimeMS}, {"device", m.Device}, {"watts", m.Watts}, {"joules", m.Joules}} {
		if p[1] != "" {
			parts = append(parts, p[0]+"="+p[1])
		}
	}
	return strings.Join(parts, ",")
}

type csvRow struct {
	line       int
	t, w, j    float64
	hasW, hasJ bool
	dev        string
}

func parseCSVRow(f []string, c csvCols, name string, line int, cr *csv.Reader) (csvRow, bool, error) {
	row := csvRow{line: line, dev: DefaultDevice}
	at := func(i int) string { return strings.TrimSpace(f[i]) }
	bad := func(i int, what string) error {
		l, col := cr.FieldPos(i)
		return fmt.Errorf("%s:%d:%d: column %q: %s", name, l, col, f[i], what)
	}
	num := func(i int) (float64, bool, error) {
		if at(i) == "" {
			return 0, false, nil
		}
		v, err := strconv.ParseFloat(at(i), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, false, bad(i, "not a finite number")
		}
		return v, true, nil
	}
	var err error
	switch {
	case c.t >= 0:
		if row.t, err = ParseTime(at(c.t)); err != nil {
			return row, false, bad(c.t, err.Error())
		}
	default:
		ms, ok, err := num(c.tms)
		if err != nil || !ok {
			return row, false, cmpErr(err, bad(c.tms, "empty time"))
		}
		row.t = ms / 1000
		if err := checkTime(row.t); err != nil {
			return row, false, bad(c.tms, err.Error())
		}
	}
	if c.dev >= 0 {
		if row.dev = at(c.dev); row.dev == "" {
			return row, false, bad(c.dev, "empty device")
		}
	}
	if c.w >= 0 {
		if row.w, row.hasW, err = num(c.w); err != nil {
			return row, false, err
		}
		if row.hasW {
			if err := checkPower(row.w); err != nil {
				return row, false, bad(c.w, err.Error())
			}
		}
	}
	if c.j >= 0 {
		if row.j, row.hasJ, err = num(c.j); err != nil {
			return row, false, err
		}
	}
	return row, row.hasW || (c.w < 0 && row.hasJ), nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// fromRows turns parsed rows into samples and devices; with joules only,
// power comes from the counter's increase.
func (rec *Recording) fromRows(rows []csvRow, m Mapping, name string) error {
	byDev := map[string][]csvRow{}
	var order []string
	for _, r := range rows {
		if _, ok := byDev[r.dev]; !ok {
			order = append(order, r.dev)
		}
		byDev[r.dev] = append(byDev[r.dev], r)
	}
	for _, d := range order {
		rs := byDev[d]
		slices.SortStableFunc(rs, func(a, b csvRow) int { return cmp.Compare(a.t, b.t) })
		method := "power"
		if m.Joules != "" {
			method = "counter"
		}
		for i, r := range rs {
			if i > 0 && r.t == rs[i-1].t {
				return fmt.Errorf("%s:%d: device %s has a second row at %s (line %d)", name, r.line, d, fmtTime(r.t), rs[i-1].line)
			}
			s := record.PowerSample{T: r.t, Device: d, PowerW: r.w, EnergyJ: r.j, HasEnergy: r.hasJ, MemUsedBytes: -1}
			if !r.hasJ {
				method = "power"
			}
			if m.Watts == "" {
				k := max(i, 1)
				if k >= len(rs) {
					return fmt.Errorf("%s: device %s has one row: power from joules needs two", name, d)
				}
				a, b := rs[k-1], rs[k]
				s.PowerW = (b.j - a.j) / (b.t - a.t)
				if s.PowerW < 0 {
					return fmt.Errorf("%s:%d: device %s: the energy counter goes back from %s J (line %d) to %s J: a counter reset cannot give power",
						name, b.line, d, fmtT(a.j), a.line, fmtT(b.j))
				}
				if err := checkPower(s.PowerW); err != nil {
					return fmt.Errorf("%s:%d: device %s: the counter's increase from line %d: %w", name, b.line, d, a.line, err)
				}
			}
			rec.Samples = append(rec.Samples, s)
		}
		field := "csv:" + m.Watts
		if m.Watts == "" {
			field = "csv: increase of " + m.Joules + " over time"
		}
		rec.Devices = append(rec.Devices, record.Device{ID: d, Method: method, PowerField: field})
	}
	return nil
}

func parseRFC3339(s string) (float64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, err
	}
	return unixSeconds(t), nil
}
