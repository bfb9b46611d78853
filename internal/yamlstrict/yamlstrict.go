// Package yamlstrict decodes YAML documents (profiles, comparison rules)
// strictly: unknown keys, duplicate keys and wrong types are errors at their
// file:line:col, all collected and reported together.
package yamlstrict

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Decoder decodes YAML nodes strictly into structs, collecting every error
// with its position. The zero value is not usable: use New.
type Decoder struct {
	file   string
	errs   ErrorList
	fileOf func(*yaml.Node) string
}

// SetFileOf makes errors at a node name the file fileOf returns for it
// (when not ""): a document assembled from several files (a profile that
// extends another) reports each error in the file its node came from.
func (d *Decoder) SetFileOf(fileOf func(*yaml.Node) string) { d.fileOf = fileOf }

// FileAt is the file an error at n names.
func (d *Decoder) FileAt(n *yaml.Node) string {
	if n != nil && d.fileOf != nil {
		if f := d.fileOf(n); f != "" {
			return f
		}
	}
	return d.file
}

// New returns a decoder whose errors name file.
func New(file string) *Decoder { return &Decoder{file: file} }

// File is the name errors carry.
func (d *Decoder) File() string { return d.file }

// Parse reads a YAML document and returns its root node.
func (d *Decoder) Parse(src []byte) (*yaml.Node, bool) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		line, col := SyntaxErrorPos(src, err)
		d.Add(&Error{File: d.file, Line: line, Col: col, Msg: "invalid YAML: " + CleanError(err)})
		return nil, false
	}
	if len(doc.Content) == 0 {
		d.Add(&Error{File: d.file, Line: 1, Col: 1, Msg: "empty document"})
		return nil, false
	}
	return doc.Content[0], true
}

// Errorf records an error at n's position (no position when n is nil).
func (d *Decoder) Errorf(n *yaml.Node, where, format string, args ...any) {
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	d.Add(&Error{File: d.FileAt(n), Line: line, Col: col, Where: where, Msg: fmt.Sprintf(format, args...)})
}

// Add records an error as it is.
func (d *Decoder) Add(e *Error) { d.errs = append(d.errs, e) }

// Len is the number of errors recorded so far.
func (d *Decoder) Len() int { return len(d.errs) }

// OK reports whether no error was recorded.
func (d *Decoder) OK() bool { return len(d.errs) == 0 }

// Err returns every error recorded, in file order, as an ErrorList, or nil.
func (d *Decoder) Err() error {
	if len(d.errs) == 0 {
		return nil
	}
	return d.errs.Sorted()
}

// KindName names a node's kind for error messages.
func KindName(n *yaml.Node) string {
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

// yamlFields maps yaml keys to struct field index paths; the fields of a
// struct tagged ",inline" are keys of the outer struct, as yaml.v3 has it.
func yamlFields(t reflect.Type) (map[string][]int, []string) {
	m := map[string][]int{}
	var names []string
	var walk func(t reflect.Type, at []int)
	walk = func(t reflect.Type, at []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("yaml")
			name, opts, _ := strings.Cut(tag, ",")
			if name == "-" {
				continue
			}
			path := append(slices.Clone(at), i)
			if name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, path)
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			m[name] = path
			names = append(names, name)
		}
	}
	walk(t, nil)
	sort.Strings(names)
	return m, names
}

var yamlNodeType = reflect.TypeOf(yaml.Node{})

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// Strict decodes a mapping node into the struct out points to: unknown keys,
// duplicate keys and wrong types are errors at their positions. It returns
// the value node of each key present.
func (d *Decoder) Strict(n *yaml.Node, out any, where string) map[string]*yaml.Node {
	present := map[string]*yaml.Node{}
	if n == nil {
		return present
	}
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, where, "expected a mapping, got a %s", KindName(n))
		return present
	}
	rv := reflect.ValueOf(out).Elem()
	fields, names := yamlFields(rv.Type())
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, dup := present[k.Value]; dup {
			d.Errorf(k, where, "duplicate key %q", k.Value)
			continue
		}
		fi, ok := fields[k.Value]
		if !ok {
			d.Errorf(k, where, "unknown key %q (valid keys: %s)", k.Value, strings.Join(names, ", "))
			continue
		}
		present[k.Value] = v
		w := k.Value
		if where != "" {
			w = where + "." + k.Value
		}
		d.Value(v, rv.FieldByIndex(fi), w)
	}
	return present
}

// Value decodes one node into the settable value f, recursing strictly into
// plain structs (and lists of them).
func (d *Decoder) Value(v *yaml.Node, f reflect.Value, where string) {
	t := f.Type()
	if t == yamlNodeType {
		f.Set(reflect.ValueOf(*v))
		return
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		if err := v.Decode(f.Addr().Interface()); err != nil {
			d.Errorf(v, where, "%s", CleanError(err))
		}
		return
	}
	switch {
	case t.Kind() == reflect.Struct:
		d.Strict(v, f.Addr().Interface(), where)
		return
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && !reflect.PointerTo(t.Elem()).Implements(unmarshalerType):
		if v.Kind != yaml.SequenceNode {
			d.Errorf(v, where, "expected a list, got a %s", KindName(v))
			return
		}
		s := reflect.MakeSlice(t, len(v.Content), len(v.Content))
		for i, item := range v.Content {
			d.Strict(item, s.Index(i).Addr().Interface(), fmt.Sprintf("%s[%d]", where, i))
		}
		f.Set(s)
		return
	}
	if err := v.Decode(f.Addr().Interface()); err != nil {
		d.Errorf(v, where, "%s", CleanError(err))
	}
}

var yamlLineRE = regexp.MustCompile(`^(yaml: )?(unmarshal errors:\s*)?(line \d+: )?`)

// CleanError drops yaml.v3's own line prefix: our error has the position.
func CleanError(err error) string {
	if te, ok := err.(*yaml.TypeError); ok && len(te.Errors) > 0 {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = yamlLineRE.ReplaceAllString(m, "")
		}
		return strings.Join(msgs, "; ")
	}
	return yamlLineRE.ReplaceAllString(strings.TrimSpace(err.Error()), "")
}

var errLineRE = regexp.MustCompile(`line (\d+)`)

// ErrLine is the line a yaml.v3 syntax error names, or 1.
func ErrLine(err error) int {
	if m := errLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 1
}

// maxSyntaxScan is the longest document SyntaxErrorPos searches line by
// line; longer ones keep yaml.v3's line.
const maxSyntaxScan = 5000

// SyntaxErrorPos places a yaml.v3 syntax error (err, from parsing src) at
// the line that causes it. yaml.v3 names the line where the enclosing
// construct began (an unclosed "{" three lines up, the mapping a bad
// indentation belongs to), not the offending line. The offending line is
// the first L such that lines 1..L alone fail with the same message at the
// same reported line: the document is fine up to L-1 and broken at L. The
// column is that line's first non-blank character (1-based). When no
// prefix reproduces the error, yaml.v3's line is kept, column 1.
func SyntaxErrorPos(src []byte, err error) (line, col int) {
	line, col = ErrLine(err), 1
	msg := err.Error()
	lines := strings.SplitAfter(string(src), "\n")
	if len(lines) > maxSyntaxScan {
		return line, col
	}
	prefix := 0
	for l := 1; l <= len(lines); l++ {
		prefix += len(lines[l-1])
		var doc yaml.Node
		perr := yaml.Unmarshal(src[:prefix], &doc)
		if perr != nil && perr.Error() == msg {
			text := lines[l-1]
			return l, len(text) - len(strings.TrimLeft(text, " ")) + 1
		}
	}
	return line, col
}
