package archive

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/joulebench/joulebench/archive/record"
	"io"
	"math"
	"strconv"
	"strings"
)

// powerHeader is the header line of power.csv, format v1.
const powerHeader = "t,device,power_w,energy_j,mem_used_bytes"

// powerColumns are the v1 columns of power.csv, in order.
var powerColumns = [...]string{"t", "device", "power_w", "energy_j", "mem_used_bytes"}

// checkPowerSample says why s cannot be written to power.csv, or nil.
func checkPowerSample(s *record.PowerSample) error {
	switch {
	case s.Device == "":
		return fmt.Errorf("sample at t=%v has no device", s.T)
	case strings.ContainsAny(s.Device, "\r\n"):
		return fmt.Errorf("device %q contains a line break", s.Device)
	case !finite(s.T):
		return fmt.Errorf("device %s: t %v is not a finite number", s.Device, s.T)
	case !finite(s.PowerW):
		return fmt.Errorf("device %s at t=%v: power_w %v is not a finite number", s.Device, s.T, s.PowerW)
	case s.HasEnergy && !finite(s.EnergyJ):
		return fmt.Errorf("device %s at t=%v: energy_j %v is not a finite number", s.Device, s.T, s.EnergyJ)
	}
	return nil
}

// appendPowerRow appends one power.csv row, newline included. Floats use the
// shortest decimal that reads back exactly, without exponent.
func appendPowerRow(b []byte, s *record.PowerSample) []byte {
	b = strconv.AppendFloat(b, s.T, 'f', -1, 64)
	b = append(b, ',')
	b = appendCSVField(b, s.Device)
	b = append(b, ',')
	b = strconv.AppendFloat(b, s.PowerW, 'f', -1, 64)
	b = append(b, ',')
	if s.HasEnergy {
		b = strconv.AppendFloat(b, s.EnergyJ, 'f', -1, 64)
	}
	b = append(b, ',')
	if s.MemUsedBytes >= 0 {
		b = strconv.AppendInt(b, s.MemUsedBytes, 10)
	}
	return append(b, '\n')
}

// appendCSVField appends a text field, quoted (RFC 4180) only when it holds a
// comma or a double quote.
func appendCSVField(b []byte, s string) []byte {
	if !strings.ContainsAny(s, ",\"") {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// ReadPowerCSV reads power.csv, format v1. name is used in error messages
// ("power.csv" when empty).
//
// The header must start with the v1 columns t,device,power_w,energy_j,
// mem_used_bytes, in that order; further columns (from a newer writer) are
// allowed and their cells ignored. Every row must have as many cells as the
// header. An empty energy_j cell gives HasEnergy false; an empty
// mem_used_bytes cell gives MemUsedBytes -1. Numbers must be finite. Fields
// may be quoted as in RFC 4180 but must not span lines. Every row must end
// with a newline: a last row without one is reported as cut off (a crash
// mid-write), never read as if complete. A file with no bytes at all has no
// samples. A row repeated (the same sample twice: a line written twice) is
// an error naming both lines, and so is a line longer than MaxLineBytes.
//
// Times are Unix seconds (≥ 0) and a device's times never go back (a
// row may share its time with the one before); power_w and energy_j are
// never negative. Load also holds the times to the run's span (run.json's
// started_at and ended_at).
//
// Errors are *LineError values: "power.csv:LINE: column energy_j: invalid
// number \"x\"".
func ReadPowerCSV(r io.Reader, name string) ([]record.PowerSample, error) {
	if name == "" {
		name = PowerFile
	}
	d := decodePowerCSV(r, name)
	if err := d.validate(powerRules(loneFacts(), d), nil); err != nil {
		return nil, err
	}
	return d.rows, nil
}

// decodePowerCSV decodes power.csv into samples: the header, then one
// sample per row, each row's syntax and numbers (finite). It stops at the
// first row that does not decode (d.err), keeping the samples before it.
// The rules (time order, bounds, the facts of run.json) are the validation
// phase's (powerRules).
func decodePowerCSV(r io.Reader, name string) *decoded[record.PowerSample] {
	d := &decoded[record.PowerSample]{name: name, rows: []record.PowerSample{}, starts: []int{0}, lines: [][]int{nil}}
	lr := newLineReader(r)
	p := powerParser{devices: map[string]string{}}
	ncols := 0
	for {
		line, complete, err := lr.next()
		if err == io.EOF {
			return d // a file with no bytes at all has no samples
		}
		if err != nil {
			var lerr *LineError
			if errors.As(err, &lerr) {
				lerr.File = name
				d.err = lerr
			} else {
				d.err = &LineError{File: name, Line: lr.no + 1, Msg: "read error: " + err.Error(), Err: err}
			}
			return d
		}
		if !complete {
			d.err = &LineError{File: name, Line: lr.no, Msg: "last line is incomplete (no newline at the end; the file was probably cut off mid-write by a crash); delete the partial line, or end it with a newline if it is complete"}
			return d
		}
		if lr.no == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // a UTF-8 BOM from a spreadsheet
			if ncols, err = checkPowerHeader(line); err != nil {
				d.err = &LineError{File: name, Line: 1, Msg: err.Error()}
				return d
			}
			continue
		}
		if len(line) == 0 {
			continue // a blank line holds no sample
		}
		s, err := p.parseRow(line, ncols)
		if err != nil {
			d.err = &LineError{File: name, Line: lr.no, Msg: err.Error()}
			return d
		}
		d.rows = append(grow(d.rows, lr), s)
		d.lines[0] = append(grow(d.lines[0], lr), lr.no)
	}
}

// checkPowerHeader checks the header line and returns its column count.
func checkPowerHeader(line []byte) (int, error) {
	fields, err := splitCSVLine(line, nil)
	if err != nil {
		return 0, fmt.Errorf("header: %v", err)
	}
	ok := len(fields) >= len(powerColumns)
	for i := 0; ok && i < len(powerColumns); i++ {
		ok = string(fields[i]) == powerColumns[i]
	}
	if !ok {
		return 0, fmt.Errorf("header is %q, want %q (format v1; extra columns may follow)", line, powerHeader)
	}
	return len(fields), nil
}

// powerParser parses power.csv rows, sharing one string per device name.
type powerParser struct {
	devices map[string]string
	fields  [][]byte
}

func (p *powerParser) parseRow(line []byte, ncols int) (record.PowerSample, error) {
	var s record.PowerSample
	var err error
	p.fields, err = splitCSVLine(line, p.fields[:0])
	if err != nil {
		return s, err
	}
	f := p.fields
	if len(f) != ncols {
		return s, fmt.Errorf("expected %d columns (as in the header), got %d", ncols, len(f))
	}
	if s.T, err = parseCell(f[0], "t"); err != nil {
		return s, err
	}
	if len(f[1]) == 0 {
		return s, errors.New("column device: empty")
	}
	dev, ok := p.devices[string(f[1])]
	if !ok {
		dev = string(f[1])
		p.devices[dev] = dev
	}
	s.Device = dev
	if s.PowerW, err = parseCell(f[2], "power_w"); err != nil {
		return s, err
	}
	if len(f[3]) > 0 {
		if s.EnergyJ, err = parseCell(f[3], "energy_j"); err != nil {
			return s, err
		}
		s.HasEnergy = true
	}
	s.MemUsedBytes = -1
	if len(f[4]) > 0 {
		v, err := strconv.ParseInt(string(f[4]), 10, 64)
		if err != nil || v < 0 {
			return s, fmt.Errorf("column mem_used_bytes: invalid byte count %q (want a whole number ≥ 0, or an empty cell)", f[4])
		}
		s.MemUsedBytes = v
	}
	return s, nil
}

// parseCell parses a required, finite float cell.
func parseCell(cell []byte, col string) (float64, error) {
	if len(cell) == 0 {
		return 0, fmt.Errorf("column %s: empty (a number is required)", col)
	}
	// A cell the writer wrote is a JSON number: parseNumber reads it,
	// correctly rounded as strconv does, and, with the rest of the row's
	// bytes in view (the cell is a subslice of it), a time the fast way.
	// Anything else strconv judges (it also reads "1.", "+1", "Inf").
	if v, next, ok := parseNumber(cell[:cap(cell)], 0); ok && next == len(cell) {
		return v, nil
	}
	v, err := strconv.ParseFloat(string(cell), 64)
	if err != nil {
		return 0, fmt.Errorf("column %s: invalid number %q", col, cell)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("column %s: invalid number %q (must be finite)", col, cell)
	}
	return v, nil
}

// splitCSVLine splits one CSV line into dst. Unquoted fields are subslices
// of line; quoted fields (RFC 4180, "" for a quote) are unescaped copies.
func splitCSVLine(line []byte, dst [][]byte) ([][]byte, error) {
	if bytes.IndexByte(line, '"') < 0 {
		for {
			i := bytes.IndexByte(line, ',')
			if i < 0 {
				return append(dst, line), nil
			}
			dst = append(dst, line[:i])
			line = line[i+1:]
		}
	}
	for col := 1; ; col++ {
		if len(line) > 0 && line[0] == '"' {
			var field []byte
			i := 1
			for {
				j := bytes.IndexByte(line[i:], '"')
				if j < 0 {
					return nil, fmt.Errorf("field %d: quoted field has no closing quote", col)
				}
				field = append(field, line[i:i+j]...)
				i += j + 1
				if i < len(line) && line[i] == '"' {
					field = append(field, '"')
					i++
					continue
				}
				break
			}
			dst = append(dst, field)
			line = line[i:]
			if len(line) == 0 {
				return dst, nil
			}
			if line[0] != ',' {
				return nil, fmt.Errorf("field %d: unexpected %q after closing quote", col, line[0])
			}
			line = line[1:]
			continue
		}
		i := bytes.IndexByte(line, ',')
		if i < 0 {
			i = len(line)
		}
		if bytes.IndexByte(line[:i], '"') >= 0 {
			return nil, fmt.Errorf("field %d: stray quote in unquoted field %q", col, line[:i])
		}
		dst = append(dst, line[:i])
		if i == len(line) {
			return dst, nil
		}
		line = line[i+1:]
	}
}
