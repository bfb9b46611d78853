package yamlstrict

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a YAML document, at a position:
// `file:line:col: where: what`.
type Error struct {
	File  string
	Line  int
	Col   int
	Where string
	Msg   string
}

func (e *Error) Error() string {
	pos := e.File
	if e.Line > 0 {
		pos = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Col)
	}
	if e.Where == "" {
		return fmt.Sprintf("%s: %s", pos, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", pos, e.Where, e.Msg)
}

// ErrorList is every problem found in a document, in file order.
type ErrorList []*Error

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Sorted orders the list by line, then column (stable: errors at one
// position keep the order they were found in) and returns it.
func (l ErrorList) Sorted() ErrorList {
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].Line != l[j].Line {
			return l[i].Line < l[j].Line
		}
		return l[i].Col < l[j].Col
	})
	return l
}
