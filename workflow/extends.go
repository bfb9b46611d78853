package workflow

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/internal/boundedfile"
	"github.com/joulebench/joulebench/internal/yamlstrict"
	"github.com/joulebench/joulebench/profiles"
)

// Lookup finds the profile that `extends: REF` names, from the file that
// says so: a built-in or user profile name, or a path (relative paths are
// relative to the extending file's directory). It returns the YAML and the
// name errors and provenance report it by.
type Lookup func(ref, from string) (src []byte, file string, err error)

// DefaultLookup resolves built-in names and file paths.
func DefaultLookup(ref, from string) ([]byte, string, error) {
	if profiles.IsPath(ref) {
		return readRelative(ref, from)
	}
	b, err := profiles.Read(ref)
	if err != nil {
		return nil, "", err
	}
	return b, ref + ".yaml (built-in)", nil
}

// readRelative reads a profile file named relative to the file from.
func readRelative(ref, from string) ([]byte, string, error) {
	p := ref
	if !filepath.IsAbs(p) && from != "" {
		if st, err := os.Stat(from); err == nil && !st.IsDir() {
			p = filepath.Join(filepath.Dir(from), ref)
		}
	}
	b, err := boundedfile.Read(p, "profile", boundedfile.MaxProfileBytes)
	if err != nil {
		return nil, "", err
	}
	return b, p, nil
}

// maxExtendsDepth bounds a chain of extends (a cycle is caught before).
const maxExtendsDepth = 16

// Sections a profile that extends another may add to (at the top level)
// or change entry by entry (under `override:`), and the key that names an
// entry in each list section.
var (
	mapSections  = []string{"parameters", "quick", "derive"}
	listSections = map[string]string{"metrics": "name", "checks": "name", "stage_energy": "stage"}
	// replaced are top-level keys a child's value replaces as a whole.
	replaced = []string{"name", "version", "description", "spec", "steps"}
)

// Origin says where one entry of a flattened profile was written and which
// files changed it since.
type Origin struct {
	Section   string   `json:"section"`
	Name      string   `json:"name"`
	From      string   `json:"from"`                // file:line where the entry was defined
	Overrides []string `json:"overrides,omitempty"` // file:line of each override, parent first
}

// source is one file of an extends chain.
type source struct {
	file string
	src  []byte
}

// flattening is what resolving `extends:` produces: the flattened root, the
// file each node was written in (for errors), and each entry's origin.
type flattening struct {
	root     *yaml.Node
	files    map[*yaml.Node]*source
	origins  map[string]*Origin // "section\x00name" → origin
	order    []string
	chain    []string // the files, child first
	childSrc []byte
}

func (f *flattening) origin(section, name string) *Origin {
	k := section + "\x00" + name
	if o, ok := f.origins[k]; ok {
		return o
	}
	o := &Origin{Section: section, Name: name}
	f.origins[k] = o
	f.order = append(f.order, k)
	return o
}

// Origins lists every entry's origin, section by section in the profile's
// order.
func (f *flattening) Origins() []Origin {
	out := make([]Origin, 0, len(f.order))
	for _, k := range f.order {
		out = append(out, *f.origins[k])
	}
	return out
}

// fileOf is where node n was written ("" when unknown: the child's file).
func (f *flattening) fileOf(n *yaml.Node) string {
	if s := f.files[n]; s != nil {
		return s.file
	}
	return ""
}

func (f *flattening) srcOf(n *yaml.Node) []byte {
	if s := f.files[n]; s != nil {
		return s.src
	}
	return nil
}

func (f *flattening) mark(n *yaml.Node, s *source) {
	if n == nil {
		return
	}
	if _, ok := f.files[n]; !ok {
		f.files[n] = s
	}
	for _, c := range n.Content {
		f.mark(c, s)
	}
}

// flatten resolves the `extends:` chain of root (parsed from src, named
// file). Without `extends:` it returns nil and no error.
func flatten(root *yaml.Node, src []byte, file string, lookup Lookup) (*flattening, error) {
	if mappingValue(root, "extends") == nil {
		if ov := mappingKey(root, "override"); ov != nil {
			return nil, ErrorList{{File: file, Line: ov.Line, Col: ov.Column, Where: "override", Msg: "override: changes entries of the profile this one extends; add extends: NAME"}}
		}
		return nil, nil
	}
	if lookup == nil {
		lookup = DefaultLookup
	}
	f := &flattening{files: map[*yaml.Node]*source{}, origins: map[string]*Origin{}, childSrc: src}
	d := newDecoder(file)
	d.SetFileOf(f.fileOf)
	f.root = f.resolve(d, root, &source{file: file, src: src}, lookup, nil)
	if err := d.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

// resolve flattens one level: the parent first (recursively), then this
// file's entries over it. visiting holds the files on the way down, to
// name a cycle.
func (f *flattening) resolve(d *decoder, root *yaml.Node, s *source, lookup Lookup, visiting []string) *yaml.Node {
	f.mark(root, s)
	f.chain = append(f.chain, s.file)
	ext := mappingValue(root, "extends")
	if ext == nil {
		f.record(root, s, nil)
		return stripKeys(root, "extends", "override")
	}
	if ext.Kind != yaml.ScalarNode || ext.Value == "" {
		d.Errorf(ext, "extends", "expected the name or path of a profile, got a %s", yamlstrict.KindName(ext))
		return nil
	}
	visiting = append(visiting, s.file)
	if len(visiting) > maxExtendsDepth {
		d.Errorf(ext, "extends", "more than %d levels of extends", maxExtendsDepth)
		return nil
	}
	psrc, pfile, err := lookup(ext.Value, s.file)
	if err != nil {
		d.Errorf(ext, "extends", "%s", err)
		return nil
	}
	for _, v := range visiting {
		if v == pfile {
			d.Errorf(ext, "extends", "cycle: %s -> %s", strings.Join(visiting, " -> "), pfile)
			return nil
		}
	}
	proot, err := parseRoot(psrc, pfile)
	if err != nil {
		if l, ok := err.(ErrorList); ok {
			for _, e := range l {
				d.Add(e)
			}
		}
		return nil
	}
	parent := f.resolve(d, proot, &source{file: pfile, src: psrc}, lookup, visiting)
	if parent == nil {
		return nil
	}
	return f.merge(d, parent, root, s)
}

// record notes the origin of every entry of a profile that extends nothing.
func (f *flattening) record(root *yaml.Node, s *source, _ *yaml.Node) {
	for _, sec := range mapSections {
		n := mappingValue(root, sec)
		if n == nil || n.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			f.origin(sec, n.Content[i].Value).From = at(s, n.Content[i])
		}
	}
	for _, sec := range sortedListSections() {
		n := mappingValue(root, sec)
		if n == nil || n.Kind != yaml.SequenceNode {
			continue
		}
		for _, item := range n.Content {
			if name := entryName(item, listSections[sec]); name != "" {
				f.origin(sec, name).From = at(s, item)
			}
		}
	}
}

func at(s *source, n *yaml.Node) string { return fmt.Sprintf("%s:%d", s.file, n.Line) }

// merge lays the child's entries over the flattened parent: scalar keys
// and steps replace; entries in sections are added (a name the parent has
// is an error); entries under override: change the parent's entry of that
// name field by field (a name the parent lacks is an error).
func (f *flattening) merge(d *decoder, parent, child *yaml.Node, s *source) *yaml.Node {
	out := *child
	out.Content = nil
	f.files[&out] = s
	set := func(k string, v *yaml.Node, keyNode *yaml.Node) {
		for i := 0; i+1 < len(out.Content); i += 2 {
			if out.Content[i].Value == k {
				out.Content[i+1] = v
				return
			}
		}
		if keyNode == nil {
			keyNode = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}
		}
		out.Content = append(out.Content, keyNode, v)
	}
	for i := 0; i+1 < len(parent.Content); i += 2 {
		set(parent.Content[i].Value, parent.Content[i+1], parent.Content[i])
	}
	for i := 0; i+1 < len(child.Content); i += 2 {
		k, v := child.Content[i], child.Content[i+1]
		switch {
		case k.Value == "extends" || k.Value == "override":
		case contains(replaced, k.Value):
			set(k.Value, v, k)
		case contains(mapSections, k.Value):
			set(k.Value, f.addMap(d, k.Value, mappingValue(&out, k.Value), v, s, false), k)
		case listSections[k.Value] != "":
			set(k.Value, f.addList(d, k.Value, mappingValue(&out, k.Value), v, s, false), k)
		default:
			set(k.Value, v, k) // header() reports the unknown key
		}
	}
	if ov := mappingValue(child, "override"); ov != nil {
		if ov.Kind != yaml.MappingNode {
			d.Errorf(ov, "override", "expected a mapping of section: entries, got a %s", yamlstrict.KindName(ov))
			return &out
		}
		for i := 0; i+1 < len(ov.Content); i += 2 {
			k, v := ov.Content[i], ov.Content[i+1]
			where := "override." + k.Value
			switch {
			case contains(mapSections, k.Value):
				set(k.Value, f.addMap(d, where, mappingValue(&out, k.Value), v, s, true), nil)
			case listSections[k.Value] != "":
				set(k.Value, f.addList(d, where, mappingValue(&out, k.Value), v, s, true), nil)
			default:
				d.Errorf(k, "override", "cannot override %q entry by entry (override: takes %s; name, description, spec, version and steps are replaced by giving them at the top level)",
					k.Value, strings.Join(append(append([]string{}, mapSections...), sortedListSections()...), ", "))
			}
		}
	}
	return &out
}

// addMap merges a mapping section (parameters, quick, derive).
func (f *flattening) addMap(d *decoder, where string, parent, child *yaml.Node, s *source, override bool) *yaml.Node {
	section := strings.TrimPrefix(where, "override.")
	if child.Kind != yaml.MappingNode {
		d.Errorf(child, where, "expected a mapping, got a %s", yamlstrict.KindName(child))
		return parent
	}
	if parent == nil || parent.Kind != yaml.MappingNode {
		parent = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: child.Line, Column: child.Column}
		f.files[parent] = s
	}
	out := *parent
	out.Content = append([]*yaml.Node{}, parent.Content...)
	f.files[&out] = f.files[parent]
	for i := 0; i+1 < len(child.Content); i += 2 {
		k, v := child.Content[i], child.Content[i+1]
		idx := -1
		var names []string
		for j := 0; j+1 < len(out.Content); j += 2 {
			names = append(names, out.Content[j].Value)
			if out.Content[j].Value == k.Value {
				idx = j
			}
		}
		o := f.origin(section, k.Value)
		switch {
		case override && idx < 0:
			d.Errorf(k, where, "the parent profile has no %s %q to override (it has: %s)", singular(section), k.Value, nearestFirst(k.Value, names))
		case !override && idx >= 0:
			d.Errorf(k, where, "%s %q is already defined at %s; to change it, put it under override: %s:", singular(section), k.Value, o.From, section)
		case override:
			out.Content[idx+1] = overrideMapEntry(section, out.Content[idx+1], v)
			f.mark(out.Content[idx+1], s)
			o.Overrides = append(o.Overrides, at(s, k))
		default:
			out.Content = append(out.Content, k, v)
			o.From = at(s, k)
		}
	}
	return &out
}

// overrideMapEntry changes a parameter, quick value or derived value: a
// scalar replaces the default (parameters) or the expression (derive), a
// mapping changes the fields it names.
func overrideMapEntry(section string, parent, child *yaml.Node) *yaml.Node {
	field := map[string]string{"parameters": "default", "derive": "expr"}[section]
	if field == "" {
		return child // quick: a value replaces the value
	}
	if child.Kind == yaml.ScalarNode {
		if parent.Kind == yaml.MappingNode {
			out := *parent
			out.Content = append([]*yaml.Node{}, parent.Content...)
			replaceField(&out, field, child)
			return &out
		}
		if section == "parameters" && parent.ShortTag() == "!!float" && child.ShortTag() == "!!int" {
			c := *child
			c.Tag = "!!float" // `cv_max: 1` keeps the parameter a float
			return &c
		}
		return child
	}
	if child.Kind != yaml.MappingNode {
		return child // decoding reports the kind
	}
	base := parent
	if parent.Kind != yaml.MappingNode {
		base = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: parent.Line, Column: parent.Column,
			Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: field, Line: parent.Line, Column: parent.Column}, parent}}
	}
	return mergeFields(base, child)
}

// addList merges a list section whose entries are named by a key (metrics,
// checks: name; stage_energy: stage).
func (f *flattening) addList(d *decoder, where string, parent, child *yaml.Node, s *source, override bool) *yaml.Node {
	section := strings.TrimPrefix(where, "override.")
	key := listSections[section]
	if child.Kind != yaml.SequenceNode {
		d.Errorf(child, where, "expected a list, got a %s", yamlstrict.KindName(child))
		return parent
	}
	if parent == nil || parent.Kind != yaml.SequenceNode {
		parent = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: child.Line, Column: child.Column}
		f.files[parent] = s
	}
	out := *parent
	out.Content = append([]*yaml.Node{}, parent.Content...)
	f.files[&out] = f.files[parent]
	for i, item := range child.Content {
		w := fmt.Sprintf("%s[%d]", where, i)
		name := entryName(item, key)
		if name == "" {
			if override {
				d.Errorf(item, w, "an override names the entry it changes with %s:", key)
				continue
			}
			out.Content = append(out.Content, item) // decoding reports what it lacks
			continue
		}
		idx := -1
		var names []string
		for j, p := range out.Content {
			n := entryName(p, key)
			names = append(names, n)
			if n == name {
				idx = j
			}
		}
		o := f.origin(section, name)
		switch {
		case override && idx < 0:
			d.Errorf(item, w, "the parent profile has no %s %q to override (it has: %s)", singular(section), name, nearestFirst(name, names))
		case !override && idx >= 0:
			d.Errorf(item, w, "%s %q is already defined at %s; to change it, put it under override: %s:", singular(section), name, o.From, section)
		case override:
			out.Content[idx] = mergeFields(out.Content[idx], item)
			f.files[out.Content[idx]] = s
			o.Overrides = append(o.Overrides, at(s, item))
		default:
			out.Content = append(out.Content, item)
			o.From = at(s, item)
		}
	}
	return &out
}

// mergeFields returns parent's mapping with child's keys replacing or
// added; the result sits at the child's position (an error about the
// merged entry points at the override).
func mergeFields(parent, child *yaml.Node) *yaml.Node {
	out := *child
	out.Content = append([]*yaml.Node{}, parent.Content...)
	if parent.Kind != yaml.MappingNode || child.Kind != yaml.MappingNode {
		return child
	}
	for i := 0; i+1 < len(child.Content); i += 2 {
		if !replaceField(&out, child.Content[i].Value, child.Content[i+1]) {
			out.Content = append(out.Content, child.Content[i], child.Content[i+1])
		}
	}
	return &out
}

func replaceField(m *yaml.Node, key string, v *yaml.Node) bool {
	for j := 0; j+1 < len(m.Content); j += 2 {
		if m.Content[j].Value == key {
			m.Content[j+1] = v
			return true
		}
	}
	return false
}

func entryName(item *yaml.Node, key string) string {
	if v := mappingValue(item, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func mappingKey(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return nil
}

// stripKeys returns a copy of mapping n without the given keys.
func stripKeys(n *yaml.Node, keys ...string) *yaml.Node {
	out := *n
	out.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !contains(keys, n.Content[i].Value) {
			out.Content = append(out.Content, n.Content[i], n.Content[i+1])
		}
	}
	return &out
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

func sortedListSections() []string {
	out := make([]string, 0, len(listSections))
	for k := range listSections {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func singular(section string) string {
	switch section {
	case "parameters":
		return "parameter"
	case "quick":
		return "quick value"
	case "derive":
		return "derived value"
	case "metrics":
		return "metric"
	case "checks":
		return "check"
	case "stage_energy":
		return "stage_energy row"
	}
	return section
}

// nearestFirst lists names with the closest to name (by edit distance)
// first, so a typo's intended name leads the list.
func nearestFirst(name string, names []string) string {
	if len(names) == 0 {
		return "nothing"
	}
	sorted := append([]string{}, names...)
	sort.SliceStable(sorted, func(i, j int) bool { return editDistance(name, sorted[i]) < editDistance(name, sorted[j]) })
	return strings.Join(sorted, ", ")
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// render writes the flattened profile as YAML; with provenance, each entry
// carries a comment saying where it was written and overridden.
func (f *flattening) render(provenance bool) ([]byte, error) {
	root := f.root
	if provenance {
		root = f.annotated()
	}
	var buf bytes.Buffer
	buf.WriteString("# flattened from: " + strings.Join(f.chain, " <- ") + "\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("render flattened profile: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("render flattened profile: %w", err)
	}
	return buf.Bytes(), nil
}

// annotated is a copy of the flattened root with a provenance comment on
// every entry (copies, so the loaded tree keeps its own comments).
func (f *flattening) annotated() *yaml.Node {
	root := *f.root
	root.Content = append([]*yaml.Node{}, f.root.Content...)
	note := func(section, name string) string {
		o := f.origins[section+"\x00"+name]
		if o == nil {
			return ""
		}
		s := "# from " + o.From
		if len(o.Overrides) > 0 {
			s += ", overridden at " + strings.Join(o.Overrides, ", ")
		}
		return s
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		sec := root.Content[i].Value
		v := root.Content[i+1]
		switch {
		case contains(mapSections, sec) && v.Kind == yaml.MappingNode:
			c := *v
			c.Content = append([]*yaml.Node{}, v.Content...)
			for j := 0; j+1 < len(c.Content); j += 2 {
				// yaml.v3 places a key's line comment right only when
				// the value is a block; a scalar or flow value carries it.
				val := *c.Content[j+1]
				if val.Kind == yaml.ScalarNode || val.Style&yaml.FlowStyle != 0 {
					val.LineComment = note(sec, c.Content[j].Value)
				} else {
					k := *c.Content[j]
					k.LineComment = note(sec, k.Value)
					c.Content[j] = &k
				}
				c.Content[j+1] = &val
			}
			root.Content[i+1] = &c
		case listSections[sec] != "" && v.Kind == yaml.SequenceNode:
			c := *v
			c.Content = append([]*yaml.Node{}, v.Content...)
			for j, item := range c.Content {
				it := *item
				it.HeadComment = note(sec, entryName(item, listSections[sec]))
				c.Content[j] = &it
			}
			root.Content[i+1] = &c
		}
	}
	return &root
}

// srcAt is the source of the file node n was written in (src when the
// profile extends nothing).
func (d *decoder) srcAt(n *yaml.Node, src []byte) []byte {
	if d.flat != nil {
		if s := d.flat.srcOf(n); s != nil {
			return s
		}
		return d.flat.childSrc
	}
	return src
}

// sameFile records that copy (an interpolated step parameter) was written
// where n was.
func (d *decoder) sameFile(copy, n *yaml.Node) {
	if d.flat != nil {
		if s := d.flat.files[n]; s != nil {
			d.flat.files[copy] = s
		}
	}
}

// Extends is the chain of files the profile was flattened from, itself
// first; nil when it extends nothing.
func (l *Loaded) Extends() []string {
	if l.flat == nil {
		return nil
	}
	return append([]string{}, l.flat.chain...)
}

// Origins says where each entry of the flattened profile was written and
// overridden; nil when the profile extends nothing.
func (l *Loaded) Origins() []Origin {
	if l.flat == nil {
		return nil
	}
	return l.flat.Origins()
}

// Resolved renders the flattened profile as YAML, each entry annotated
// with where it came from when the profile extends another; otherwise the
// profile's own source.
func (l *Loaded) Resolved() ([]byte, error) {
	if l.flat == nil {
		return l.Source, nil
	}
	return l.flat.render(true)
}
