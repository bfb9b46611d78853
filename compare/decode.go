package compare

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/joulebench/joulebench/workflow"
)

// decoder decodes YAML nodes strictly into structs (unknown keys, duplicate
// keys and wrong types are errors at their positions), collecting every
// error.
type decoder struct {
	file string
	errs workflow.ErrorList
}

func (d *decoder) errorf(n *yaml.Node, where, format string, args ...any) {
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	d.errs = append(d.errs, &workflow.Error{File: d.file, Line: line, Col: col, Where: where, Msg: fmt.Sprintf(format, args...)})
}

// strict decodes mapping n into the struct out points to.
func (d *decoder) strict(n *yaml.Node, out any, where string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, where, "expected a mapping, got a %s", kindName(n))
		return
	}
	rv := reflect.ValueOf(out).Elem()
	fields, names := yamlFields(rv.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		w := k.Value
		if where != "" {
			w = where + "." + k.Value
		}
		if seen[k.Value] {
			d.errorf(k, where, "duplicate key %q", k.Value)
			continue
		}
		seen[k.Value] = true
		fi, ok := fields[k.Value]
		if !ok {
			d.errorf(k, where, "unknown key %q (valid keys: %s)", k.Value, strings.Join(names, ", "))
			continue
		}
		d.value(v, rv.Field(fi), w)
	}
}

// value decodes one node into a field, recursing strictly into structs and
// lists of structs; everything else is yaml.v3's own decoding.
func (d *decoder) value(v *yaml.Node, f reflect.Value, where string) {
	t := f.Type()
	switch {
	case t.Kind() == reflect.Struct:
		d.strict(v, f.Addr().Interface(), where)
		return
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
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

// yamlFields maps yaml keys to struct field indexes.
func yamlFields(t reflect.Type) (map[string]int, []string) {
	m := map[string]int{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		m[name] = i
		names = append(names, name)
	}
	sort.Strings(names)
	return m, names
}

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

var (
	yamlLineRE  = regexp.MustCompile(`^(yaml: )?(unmarshal errors:\s*)?(line \d+: )?`)
	yamlLineNum = regexp.MustCompile(`line (\d+)`)
)

// cleanYAMLError drops yaml.v3's own line prefix: our error has the position.
func cleanYAMLError(err error) string {
	if te, ok := err.(*yaml.TypeError); ok && len(te.Errors) > 0 {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = yamlLineRE.ReplaceAllString(strings.TrimSpace(m), "")
		}
		return strings.Join(msgs, "; ")
	}
	return yamlLineRE.ReplaceAllString(strings.TrimSpace(err.Error()), "")
}
