package archive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	gojson "github.com/goccy/go-json"
	"github.com/joulebench/joulebench/archive/record"
)

// checkParameterCount refuses a run.json whose parameters object has more
// than MaxParameters members, before the document is decoded: each
// parameter would be decoded, then handed to the profile as an override
// (10^6 of them exhausted memory). data is valid JSON (checkVersion
// decoded it).
func checkParameterCount(path string, data []byte) error {
	var p struct {
		Parameters memberCount `json:"parameters"`
	}
	if err := gojson.Unmarshal(data, &p); err != nil {
		return documentError(path, data, err)
	}
	if n := int(p.Parameters); n > MaxParameters {
		return fmt.Errorf("%s: parameters has %d entries, more than the %d a run archive may have (a profile has a few dozen)", path, n, MaxParameters)
	}
	return nil
}

// memberCount decodes a JSON object as the number of its members (and
// anything else as 0: the full decode reports a wrong type), without
// decoding them.
type memberCount int

func (c *memberCount) UnmarshalJSON(b []byte) error {
	*c = 0
	if len(b) > 0 && b[0] == '{' {
		*c = memberCount(countMembers(b))
	}
	return nil
}

// metaDoc is run.json decoded: its path and its bytes, to place an error
// at the line and column of the value, and its record.
type metaDoc struct {
	path string
	data []byte
	m    *record.Meta
}

// at is the error msg at the value at keys (see valueOffset), or at the
// file when the value is not found; msg alone for a run.json not yet
// written (no path: CheckDevices).
func (d *metaDoc) at(msg string, keys ...any) error {
	if d.path == "" {
		return errors.New(msg)
	}
	if off := valueOffset(d.data, keys...); off >= 0 {
		line, col := lineCol(d.data, off)
		return fmt.Errorf("%s:%d:%d: %s", d.path, line, col, msg)
	}
	return fmt.Errorf("%s: %s", d.path, msg)
}

// The rules on run.json (metaRules), each returning the error that names
// where d breaks it, nil when d keeps to it.

// countsNotNegative: the counts of run.json are ≥ 0.
func countsNotNegative(d *metaDoc) error {
	m := d.m
	for _, f := range []struct {
		keys []any
		v    int64
	}{
		{[]any{"profile", "version"}, int64(m.Profile.Version)},
		{[]any{"request_set", "count"}, int64(m.RequestSet.Count)},
		{[]any{"request_set", "unique_prompts"}, int64(m.RequestSet.Unique)},
		{[]any{"engine", "context_length"}, int64(m.Engine.ContextLength)},
		{[]any{"engine", "tensor_parallel"}, int64(m.Engine.TensorParallel)},
		{[]any{"host", "cpus"}, int64(m.Host.CPUs)},
	} {
		if f.v < 0 {
			return d.at(fmt.Sprintf("%s %d is negative", keyPath(f.keys), f.v), f.keys...)
		}
	}
	if o := m.RequestSet.Origin; o != nil && o.Size < 0 {
		return d.at(fmt.Sprintf("request_set.origin.size %d is negative", o.Size), "request_set", "origin", "size")
	}
	return nil
}

// intervalNotNegative: telemetry.interval_s is ≥ 0 (not NaN).
func intervalNotNegative(d *metaDoc) error {
	if iv := d.m.Telemetry.IntervalS; iv < 0 || math.IsNaN(iv) {
		return d.at(fmt.Sprintf("telemetry.interval_s %v is negative", iv), "telemetry", "interval_s")
	}
	return nil
}

// loadNotNegative: the load object's counts and rates are ≥ 0 (rates not
// NaN).
func loadNotNegative(d *metaDoc) error {
	l := d.m.Load
	if l == nil {
		return nil
	}
	for _, f := range l.Counts() {
		if f.V < 0 {
			return d.at(fmt.Sprintf("load.%s %d is negative", f.Key, f.V), "load", f.Key)
		}
	}
	for _, f := range l.Rates() {
		if f.V != nil && (*f.V < 0 || math.IsNaN(*f.V)) {
			return d.at(fmt.Sprintf("load.%s %v is negative", f.Key, *f.V), "load", f.Key)
		}
	}
	return nil
}

// statusIsARunStatus: status is one of the four a run can have.
func statusIsARunStatus(d *metaDoc) error {
	switch d.m.Status {
	case record.StatusRunning, record.StatusComplete, record.StatusFailed, record.StatusInterrupted:
		return nil
	}
	return d.at(fmt.Sprintf("status %q is not a run status (running, complete, failed or interrupted)", d.m.Status), "status")
}

// completeRunEndedEveryStage: a complete run has no open stage (a stage
// that never ended did not complete).
func completeRunEndedEveryStage(d *metaDoc) error {
	if d.m.Status != record.StatusComplete {
		return nil
	}
	for i, st := range d.m.Stages {
		if st.Open {
			return d.at(fmt.Sprintf("status is complete but stage %q has no end; a run that completed ended every stage", st.Name), "stages", i)
		}
	}
	return nil
}

// devicesInTheirDomain: each listed device's domain is one of Domains (or
// absent), and its power_limit_w a finite number from 0 to the physical
// bound of its domain (record.MaxPowerW), so that a limit cannot switch
// the profiles' power checks off.
func devicesInTheirDomain(d *metaDoc) error {
	for i, dev := range d.m.Hardware.Devices {
		maxW, ok := record.MaxPowerW(dev.Domain)
		if !ok {
			return d.at(fmt.Sprintf("hardware.devices[%d].domain %q is not a power domain (gpu, cpu, dram or node)", i, dev.Domain), "hardware", "devices", i, "domain")
		}
		if l := dev.PowerLimitW; !(l >= 0 && l <= maxW) {
			return d.at(fmt.Sprintf("hardware.devices[%d].power_limit_w %v W is outside [0, %s], the most one %s device draws", i, l, ft(maxW), dev.DomainOrGPU()), "hardware", "devices", i, "power_limit_w")
		}
	}
	return nil
}

// runSpanInOrder: started_at ≥ 0, and ended_at, when set, not before it.
func runSpanInOrder(d *metaDoc) error {
	m := d.m
	if m.StartedAt < 0 {
		return d.at(fmt.Sprintf("started_at %s is negative; times are Unix seconds", ft(m.StartedAt)), "started_at")
	}
	if m.EndedAt != 0 && m.EndedAt < m.StartedAt {
		return d.at(fmt.Sprintf("ended_at %s is before started_at %s", ft(m.EndedAt), ft(m.StartedAt)), "ended_at")
	}
	return nil
}

// stagesAndEventsInRun: every stage's start and (closed) end, and every
// event's t, lie in the run's window, and no stage ends before it starts.
func stagesAndEventsInRun(d *metaDoc) error {
	w := runWindow(d.m)
	for i, st := range d.m.Stages {
		if msg := w.check("start", st.Start); msg != "" {
			return d.at(fmt.Sprintf("stage %q: %s", st.Name, msg), "stages", i, "start")
		}
		if st.Open {
			continue
		}
		if msg := w.check("end", st.End); msg != "" {
			return d.at(fmt.Sprintf("stage %q: %s", st.Name, msg), "stages", i, "end")
		}
		if st.End < st.Start {
			return d.at(fmt.Sprintf("stage %q ends before it starts (end %s, start %s, %.6g s earlier)", st.Name, ft(st.End), ft(st.Start), st.Start-st.End), "stages", i, "end")
		}
	}
	for i, ev := range d.m.Events {
		if msg := w.check("t", ev.T); msg != "" {
			return d.at(fmt.Sprintf("event %q: %s", ev.Name, msg), "events", i, "t")
		}
	}
	return nil
}

// keyPath writes keys as a dotted field path.
func keyPath(keys []any) string {
	var b bytes.Buffer
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('.')
		}
		fmt.Fprint(&b, k)
	}
	return b.String()
}

// valueOffset is the byte offset in the JSON document data of the value
// at keys (object member names and array indexes, from the top), -1 when
// there is none. It is called only to place an error, so it uses the
// standard library's token reader.
func valueOffset(data []byte, keys ...any) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	for depth, key := range keys {
		t, err := dec.Token()
		if err != nil {
			return -1
		}
		switch k := key.(type) {
		case string:
			if t != json.Delim('{') {
				return -1
			}
			found := false
			for dec.More() {
				name, err := dec.Token()
				if err != nil {
					return -1
				}
				if name == k {
					found = true
					break
				}
				var skip json.RawMessage
				if dec.Decode(&skip) != nil {
					return -1
				}
			}
			if !found {
				return -1
			}
		case int:
			if t != json.Delim('[') {
				return -1
			}
			for i := 0; i < k; i++ {
				var skip json.RawMessage
				if !dec.More() || dec.Decode(&skip) != nil {
					return -1
				}
			}
			if !dec.More() {
				return -1
			}
		}
		if depth == len(keys)-1 {
			off := int(dec.InputOffset())
			for off < len(data) && (isJSONSpace(data[off]) || data[off] == ':' || data[off] == ',') {
				off++
			}
			return off
		}
	}
	return -1
}
