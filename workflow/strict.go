package workflow

import (
	"gopkg.in/yaml.v3"
)

// Decoder decodes YAML documents other than profiles (e.g. comparison
// rules) with the same strictness and positioned errors as profiles:
// unknown keys, duplicate keys and wrong types are reported at their
// file:line:col, all together.
type Decoder struct {
	d decoder
}

// NewDecoder returns a decoder whose errors name file.
func NewDecoder(file string) *Decoder { return &Decoder{d: decoder{file: file}} }

// Parse reads a YAML document and returns its root node.
func (x *Decoder) Parse(src []byte) (*yaml.Node, bool) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		x.d.errs = append(x.d.errs, &Error{File: x.d.file, Line: yamlErrLine(err), Col: 1, Msg: "invalid YAML: " + cleanYAMLError(err)})
		return nil, false
	}
	if len(doc.Content) == 0 {
		x.d.errs = append(x.d.errs, &Error{File: x.d.file, Line: 1, Col: 1, Msg: "empty document"})
		return nil, false
	}
	return doc.Content[0], true
}

// Strict decodes mapping n into the struct out points to.
func (x *Decoder) Strict(n *yaml.Node, out any, where string) {
	x.d.strict(n, out, where)
}

// Errorf records an error at n's position (the file's start when n is nil).
func (x *Decoder) Errorf(n *yaml.Node, where, format string, args ...any) {
	x.d.errorf(n, where, format, args...)
}

// Err returns every error recorded, in file order, or nil.
func (x *Decoder) Err() error {
	if len(x.d.errs) == 0 {
		return nil
	}
	return x.d.errs.sorted()
}

// OK reports whether no error was recorded.
func (x *Decoder) OK() bool { return len(x.d.errs) == 0 }
