package compare

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
)

// metaDoc is run.json as a generic JSON document (nil if it cannot be
// encoded, which a Meta read from an archive always can).
func metaDoc(m record.Meta) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	var doc map[string]any
	if json.Unmarshal(b, &doc) != nil {
		return nil
	}
	return doc
}

// lookup follows a dotted path in doc; nil when absent.
func lookup(doc map[string]any, path string) any {
	var cur any = doc
	for _, k := range strings.Split(path, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = obj[k]
	}
	return cur
}

// flatten writes v under path: an object as each of its fields (dotted
// paths, recursively), anything else as canonical JSON. An empty object
// writes nothing; nil writes nothing (an absent field equals an absent
// field).
func flatten(path string, v any, out map[string]string) {
	switch x := v.(type) {
	case nil:
	case map[string]any:
		for k, e := range x {
			flatten(path+"."+k, e, out)
		}
	default:
		b, _ := json.Marshal(x)
		out[path] = string(b)
	}
}

// configurationOf reads the configuration fields of a run: setting holds
// every field of configuration.fields that is not a load field, load the
// load fields.
func (p *Profile) configurationOf(m record.Meta) (setting, load map[string]string) {
	setting, load = map[string]string{}, map[string]string{}
	doc := metaDoc(m)
	if doc == nil {
		return setting, load
	}
	all := map[string]string{}
	for _, f := range p.Configuration.Fields {
		flatten(f, lookup(doc, f), all)
	}
	for _, f := range p.Configuration.Load {
		flatten(f, lookup(doc, f), all)
	}
	for k, v := range all {
		if p.isLoad(k) {
			load[k] = v
		} else {
			setting[k] = v
		}
	}
	if m.Measure != nil {
		load = measuredLoad(m.Measure)
	}
	return setting, load
}

// measuredLoad is the load of a run joulebench measure made: what
// generated it (the command line, or the window of live traffic), not
// the profile's load parameters, which measure never used.
func measuredLoad(mi *record.MeasureInfo) map[string]string {
	load := map[string]string{}
	flatten("measure.load", mi.Load, load)
	if len(mi.Command) > 0 {
		flatten("measure.command", strings.Join(mi.Command, " "), load)
	}
	return load
}

// isLoad reports whether field is a load field or inside one.
func (p *Profile) isLoad(field string) bool {
	for _, l := range p.Configuration.Load {
		if field == l || strings.HasPrefix(field, l+".") {
			return true
		}
	}
	return false
}

// configurationColumns finds the configuration and load fields whose
// values differ between runs of the same scenario, model and engine, and
// sets each run's Configuration and Load to its values of them.
func (p *Profile) configurationColumns(rows []RunRow) (cols, loadCols []string) {
	type key struct{ scenario, model, engine string }
	groups := map[key][]*RunRow{}
	for i := range rows {
		r := &rows[i]
		k := key{r.Scenario, r.Model, r.Engine}
		groups[k] = append(groups[k], r)
	}
	varying := func(get func(*RunRow) map[string]string) []string {
		set := map[string]bool{}
		for _, g := range groups {
			fields := map[string]bool{}
			for _, r := range g {
				for f := range get(r) {
					fields[f] = true
				}
			}
			for f := range fields {
				first := get(g[0])[f]
				for _, r := range g[1:] {
					if get(r)[f] != first {
						set[f] = true
						break
					}
				}
			}
		}
		return slices.Sorted(maps.Keys(set))
	}
	cols = varying(func(r *RunRow) map[string]string { return r.setting })
	loadCols = varying(func(r *RunRow) map[string]string { return r.load })
	for i := range rows {
		r := &rows[i]
		r.Configuration = fieldValues(cols, r.setting)
		r.Load = fieldValues(loadCols, r.load)
	}
	return cols, loadCols
}

func fieldValues(fields []string, vals map[string]string) []FieldValue {
	if len(fields) == 0 {
		return nil
	}
	out := make([]FieldValue, len(fields))
	for i, f := range fields {
		out[i] = FieldValue{Field: f, Value: display(vals[f])}
	}
	return out
}

// display shows a canonical JSON value: a string without its quotes (a
// sha256 as its first 12 hex digits), anything else as it is; "-" for an
// absent one.
func display(v string) string {
	var s string
	if json.Unmarshal([]byte(v), &s) == nil {
		if sha256Hex.MatchString(s) {
			return s[:12]
		}
		return orDash(s)
	}
	return orDash(v)
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// configKey identifies a run's configuration and load point: every
// configuration field, not only those shown.
func configKey(r *RunRow) string {
	var b strings.Builder
	b.WriteString(r.method.key + "\x01")
	for _, m := range []map[string]string{r.setting, r.load} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			b.WriteString(k + "=" + m[k] + "\x00")
		}
		b.WriteString("\x01")
	}
	return b.String()
}

// columnName is how a configuration field is headed: its path without
// "parameters." (max_tokens, engine.precision).
func columnName(field string) string { return strings.TrimPrefix(field, "parameters.") }
