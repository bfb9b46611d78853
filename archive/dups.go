package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// stageNamesUnique is the rule that no two stages of run.json have the
// same name: formulas find a stage by its name, so a second one would be
// silently ignored. The error names the line and column of the second
// name.
func stageNamesUnique(d *metaDoc) error {
	path, data, m := d.path, d.data, d.m
	first := map[string]int{}
	for i, s := range m.Stages {
		j, dup := first[s.Name]
		if !dup {
			first[s.Name] = i
			continue
		}
		offs := stageNameOffsets(data)
		if i < len(offs) && j < len(offs) {
			line, col := lineCol(data, offs[i])
			fline, _ := lineCol(data, offs[j])
			return fmt.Errorf("%s:%d:%d: duplicate stage name %q (first on line %d); each stage is named once", path, line, col, s.Name, fline)
		}
		return fmt.Errorf("%s: duplicate stage name %q (stages %d and %d); each stage is named once", path, s.Name, j+1, i+1)
	}
	return nil
}

// stageNameOffsets returns, for each element of the top-level "stages"
// array of a run.json document, the byte offset of its "name" value (-1
// when it has none). It is called only to place an error, so it uses the
// standard library's token reader; on malformed input it returns what it
// found so far.
func stageNameOffsets(data []byte) []int {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		if k != "stages" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return nil
		}
		var offs []int
		for dec.More() {
			if t, err := dec.Token(); err != nil || t != json.Delim('{') {
				return offs
			}
			at := -1
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return offs
				}
				if k == "name" && at < 0 {
					at = valueAfter(data, int(dec.InputOffset()))
				}
				var skip json.RawMessage
				if dec.Decode(&skip) != nil {
					return offs
				}
			}
			if _, err := dec.Token(); err != nil { // '}'
				return offs
			}
			offs = append(offs, at)
		}
		return offs
	}
	return nil
}

// valueAfter is the offset of the value that follows a key ending at off:
// past the colon and white space.
func valueAfter(data []byte, off int) int {
	for off < len(data) && (isJSONSpace(data[off]) || data[off] == ':') {
		off++
	}
	return off
}

// dupIndex finds repeated keys among the records of a data file, in file
// order, remembering the record (its index) each key was first seen in.
type dupIndex[K comparable] struct {
	first map[K]int
}

func newDupIndex[K comparable](n int) *dupIndex[K] {
	return &dupIndex[K]{first: make(map[K]int, n)}
}

// add records key seen in record i; it returns the record it was first
// seen in and true when it was seen before.
func (d *dupIndex[K]) add(key K, i int) (int, bool) {
	if j, ok := d.first[key]; ok {
		return j, true
	}
	d.first[key] = i
	return 0, false
}

// checkDuplicateKeys refuses a JSON document (run.json) in which an object
// has the same key twice: a decoder keeps one of them silently (the last,
// in Go), so two files would be read as one. A document with a key twice
// has no one meaning to decode: this guard is part of decoding run.json,
// before the decoder picks one. Keys match without regard to
// letter case, as the reader matches them to fields. The error names the
// key, where it repeats and the line of the first. data is valid JSON.
func checkDuplicateKeys(path string, data []byte) error {
	type frame struct {
		obj     bool
		wantKey bool
		first   map[string]int // lowercased key → offset of its first
		keys    map[string]string
		name    string // the object's or array's path, for messages
		key     string // the key whose value is being read
		index   int
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []*frame
	childName := func() string {
		if len(stack) == 0 {
			return ""
		}
		top := stack[len(stack)-1]
		if top.obj {
			if top.name == "" {
				return top.key
			}
			return top.name + "." + top.key
		}
		return fmt.Sprintf("%s[%d]", top.name, top.index)
	}
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		top := stack[len(stack)-1]
		if top.obj {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	for {
		before := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil // end of the document (its syntax is checked by the decoder)
		}
		if len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].wantKey {
			top := stack[len(stack)-1]
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				valueDone()
				continue
			}
			k, _ := tok.(string)
			off := before + bytes.IndexByte(data[before:], '"')
			lk := strings.ToLower(k)
			if f, dup := top.first[lk]; dup {
				line, col := lineCol(data, off)
				fline, _ := lineCol(data, f)
				where := "the top level"
				if top.name != "" {
					where = top.name
				}
				same := ""
				if top.keys[lk] != k {
					same = fmt.Sprintf(" (as %q: keys match without regard to case)", top.keys[lk])
				}
				return fmt.Errorf("%s:%d:%d: duplicate key %q in %s, first on line %d%s; each key appears once in an object (a reader would keep one of the two silently)", path, line, col, k, where, fline, same)
			}
			top.first[lk], top.keys[lk] = off, k
			top.key, top.wantKey = k, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, wantKey: true, first: map[string]int{}, keys: map[string]string{}, name: childName()})
		case json.Delim('['):
			stack = append(stack, &frame{name: childName()})
		case json.Delim(']'), json.Delim('}'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}
