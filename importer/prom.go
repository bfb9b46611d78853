package importer

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
)

// PromOptions configure a Prometheus import.
type PromOptions struct {
	// DeviceLabel is the label whose value names each series' device;
	// empty: the first of gpu, device, instance that every series has
	// with distinct values, else s0, s1, ….
	DeviceLabel string
	// Unit is the unit of the values: "watts" (default, e.g.
	// DCGM_FI_DEV_POWER_USAGE), "joules" or "millijoules" (a cumulative
	// counter such as DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, in mJ).
	Unit string
}

// promSeries is one series of a range vector.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// promMatrix is the data of a query_range answer.
type promMatrix struct {
	ResultType string       `json:"resultType"`
	Result     []promSeries `json:"result"`
}

// Prometheus reads a range vector: the whole answer of /api/v1/query_range
// ({"status":"success","data":{"resultType":"matrix","result":[…]}}), its
// data object, or the bare list of series. Each value is [unix_seconds,
// "value"]; "NaN" and other non-finite values are failed samples (gaps,
// counted). A counter's power is its increase over time between a
// device's successive samples (the first sample takes the second's).
func Prometheus(r io.Reader, name string, opt PromOptions) (*Recording, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	series, err := decodeMatrix(raw, name)
	if err != nil {
		return nil, err
	}
	scale, counter := 1.0, false
	switch strings.ToLower(opt.Unit) {
	case "", "watts", "w":
	case "joules", "j":
		counter = true
	case "millijoules", "mj":
		scale, counter = 1e-3, true
	default:
		return nil, fmt.Errorf("unit %q: want watts, joules or millijoules", opt.Unit)
	}
	devs, label, err := deviceNames(series, opt.DeviceLabel, name)
	if err != nil {
		return nil, err
	}
	rec := &Recording{Format: "prometheus", Notes: []string{"values in " + orStr(opt.Unit, "watts"), "device from " + label}}
	for i, s := range series {
		if err := rec.addSeries(s, i, devs[i], scale, counter, name); err != nil {
			return nil, err
		}
	}
	if len(rec.Samples) == 0 {
		return nil, fmt.Errorf("%s: no finite values in %d series", name, len(series))
	}
	return rec, nil
}

func decodeMatrix(raw []byte, name string) ([]promSeries, error) {
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	trimmed := strings.TrimSpace(string(raw))
	if strings.HasPrefix(trimmed, "[") {
		var s []promSeries
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%s: not a list of series: %w", name, err)
		}
		return s, nil
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, fmt.Errorf("%s: invalid JSON: %w", name, err)
	}
	if env.Status != "" && env.Status != "success" {
		return nil, fmt.Errorf("%s: the query failed (status %q): %s", name, env.Status, env.Error)
	}
	body := raw
	if len(env.Data) > 0 {
		body = env.Data
	}
	var m promMatrix
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%s: not a range vector: %w", name, err)
	}
	if m.ResultType != "matrix" {
		return nil, fmt.Errorf("%s: resultType is %q, want \"matrix\" (a query_range answer or a range-vector export)", name, m.ResultType)
	}
	return m.Result, nil
}

// deviceNames names each series' device.
func deviceNames(series []promSeries, label, name string) ([]string, string, error) {
	pick := func(l string) ([]string, bool) {
		out := make([]string, len(series))
		for i, s := range series {
			v, ok := s.Metric[l]
			if !ok || v == "" || slices.Contains(out[:i], v) {
				return nil, false
			}
			out[i] = v
		}
		return out, true
	}
	if label != "" {
		if out, ok := pick(label); ok {
			return out, "label " + label, nil
		}
		return nil, "", fmt.Errorf("%s: not every series has a distinct label %q", name, label)
	}
	for _, l := range []string{"gpu", "device", "instance"} {
		if out, ok := pick(l); ok {
			return out, "label " + l, nil
		}
	}
	out := make([]string, len(series))
	for i := range out {
		out[i] = "s" + strconv.Itoa(i)
	}
	return out, "series order (no gpu, device or instance label told them apart)", nil
}

func (rec *Recording) addSeries(s promSeries, idx int, dev string, scale float64, counter bool, name string) error {
	where := func(j int) string {
		return fmt.Sprintf("%s: series %d %s, point %d", name, idx+1, labelText(s.Metric), j+1)
	}
	type pt struct{ t, v float64 }
	var pts []pt
	for j, p := range s.Values {
		t, ok := p[0].(float64)
		if !ok || math.IsNaN(t) || math.IsInf(t, 0) {
			return fmt.Errorf("%s: time %v is not a number", where(j), p[0])
		}
		if err := checkTime(t); err != nil {
			return fmt.Errorf("%s: %w", where(j), err)
		}
		str, ok := p[1].(string)
		if !ok {
			return fmt.Errorf("%s: value %v is not a string (Prometheus writes values as strings)", where(j), p[1])
		}
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return fmt.Errorf("%s: value %q is not a number", where(j), str)
		}
		if math.IsNaN(v) { // no value at that time: a gap
			rec.FailedSamples++
			continue
		}
		if math.IsInf(v, 0) {
			return fmt.Errorf("%s: value %q is not finite", where(j), str)
		}
		if j > 0 && len(pts) > 0 && t <= pts[len(pts)-1].t {
			return fmt.Errorf("%s: time %s does not increase", where(j), fmtTime(t))
		}
		pts = append(pts, pt{t, v * scale})
	}
	method, field := "power", "prometheus:"+s.Metric["__name__"]
	for j, p := range pts {
		smp := record.PowerSample{T: p.t, Device: dev, PowerW: p.v, MemUsedBytes: -1}
		if counter {
			if len(pts) < 2 {
				return fmt.Errorf("%s: series %d has one value: power from a counter needs two", name, idx+1)
			}
			k := max(j, 1)
			a, b := pts[k-1], pts[k]
			smp.PowerW, smp.EnergyJ, smp.HasEnergy = (b.v-a.v)/(b.t-a.t), p.v, true
			if smp.PowerW < 0 {
				return fmt.Errorf("%s: the counter goes back (%s to %s J): a reset cannot give power", where(k), fmtT(a.v), fmtT(b.v))
			}
			if err := checkPower(smp.PowerW); err != nil {
				return fmt.Errorf("%s: the counter's increase: %w", where(k), err)
			}
			method = "counter"
		} else if err := checkPower(p.v); err != nil {
			return fmt.Errorf("%s: %w", where(j), err)
		}
		rec.Samples = append(rec.Samples, smp)
	}
	rec.Devices = append(rec.Devices, record.Device{ID: dev, Name: labelText(s.Metric), Method: method, PowerField: field})
	return nil
}

func labelText(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+strconv.Quote(m[k]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
