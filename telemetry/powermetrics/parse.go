package powermetrics

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/internal/num"
)

// Sample is one powermetrics sample of the GPU: the mean power over the
// sampled interval and the energy of that interval, and/or the thermal
// pressure level.
type Sample struct {
	// HasPower is false for a thermal-only sample (the text stream's
	// thermal section is emitted on its own).
	HasPower bool
	// PowerW is the mean GPU power over the interval.
	PowerW float64
	// EnergyJ is the GPU energy of the interval: the reported energy when
	// the output has one (plist gpu_energy, mJ), else PowerW × ElapsedS.
	EnergyJ float64
	// ElapsedS is the interval length (0 when the output did not say; then
	// EnergyJ is 0 too).
	ElapsedS float64
	// Field says where the power came from: "gpu.gpu_energy",
	// "processor.gpu_energy", "processor.gpu_power" (plist) or "GPU Power"
	// (text).
	Field string
	// Thermal is the thermal pressure level ("Nominal", "Moderate", ...)
	// when the thermal sampler ran, else "".
	Thermal string
	// HWModel is the machine model ("Mac14,6") when the output has it.
	HWModel string
}

// Formats of the powermetrics output.
const (
	FormatPlist = "plist"
	FormatText  = "text"
)

// Parse reads a powermetrics output stream in the given format and calls
// emit for every complete GPU sample, as soon as it is complete. It returns
// at EOF (nil) or on a read error or an emit error. Documents without any
// GPU power are skipped; malformed plist documents are an error.
func Parse(r io.Reader, format string, emit func(Sample) error) error {
	switch format {
	case FormatPlist:
		return parsePlistStream(r, emit)
	case FormatText:
		return parseTextStream(r, emit)
	}
	return fmt.Errorf("powermetrics: unknown format %q (want %s or %s)", format, FormatPlist, FormatText)
}

// ---- text ------------------------------------------------------------

var (
	// *** Sampled system activity (Tue Jun  4 10:12:01 2024 +0200) (503.21ms elapsed) ***
	headerRE  = regexp.MustCompile(`^\*\*\* Sampled system activity .*\(([0-9.]+)\s*ms elapsed\)`)
	gpuPowRE  = regexp.MustCompile(`^GPU Power:\s*([0-9.]+)\s*(mW|W)\b`)
	thermalRE = regexp.MustCompile(`^Current pressure level:\s*(\S+)`)
	modelRE   = regexp.MustCompile(`^Machine model:\s*(\S+)`)
)

// parseTextStream emits a power sample at each "GPU Power:" line, with the
// elapsed time of the current "*** Sampled system activity" header, and a
// thermal-only sample at each "Current pressure level:" line, so that
// neither waits for the next header.
func parseTextStream(r io.Reader, emit func(Sample) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var elapsed float64
	var model string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := headerRE.FindStringSubmatch(line); m != nil {
			ms, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				return fmt.Errorf("powermetrics: bad elapsed time in %q", line)
			}
			elapsed = ms / 1000
			continue
		}
		if m := modelRE.FindStringSubmatch(line); m != nil {
			model = m[1]
			continue
		}
		if m := thermalRE.FindStringSubmatch(line); m != nil {
			if err := emit(Sample{Thermal: m[1], HWModel: model}); err != nil {
				return err
			}
			continue
		}
		m := gpuPowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		p, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return fmt.Errorf("powermetrics: bad GPU power in %q", line)
		}
		if m[2] == "mW" {
			p /= 1000
		}
		s := Sample{HasPower: true, PowerW: p, ElapsedS: elapsed, EnergyJ: p * elapsed, Field: "GPU Power", HWModel: model}
		if err := emit(s); err != nil {
			return err
		}
	}
	return sc.Err()
}

// ---- plist -----------------------------------------------------------

var plistEnd = []byte("</plist>")

// splitPlist splits the stream into plist documents (powermetrics -f plist
// writes one per sample, separated by a NUL byte).
func splitPlist(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.Index(data, plistEnd); i >= 0 {
		end := i + len(plistEnd)
		return end, data[:end], nil
	}
	if atEOF {
		// Whatever is left is a partial document (the process was
		// stopped mid-write) or separators: drop it.
		return len(data), nil, nil
	}
	return 0, nil, nil
}

func parsePlistStream(r io.Reader, emit func(Sample) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	sc.Split(splitPlist)
	for sc.Scan() {
		doc := bytes.TrimLeft(sc.Bytes(), "\x00 \t\r\n")
		if len(doc) == 0 {
			continue
		}
		s, ok, err := ParsePlistDocument(doc)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := emit(s); err != nil {
			return err
		}
	}
	return sc.Err()
}

// ParsePlistDocument reads one powermetrics plist document. ok is false
// when it holds neither GPU power nor a thermal level.
func ParsePlistDocument(doc []byte) (s Sample, ok bool, err error) {
	root, err := decodePlist(doc)
	if err != nil {
		return Sample{}, false, fmt.Errorf("powermetrics: plist: %w", err)
	}
	top, isDict := root.(map[string]any)
	if !isDict {
		return Sample{}, false, fmt.Errorf("powermetrics: plist: top level is not a dict")
	}
	if ns, ok := num.Float(top["elapsed_ns"]); ok && ns > 0 {
		s.ElapsedS = ns / 1e9
	}
	s.Thermal, _ = top["thermal_pressure"].(string)
	s.HWModel, _ = top["hw_model"].(string)
	gpu, _ := top["gpu"].(map[string]any)
	proc, _ := top["processor"].(map[string]any)
	energyMJ, hasEnergy := num.Float(gpu["gpu_energy"])
	s.Field = "gpu.gpu_energy"
	if !hasEnergy {
		energyMJ, hasEnergy = num.Float(proc["gpu_energy"])
		s.Field = "processor.gpu_energy"
	}
	s.HasPower = true
	switch mw, hasPower := num.Float(proc["gpu_power"]); {
	case hasEnergy && s.ElapsedS > 0:
		s.EnergyJ = energyMJ / 1000
		s.PowerW = s.EnergyJ / s.ElapsedS
	case hasPower:
		s.Field = "processor.gpu_power"
		s.PowerW = mw / 1000
		s.EnergyJ = s.PowerW * s.ElapsedS
	default:
		s.HasPower, s.Field = false, ""
		if s.Thermal == "" {
			return Sample{}, false, nil
		}
	}
	if s.PowerW < 0 || s.EnergyJ < 0 {
		return Sample{}, false, fmt.Errorf("powermetrics: plist: negative GPU power/energy (%s)", s.Field)
	}
	return s, true, nil
}

// decodePlist decodes an XML property list into dict → map[string]any,
// array → []any, integer → int64, real → float64, true/false → bool,
// string/date/data → string.
func decodePlist(doc []byte) (any, error) {
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := d.Token()
		if err != nil {
			if err == io.EOF {
				return nil, fmt.Errorf("no value")
			}
			return nil, err
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local == "plist" {
			continue
		}
		return decodeValue(d, se, 0)
	}
}

func decodeValue(d *xml.Decoder, se xml.StartElement, depth int) (any, error) {
	if depth > 64 {
		return nil, fmt.Errorf("nested too deep")
	}
	switch se.Name.Local {
	case "dict":
		m := map[string]any{}
		for {
			tok, err := d.Token()
			if err != nil {
				return nil, err
			}
			switch t := tok.(type) {
			case xml.EndElement:
				return m, nil
			case xml.StartElement:
				if t.Name.Local != "key" {
					return nil, fmt.Errorf("<%s> where a <key> was expected", t.Name.Local)
				}
				k, err := text(d)
				if err != nil {
					return nil, err
				}
				vse, err := nextStart(d)
				if err != nil {
					return nil, fmt.Errorf("key %q: %w", k, err)
				}
				v, err := decodeValue(d, vse, depth+1)
				if err != nil {
					return nil, fmt.Errorf("key %q: %w", k, err)
				}
				m[k] = v
			}
		}
	case "array":
		var a []any
		for {
			tok, err := d.Token()
			if err != nil {
				return nil, err
			}
			switch t := tok.(type) {
			case xml.EndElement:
				return a, nil
			case xml.StartElement:
				v, err := decodeValue(d, t, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
		}
	case "integer":
		s, err := text(d)
		if err != nil {
			return nil, err
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
			return n, nil
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("bad integer %q", s)
		}
		return f, nil
	case "real":
		s, err := text(d)
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("bad real %q", s)
		}
		return f, nil
	case "true", "false":
		if _, err := text(d); err != nil {
			return nil, err
		}
		return se.Name.Local == "true", nil
	case "string", "date", "data":
		return text(d)
	}
	return nil, fmt.Errorf("unknown plist element <%s>", se.Name.Local)
}

// text reads character data up to the end of the current element.
func text(d *xml.Decoder) (string, error) {
	var b strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.CharData:
			b.Write(t)
		case xml.EndElement:
			return b.String(), nil
		case xml.StartElement:
			return "", fmt.Errorf("unexpected <%s> in text", t.Name.Local)
		}
	}
}

func nextStart(d *xml.Decoder) (xml.StartElement, error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return xml.StartElement{}, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return t, nil
		case xml.EndElement:
			return xml.StartElement{}, fmt.Errorf("missing value")
		}
	}
}
