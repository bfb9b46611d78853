package yamlstrict

import (
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type inner struct {
	Name string `yaml:"name"`
}

type doc struct {
	Count int     `yaml:"count"`
	Items []inner `yaml:"items"`
	Skip  string  `yaml:"-"`
}

func TestStrict(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string // every error, in file order
	}{
		{"clean", "count: 2\nitems:\n  - name: a\n", nil},
		// "cuont" is at line 1, column 1; the known keys are listed sorted.
		{"unknown key", "cuont: 2\n", []string{`f.yaml:1:1: unknown key "cuont" (valid keys: count, items)`}},
		// the second "count" key is at line 2, column 1.
		{"duplicate key", "count: 1\ncount: 2\n", []string{`f.yaml:2:1: duplicate key "count"`}},
		// "x" (line 1, column 8) is no int; "nmae" inside the list item is
		// at line 3, column 5 and is named by its path.
		{"type and nested", "count: x\nitems:\n  - nmae: a\n", []string{
			`f.yaml:1:8: count: cannot unmarshal !!str ` + "`x`" + ` into int`,
			`f.yaml:3:5: items[0]: unknown key "nmae" (valid keys: name)`,
		}},
		{"a field tagged - is not a key", "Skip: 1\n", []string{`f.yaml:1:1: unknown key "Skip" (valid keys: count, items)`}},
		{"not a list", "items: 3\n", []string{`f.yaml:1:8: items: expected a list, got a scalar`}},
		// yaml.v3 names the line of the open bracket: "line 2".
		{"invalid YAML", "count: 1\nitems: [\n", []string{"f.yaml:2:1: invalid YAML: did not find expected node content"}},
		{"empty", "", []string{"f.yaml:1:1: empty document"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := New("f.yaml")
			if root, ok := d.Parse([]byte(c.src)); ok {
				var out doc
				d.Strict(root, &out, "")
			}
			err := d.Err()
			if len(c.want) == 0 {
				if err != nil || !d.OK() {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("want an ErrorList, got %T %v", err, err)
			}
			if got := strings.Split(err.Error(), "\n"); strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("errors:\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestErrorsSortedByPosition(t *testing.T) {
	d := New("f")
	d.Add(&Error{File: "f", Line: 3, Col: 1, Msg: "c"})
	d.Add(&Error{File: "f", Line: 1, Col: 5, Msg: "b"})
	d.Add(&Error{File: "f", Line: 1, Col: 2, Msg: "a"})
	if d.Len() != 3 {
		t.Fatalf("Len = %d, want 3", d.Len())
	}
	if got := d.Err().Error(); got != "f:1:2: a\nf:1:5: b\nf:3:1: c" {
		t.Errorf("order: %q", got)
	}
	if got := (&Error{File: "--set", Where: "k", Msg: "m"}).Error(); got != "--set: k: m" {
		t.Errorf("no position: %q", got)
	}
}

func TestSyntaxErrorPos(t *testing.T) {
	cases := []struct {
		name, src string
		line, col int
	}{
		// yaml.v3 names line 1 (where the list began); the "[" left open
		// is on line 3, its content at column 3.
		{"unclosed list", "items:\n  - a\n  - [b, c\nnext: 1\n", 3, 3},
		// The tab opens line 3; yaml.v3 names line 2.
		{"tab", "a:\n  b: 1\n\tc: 2\n", 3, 1},
		// A key indented one space too far: line 3, column 4.
		{"indentation", "a:\n  b: 1\n   c: 2\n", 3, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := New("f.yaml")
			if _, ok := d.Parse([]byte(c.src)); ok {
				t.Fatal("Parse succeeded")
			}
			var el ErrorList
			if !errors.As(d.Err(), &el) || len(el) != 1 {
				t.Fatalf("errors = %v", d.Err())
			}
			if el[0].Line != c.line || el[0].Col != c.col {
				t.Errorf("position %d:%d, want %d:%d (%v)", el[0].Line, el[0].Col, c.line, c.col, el[0])
			}
		})
	}
}

// NodeAt walks keys and indexes; a missing key, a bad index or a scalar in
// the way gives nil. In the document below, b's list element 1 is on line
// 4, column 5.
func TestNodeAt(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("a: 1\nb:\n  - x\n  - {c: y}\n"), &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	if n := NodeAt(root, "b", "1"); n == nil || n.Line != 4 || n.Column != 5 {
		t.Errorf("NodeAt(b, 1) = %+v, want the mapping at 4:5", n)
	}
	if n := NodeAt(root, "b", "1", "c"); n == nil || n.Value != "y" {
		t.Errorf("NodeAt(b, 1, c) = %+v, want y", n)
	}
	for _, path := range [][]string{{"z"}, {"b", "2"}, {"b", "x"}, {"a", "c"}} {
		if n := NodeAt(root, path...); n != nil {
			t.Errorf("NodeAt(%v) = %+v, want nil", path, n)
		}
	}
	if FirstNode(nil, root) != root || FirstNode(nil, nil) != nil {
		t.Error("FirstNode does not return the first non-nil node")
	}
}

type extra struct {
	Level []string `yaml:"level"`
}

type withExportedInline struct {
	Count int   `yaml:"count"`
	Extra extra `yaml:",inline"`
}

// A struct tagged ",inline" contributes its keys, as yaml.v3 decodes
// them: its fields are set, its keys are listed among the valid ones and
// its values checked.
func TestStrictInline(t *testing.T) {
	d := New("f.yaml")
	n, _ := d.Parse([]byte("count: 1\nlevel: [a, b]\n"))
	var got withExportedInline
	d.Strict(n, &got, "")
	if !d.OK() || got.Count != 1 || strings.Join(got.Extra.Level, " ") != "a b" {
		t.Errorf("decoded %+v, errors %v", got, d.Err())
	}
	d = New("f.yaml")
	n, _ = d.Parse([]byte("levle: [a]\nlevel: 3\n"))
	d.Strict(n, &withExportedInline{}, "")
	want := `f.yaml:1:1: unknown key "levle" (valid keys: count, level)` + "\n" + "f.yaml:2:8: level: cannot unmarshal !!int `3` into []string"
	if err := d.Err(); err == nil || err.Error() != want {
		t.Errorf("errors %v, want %s", err, want)
	}
}
