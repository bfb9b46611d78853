package campaign

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Counts are bounded before the matrix is expanded: a campaign of more
// than MaxRuns runs, however it gets there, is refused at its position
// (repetitions, else the matrix) instead of being expanded into memory.
func TestSizeBoundedBeforeExpanding(t *testing.T) {
	head := "name: t\nprofile: p\nout: o\n"
	values := func(n int) string { // ["1","2",...,"n"]
		vs := make([]string, n)
		for i := range vs {
			vs[i] = fmt.Sprintf("%q", fmt.Sprint(i+1))
		}
		return "[" + strings.Join(vs, ",") + "]"
	}
	for _, tc := range []struct {
		name string
		src  string
		runs int    // expanded runs when accepted
		want string // error text when refused
	}{
		{"one run", head + "matrix: {}\n", 1, ""},
		{"repetitions at the bound", head + "repetitions: 10000\nmatrix: {}\n", MaxRuns, ""},
		{"repetitions one over", head + "repetitions: 10001\nmatrix: {}\n", 0, "c.yaml:4:14: repetitions: the campaign expands to more than 10000 runs (10001 repetitions)"},
		{"a billion repetitions", head + "repetitions: 1000000000\nmatrix: {}\n", 0, "(1000000000 repetitions)"},
		{"max int repetitions", head + "repetitions: 9223372036854775807\nmatrix: {}\n", 0, "more than 10000 runs"},
		// 100 × 100 = 10,000: at the bound.
		{"two axes at the bound", head + "matrix:\n  set: {a: " + values(100) + ", b: " + values(100) + "}\n", MaxRuns, ""},
		// 100 × 100 × 2 repetitions = 20,000.
		{"axes times repetitions", head + "repetitions: 2\nmatrix:\n  set: {a: " + values(100) + ", b: " + values(100) + "}\n", 0,
			"c.yaml:4:14: repetitions: the campaign expands to more than 10000 runs (100 values of a × 100 values of b × 2 repetitions)"},
		// 30^4 = 810,000 whose partial products overflow nothing.
		{"many axes", head + "matrix:\n  set: {a: " + values(30) + ", b: " + values(30) + ", c: " + values(30) + ", d: " + values(30) + "}\n", 0,
			"c.yaml:5:3: matrix: the campaign expands to more than 10000 runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load([]byte(tc.src), "c.yaml")
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want it to contain %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p := c.Expand(); len(p.Runs) != tc.runs {
				t.Errorf("%d runs, want %d", len(p.Runs), tc.runs)
			}
		})
	}
}

// A campaign with many bad values reports MaxErrors of them and counts the
// rest in one line; exclusions past MaxExclusions are one error.
func TestRepeatedErrorsCapped(t *testing.T) {
	head := "name: t\nprofile: p\nout: o\nmatrix: {engine: [{kind: sim}]}\n"
	var b strings.Builder
	b.WriteString(head + "exclude:\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "  - {engine: e%d}\n", i)
	}
	_, err := Load([]byte(b.String()), "c.yaml")
	if err == nil {
		t.Fatal("200 bad exclusions accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != MaxErrors+1 || lines[MaxErrors] != "c.yaml: ... and 150 more errors" {
		t.Errorf("%d lines, last %q; want %d errors and the count of the 150 others", len(lines), lines[len(lines)-1], MaxErrors)
	}
	b.Reset()
	b.WriteString(head + "exclude:\n")
	for i := 0; i <= MaxExclusions; i++ {
		b.WriteString("  - {engine: sim}\n")
	}
	if _, err := Load([]byte(b.String()), "c.yaml"); err == nil || !strings.Contains(err.Error(), "c.yaml:6:3: exclude: 1001 exclusions, more than the 1000") {
		t.Errorf("error %v", err)
	}
}

// Engine kinds and run flags are checked at their positions: an unknown
// kind, --out (the sweep's), and whatever the loader's flag check refuses.
func TestArgsAndKindsChecked(t *testing.T) {
	head := "name: t\nprofile: p\nout: o\n"
	refuse := func(args []string) error {
		for _, a := range args {
			if a == "--bogus" {
				return errors.New("unknown flag: --bogus")
			}
		}
		return nil
	}
	for _, tc := range []struct{ name, src, want string }{
		{"unknown kind", head + "matrix:\n  engine: [{kind: nosuch}]\n", `c.yaml:5:19: matrix.engine[0].kind: unknown engine kind "nosuch" (known: `},
		{"--out in args", head + "matrix: {}\nargs: [--set, a=1, --out, X]\n", "c.yaml:5:20: args[2]: --out is set by the sweep"},
		{"--out= in engine args", head + "matrix:\n  engine: [{kind: sim, args: [--out=X]}]\n", "c.yaml:5:31: matrix.engine[0].args[0]: --out is set by the sweep"},
		{"--out in model args", head + "matrix:\n  model:\n    - id: m\n      args: [--out, X]\n", "c.yaml:7:14: matrix.model[0].args[0]: --out is set"},
		{"--out in scenario args", head + "matrix:\n  scenario: [{name: s, args: [--out, X]}]\n", "matrix.scenario[0].args[0]: --out is set"},
		{"--out in load args", head + "matrix:\n  load: [{name: l, args: [--out, X]}]\n", "matrix.load[0].args[0]: --out is set"},
		{"flag check", head + "matrix:\n  load: [{name: l, args: [--bogus]}]\n", "c.yaml:5:26: matrix.load[0].args: unknown flag: --bogus"},
		{"flag check top level", head + "matrix: {}\nargs: [--bogus]\n", "c.yaml:5:7: args: unknown flag: --bogus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Loader{CheckArgs: refuse}.Load([]byte(tc.src), "c.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if _, err := (Loader{CheckArgs: refuse}).Load([]byte(head+"matrix:\n  engine: [{kind: sim, args: [--seed, \"2\"]}]\n"), "c.yaml"); err != nil {
		t.Errorf("good flags refused: %v", err)
	}
}
