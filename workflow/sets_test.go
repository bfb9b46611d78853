package workflow

import (
	"testing"

	"github.com/joulebench/joulebench/internal/exitcode"
)

func TestParseSets(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want map[string]string
		err  string
	}{
		{nil, map[string]string{}, ""},
		{[]string{"a=1", " b =x=y"}, map[string]string{"a": "1", "b": "x=y"}, ""},
		{[]string{"a=1", "novalue"}, nil, `--set "novalue": expected key=value`},
		{[]string{"=1"}, nil, `--set "=1": expected key=value`},
	} {
		got, err := ParseSets(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err || exitcode.Of(err) != int(exitcode.Invalid) {
				t.Errorf("ParseSets(%q) = %v, want invalid %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Fatalf("ParseSets(%q) = %v, %v", tc.in, got, err)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("ParseSets(%q)[%s] = %q, want %q", tc.in, k, got[k], v)
			}
		}
	}
}
