package campaign

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/internal/yamlstrict"
)

// The one rule for every value that reaches a job script, a Job manifest
// or a shell (CheckValue): the Slurm executor's job scripts, the
// Kubernetes executor's manifests and pod command, and the local
// executor's command line all take their values through it, at load time
// with the campaign file's positions (validateScriptValues) and again
// before anything is written or submitted (CheckScriptValues).

// ValueUse is how a value is written where it goes.
type ValueUse int

const (
	// Quoted: quoted for sh (shellQuote), a field of a manifest, an
	// argument of a command. A line break or a NUL is refused: it would
	// start a line of its own (or cut the value) in the job script.
	Quoted ValueUse = iota
	// Unquoted: written as it is into a line of a job script, such as
	// `#SBATCH --partition=VALUE`, which sbatch splits at blanks. Besides
	// Quoted's rule: no blank, no ';', '$', '`', quote, '\', '<' or '>'.
	Unquoted
)

// unquotedUnsafe are the characters an Unquoted value may not hold, with
// the blanks.
const unquotedUnsafe = ";$`'\"\\<>"

// CheckValue is the rule every value that reaches a job script, a Job
// manifest or a shell passes: no newline, carriage return, NUL nor other
// control character (a tab is allowed in a quoted value); a value written
// unquoted also no blank nor any of ; $ ` ' " \ < >.
func CheckValue(v string, use ValueUse) error {
	for _, r := range v {
		switch {
		case r == '\n':
			return errors.New("holds a newline: it would start a line of its own in the job script")
		case r == '\r':
			return errors.New("holds a carriage return: it would start a line of its own in the job script")
		case r == 0:
			return errors.New("holds a NUL byte: a command line, a job script or a manifest cannot carry it")
		case r == '\t': // a blank: Unquoted's check below
		case unicode.IsControl(r):
			return fmt.Errorf("holds the control character %U", r)
		}
	}
	if use != Unquoted {
		return nil
	}
	if i := strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(unquotedUnsafe, r) }); i >= 0 {
		return fmt.Errorf("holds %q: it is written unquoted into the job script (no blank nor any of %s)", string([]rune(v[i:])[0]), unquotedUnsafe)
	}
	return nil
}

// scriptValue is one value of the campaign file that reaches a job
// script, a manifest or a shell: where it is (the YAML path and its
// name in messages) and how it is written.
type scriptValue struct {
	path  []string
	where string
	value string
	use   ValueUse
}

// unquotedFields are the campaign file's values written unquoted into a
// job script (#SBATCH lines); every other string value is Quoted.
var unquotedFields = map[string]bool{
	"slurm.partition": true,
	"slurm.gres":      true,
	"slurm.time":      true,
	"slurm.options":   true,
}

// freeTextFields are the campaign file's values that reach no script nor
// manifest: free text.
var freeTextFields = map[string]bool{"description": true}

// scriptValues lists every string of the campaign file (map keys
// included) that reaches a job script, a Job manifest or a shell: all of
// them but free text, walked from the File's fields by their YAML names,
// so that a field added later is covered too.
func (c *Campaign) scriptValues() []scriptValue {
	var out []scriptValue
	walkStrings(reflect.ValueOf(c.File), nil, "", &out)
	return out
}

// walkStrings appends the strings of v (a File or a part of it) at path;
// field is the dotted name of the struct field v belongs to (indexes and
// map keys left out), which decides its use.
func walkStrings(v reflect.Value, path []string, field string, out *[]scriptValue) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkStrings(v.Elem(), path, field, out)
		}
	case reflect.String:
		use := Quoted
		if unquotedFields[field] {
			use = Unquoted
		}
		*out = append(*out, scriptValue{path: path, where: pathName(path), value: v.String(), use: use})
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if !f.IsExported() || name == "-" || name == "" {
				continue
			}
			sub := name
			if field != "" {
				sub = field + "." + name
			}
			if freeTextFields[sub] {
				continue
			}
			walkStrings(v.Field(i), appendPath(path, name), sub, out)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			walkStrings(v.Index(i), appendPath(path, strconv.Itoa(i)), field, out)
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return
		}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := appendPath(path, k)
			// The key reaches the script too: an environment variable's
			// name, a profile parameter's, a label's.
			*out = append(*out, scriptValue{path: p, where: pathName(p) + " (the key)", value: k, use: Quoted})
			walkStrings(v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())), p, field, out)
		}
	}
}

func appendPath(path []string, elem string) []string {
	return append(append([]string(nil), path...), elem)
}

// pathName is a path as messages name it: slurm.parts[0].command[1].
func pathName(path []string) string {
	var b strings.Builder
	for _, p := range path {
		if _, err := strconv.Atoi(p); err == nil {
			b.WriteString("[" + p + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

// nodeNear is the node at path, else the deepest of its parents there
// is (a default filled in has no node of its own).
func nodeNear(root *yaml.Node, path []string) *yaml.Node {
	n := root
	for i := range path {
		next := yamlstrict.NodeAt(root, path[:i+1]...)
		if next == nil {
			break
		}
		n = next
	}
	return n
}

// validateScriptValues refuses, at its position in the campaign file,
// every value that fails the rule of CheckValue.
func (c *Campaign) validateScriptValues(e *errSink, root *yaml.Node) {
	for _, v := range c.scriptValues() {
		if err := CheckValue(v.value, v.use); err != nil {
			e.Errorf(nodeNear(root, v.path), v.where, "%q %v", v.value, err)
		}
	}
}

// CheckScriptValues applies the rule of CheckValue to every value of the
// campaign that reaches a job script, a manifest or a shell, and to
// extra (name, value) pairs the executor adds (the joulebench
// executable, the image): an executor calls it before it writes or
// submits anything, so that a campaign changed after it was loaded is
// checked too. The error is invalid input.
func (c *Campaign) CheckScriptValues(extra ...string) error {
	for _, v := range c.scriptValues() {
		if err := CheckValue(v.value, v.use); err != nil {
			return exitcode.Invalidf("%s: %q %v", v.where, v.value, err)
		}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if err := CheckValue(extra[i+1], Quoted); err != nil {
			return exitcode.Invalidf("%s: %q %v", extra[i], extra[i+1], err)
		}
	}
	return nil
}
