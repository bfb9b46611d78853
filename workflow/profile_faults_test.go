package workflow

import (
	"strings"
	"testing"
)

// TestLoadFaults: bad input the loader must place and name (issue 12,
// item 14). Each error is file:line:col: where: what.
func TestLoadFaults(t *testing.T) {
	const tail = "steps: [{kind: preflight}]\nmetrics: [{name: m, expr: \"1\"}]\n"
	cases := []struct {
		name string
		src  string
		want string
	}{
		{
			// The "{" left open is on line 4 ("  - {kind: archive", content
			// at column 3); yaml.v3 names line 3, where the list began.
			name: "unclosed flow mapping",
			src:  "name: x\nsteps:\n  - {kind: preflight}\n  - {kind: archive\nmetrics:\n  - {name: m, expr: \"1\"}\n",
			want: "f.yaml:4:3: did not find expected ',' or '}'",
		},
		{
			// The tab is the first character of line 4; yaml.v3 says line 3.
			name: "tab indentation",
			src:  "name: x\nparameters:\n  a: 1\n\tb: 2\n" + tail,
			want: "f.yaml:4:1: found a tab character that violates indentation",
		},
		{
			// "10000000h" is valid syntax but longer than 2562047h.
			name: "duration overflow",
			src:  "name: x\nparameters:\n  d: {type: duration, default: 10000000h}\n" + tail,
			want: `f.yaml:3:32: parameters.d: duration "10000000h" overflows (the longest is 2562047h47m16.854775807s)`,
		},
		{
			// 1e20 s × 1e9 ns/s does not fit in int64 nanoseconds.
			name: "duration in seconds overflows",
			src:  "name: x\nparameters:\n  d: {type: duration, default: 1e20}\n" + tail,
			want: `f.yaml:3:32: parameters.d: duration "1e20" overflows`,
		},
		{
			// The format "%.1f" (its quote at column 42 of line 3) is for numbers; the
			// metric is a string.
			name: "format of a string metric",
			src:  "name: x\nsteps: [{kind: preflight}]\nmetrics: [{name: m, expr: '\"a\"', format: \"%.1f\"}]\n",
			want: `f.yaml:3:42: m.format: format "%.1f" applies to numbers; this metric is string`,
		},
		{
			// "%d" (column 52) would print %!d(float64=3) from results.json.
			name: "integer verb",
			src:  "name: x\nsteps: [{kind: preflight}]\nmetrics: [{name: m, expr: 'len(requests)', format: \"%d\"}]\n",
			want: `f.yaml:3:52: m.format: format "%d": verb %d does not print a number stored as float64`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load([]byte(c.src), "f.yaml", Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, c.want)
			}
		})
	}
}
