package workflow

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time span in a profile: a Go duration string ("20s",
// "500ms") or a number of seconds.
type Duration time.Duration

// UnmarshalYAML accepts "1m30s" or a plain number of seconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected a duration such as \"20s\", got a %s", kindName(n))
	}
	v, err := parseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Seconds returns the duration in seconds.
func (d Duration) Seconds() float64 { return time.Duration(d).Seconds() }

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

func parseDuration(s string) (time.Duration, error) {
	if v, err := time.ParseDuration(s); err == nil {
		if v < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		return v, nil
	}
	if isNumber(s) {
		secs, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err == nil && secs >= 0 {
			return time.Duration(secs * float64(time.Second)), nil
		}
		return 0, fmt.Errorf("duration %q is negative or out of range", s)
	}
	return 0, fmt.Errorf("invalid duration %q (use e.g. \"20s\", \"500ms\" or a number of seconds)", s)
}

var numberRE = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`)

func isNumber(s string) bool { return numberRE.MatchString(strings.TrimSpace(s)) }

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

// decoder decodes YAML nodes strictly into structs, collecting every error
// with its position.
type decoder struct {
	file string
	errs ErrorList
	// rawParams are the resolved parameter values for ${} interpolation.
	rawParams map[string]any
}

func (d *decoder) errorf(n *yaml.Node, where, format string, args ...any) {
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Col: col, Where: where, Msg: fmt.Sprintf(format, args...)})
}

// yamlFields maps yaml keys to struct field indexes.
func yamlFields(t reflect.Type) (map[string]int, []string) {
	m := map[string]int{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name := strings.Split(tag, ",")[0]
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = i
		names = append(names, name)
	}
	sort.Strings(names)
	return m, names
}

var yamlNodeType = reflect.TypeOf(yaml.Node{})

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// strict decodes a mapping node into the struct out points to: unknown keys,
// duplicate keys and wrong types are errors at their positions. It returns
// the value node of each key present.
func (d *decoder) strict(n *yaml.Node, out any, where string) map[string]*yaml.Node {
	present := map[string]*yaml.Node{}
	if n == nil {
		return present
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, where, "expected a mapping, got a %s", kindName(n))
		return present
	}
	rv := reflect.ValueOf(out).Elem()
	fields, names := yamlFields(rv.Type())
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, dup := present[k.Value]; dup {
			d.errorf(k, where, "duplicate key %q", k.Value)
			continue
		}
		fi, ok := fields[k.Value]
		if !ok {
			d.errorf(k, where, "unknown key %q (valid keys: %s)", k.Value, strings.Join(names, ", "))
			continue
		}
		present[k.Value] = v
		w := k.Value
		if where != "" {
			w = where + "." + k.Value
		}
		d.value(v, rv.Field(fi), w)
	}
	return present
}

// value decodes one node into a field, recursing strictly into plain
// structs (and lists and maps of them).
func (d *decoder) value(v *yaml.Node, f reflect.Value, where string) {
	t := f.Type()
	if t == yamlNodeType {
		f.Set(reflect.ValueOf(*v))
		return
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		if err := v.Decode(f.Addr().Interface()); err != nil {
			d.errorf(v, where, "%s", cleanYAMLError(err))
		}
		return
	}
	switch {
	case t.Kind() == reflect.Struct:
		d.strict(v, f.Addr().Interface(), where)
		return
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && !reflect.PointerTo(t.Elem()).Implements(unmarshalerType):
		if v.Kind != yaml.SequenceNode {
			d.errorf(v, where, "expected a list, got a %s", kindName(v))
			return
		}
		s := reflect.MakeSlice(t, len(v.Content), len(v.Content))
		for i, item := range v.Content {
			d.strict(item, s.Index(i).Addr().Interface(), fmt.Sprintf("%s[%d]", where, i))
		}
		f.Set(s)
		return
	}
	if err := v.Decode(f.Addr().Interface()); err != nil {
		d.errorf(v, where, "%s", cleanYAMLError(err))
	}
}

var yamlLineRE = regexp.MustCompile(`^(yaml: )?(unmarshal errors:\s*)?(line \d+: )?`)

// cleanYAMLError drops yaml.v3's own line prefix: our error has the position.
func cleanYAMLError(err error) string {
	if te, ok := err.(*yaml.TypeError); ok && len(te.Errors) > 0 {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = yamlLineRE.ReplaceAllString(m, "")
		}
		return strings.Join(msgs, "; ")
	}
	return yamlLineRE.ReplaceAllString(strings.TrimSpace(err.Error()), "")
}
