package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// stub is a source of fixed devices that counts its closes.
type stub struct {
	name   string
	devs   []record.Device
	closed *int
}

func (s stub) Name() string                                      { return s.name }
func (s stub) Devices(context.Context) ([]record.Device, error)  { return s.devs, nil }
func (s stub) Read(context.Context) ([]telemetry.Reading, error) { return nil, nil }
func (s stub) Close() error                                      { *s.closed++; return nil }
func openErr(err error) func(context.Context, telemetry.Values, telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
	return func(context.Context, telemetry.Values, telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
		return nil, record.TelemetryInfo{}, err
	}
}

// opens returns an Open of a stub named name with one device name+"0".
func opens(name string, closed *int) func(context.Context, telemetry.Values, telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
	return func(context.Context, telemetry.Values, telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
		s := stub{name: name, devs: []record.Device{{ID: name + "0", Method: "power"}}, closed: closed}
		return s, record.TelemetryInfo{Source: name, Note: name + " note"}, nil
	}
}

var errGone = errors.New("not on this machine")

// values reads flags parsed from args, registered by r.
func values(t *testing.T, r *telemetry.Registry, args ...string) (telemetry.Values, []string) {
	t.Helper()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	r.Flags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	given, _ := fs.GetStringArray(telemetry.SelectFlag)
	return telemetry.FlagValues(fs), given
}

func TestRegisterRefuses(t *testing.T) {
	noop := openErr(nil)
	flag := func(name string) func(*pflag.FlagSet) { return func(f *pflag.FlagSet) { f.String(name, "", "") } }
	for _, tc := range []struct {
		name string
		d    telemetry.Descriptor
		want string
	}{
		{"empty name", telemetry.Descriptor{Open: noop}, "a name is a non-empty word"},
		{"name with a comma", telemetry.Descriptor{Name: "a,b", Open: noop}, "a name is a non-empty word"},
		{"auto", telemetry.Descriptor{Name: telemetry.Auto, Open: noop}, "the registry's own choice"},
		{"no open", telemetry.Descriptor{Name: "x"}, "no Open"},
		{"twice", telemetry.Descriptor{Name: "a", Open: noop}, "registered twice"},
		{"a flag of another source", telemetry.Descriptor{Name: "x", Open: noop, Flags: flag("a-flag")}, "--a-flag is already registered by a"},
		{"the registry's flag", telemetry.Descriptor{Name: "x", Open: noop, Flags: flag("telemetry")}, "--telemetry is already registered by the registry"},
		{"auto flag without Named", telemetry.Descriptor{Name: "x", Open: noop, Auto: &telemetry.AutoRole{Flag: "x-url"}}, "needs Named"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := telemetry.NewRegistry("")
			if err := r.Register(telemetry.Descriptor{Name: "a", Open: noop, Flags: flag("a-flag")}); err != nil {
				t.Fatal(err)
			}
			err := r.Register(tc.d)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if got := r.Names(); !slices.Equal(got, []string{"auto", "a"}) {
				t.Errorf("a refused source was kept: %v", got)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	r := telemetry.NewRegistry("")
	var n int
	for _, d := range []telemetry.Descriptor{
		{Name: "a", Open: opens("a", &n)}, {Name: "b", Open: opens("b", &n)}, {Name: "off", Open: opens("off", &n), Alone: true},
	} {
		if err := r.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		given []string
		want  []string // nil: an error with msg
		msg   string
	}{
		{given: nil, want: []string{"auto"}},
		{given: []string{"b", "a"}, want: []string{"b", "a"}},
		{given: []string{"c"}, msg: `--telemetry "c": valid are auto, a, b, off`},
		{given: []string{"a", "a"}, msg: "--telemetry a is given twice"},
		{given: []string{"a", "auto"}, msg: "--telemetry auto cannot be combined with other sources (a, auto): name each source to run side by side"},
		{given: []string{"off", "a"}, msg: "--telemetry off cannot be combined with other sources (off, a)"},
	} {
		sel, err := r.Select(tc.given)
		switch {
		case tc.want == nil && (err == nil || !strings.Contains(err.Error(), tc.msg)):
			t.Errorf("%v: err = %v, want %q", tc.given, err, tc.msg)
		case tc.want != nil && (err != nil || !slices.Equal(sel.Names(), tc.want)):
			t.Errorf("%v: %v, %v; want %v", tc.given, sel.Names(), err, tc.want)
		}
	}
}

// autoRegistry: "low" and "high" are ranked (registered high first, low
// ranks first), "named" is named by --named-url, "skipped" is passed by
// with a reason, "hinted" only hints.
func autoRegistry(t *testing.T, lowErr, highErr error, closed *int) *telemetry.Registry {
	t.Helper()
	r := telemetry.NewRegistry("")
	open := func(name string, err error) func(context.Context, telemetry.Values, telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
		if err != nil {
			return openErr(err)
		}
		return opens(name, closed)
	}
	fatal := func(err error) bool { return !errors.Is(err, errGone) }
	for _, d := range []telemetry.Descriptor{
		{Name: "high", Open: open("high", highErr), Auto: &telemetry.AutoRole{Rank: 20, How: "high found", Fatal: fatal}},
		{Name: "named", Open: opens("named", closed), Flags: func(f *pflag.FlagSet) { f.String("named-url", "", "") },
			Auto: &telemetry.AutoRole{Flag: "named-url", Named: func(v telemetry.Values) bool { return v.GetString("named-url") != "" },
				Hint: "For named use --named-url", ProbeWhy: "named: no --named-url given"}},
		{Name: "skipped", Open: opens("skipped", closed), Auto: &telemetry.AutoRole{Rank: 5,
			Skip: func(telemetry.Env) (string, bool) { return "skipped: not here", true }}},
		{Name: "low", Open: open("low", lowErr), Auto: &telemetry.AutoRole{Rank: 10, How: "low found", Fatal: fatal}},
		{Name: "hinted", Open: opens("hinted", closed), Auto: &telemetry.AutoRole{Hint: "or try hinted"}},
	} {
		if err := r.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func TestOpenAuto(t *testing.T) {
	const noneNote = "auto: no power source found, energy metrics will be not applicable: skipped: not here; low: not on this machine; high: not on this machine. For named use --named-url; or try hinted; --telemetry none silences this warning"
	gone := func(n string) error { return fmt.Errorf("%s: %w", n, errGone) }
	for _, tc := range []struct {
		name          string
		args          []string
		lowErr, hiErr error
		source, note  string // source "": an error with note
	}{
		{name: "a flag names the source, before any ranked one", args: []string{"--named-url", "x"}, source: "named", note: "auto (--named-url given): named note"},
		{name: "the lowest rank that opens", source: "low", note: "auto (low found): low note"},
		{name: "the next when one is not there", lowErr: gone("low"), source: "high", note: "auto (high found): high note"},
		{name: "one there that fails ends auto", lowErr: errors.New("low: broken GPU"), note: "low: broken GPU"},
		{name: "none found", lowErr: gone("low"), hiErr: gone("high"), source: "none", note: noneNote},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var closed int
			r := autoRegistry(t, tc.lowErr, tc.hiErr, &closed)
			v, given := values(t, r, tc.args...)
			sel, err := r.Check(given, v)
			if err != nil {
				t.Fatal(err)
			}
			var warned []string
			src, info, err := r.Open(context.Background(), sel, v, telemetry.Env{NoSource: func(w string) { warned = append(warned, w) }})
			if tc.source == "" {
				if err == nil || err.Error() != tc.note {
					t.Fatalf("err = %v, want %q", err, tc.note)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.Source != tc.source || info.Note != tc.note {
				t.Errorf("info = %+v, want %s %q", info, tc.source, tc.note)
			}
			if (src == nil) != (tc.source == "none") {
				t.Errorf("source %v", src)
			}
			if tc.source == "none" && (len(warned) != 1 || "auto: "+warned[0] != tc.note) {
				t.Errorf("NoSource was told %q", warned)
			}
		})
	}
}

func TestProbeAuto(t *testing.T) {
	var closed int
	r := autoRegistry(t, fmt.Errorf("low: %w", errGone), errGone, &closed)
	v, given := values(t, r)
	sel, _ := r.Check(given, v)
	l, err := r.Probe(context.Background(), sel, v, telemetry.Env{})
	if err != nil {
		t.Fatal(err)
	}
	// The ranked sources' reasons, then each ProbeWhy.
	want := []string{"skipped: not here", "low: not on this machine", "not on this machine", "named: no --named-url given"}
	if l.Source != "none" || !slices.Equal(l.Why, want) || len(l.Devices) != 0 || l.Declined {
		t.Errorf("listing = %+v, want why %q", l, want)
	}

	// The source auto opens is listed, and closed.
	r = autoRegistry(t, nil, nil, &closed)
	l, err = r.Probe(context.Background(), sel, v, telemetry.Env{})
	if err != nil || l.Source != "low" || l.Detail != "low note" || len(l.Devices) != 1 || l.Devices[0].ID != "low0" || l.Devices[0].Memory != "no" {
		t.Errorf("listing = %+v, %v", l, err)
	}
	if closed != 1 {
		t.Errorf("%d closes after the listing, want 1", closed)
	}
}

func TestCheckAutoNamedTwice(t *testing.T) {
	r := telemetry.NewRegistry("")
	for _, n := range []string{"a", "b"} {
		flag := n + "-url"
		if err := r.Register(telemetry.Descriptor{Name: n, Open: openErr(nil),
			Flags: func(f *pflag.FlagSet) { f.String(flag, "", "") },
			Auto:  &telemetry.AutoRole{Flag: flag, Named: func(v telemetry.Values) bool { return v.GetString(flag) != "" }}}); err != nil {
			t.Fatal(err)
		}
	}
	v, given := values(t, r, "--a-url", "x", "--b-url", "y")
	if _, err := r.Check(given, v); err == nil || err.Error() != "--a-url and --b-url name two different power sources: choose one with --telemetry" {
		t.Errorf("err = %v", err)
	}
	// Named explicitly, auto's conflict is not auto's.
	v, given = values(t, r, "--telemetry", "a", "--a-url", "x", "--b-url", "y")
	if _, err := r.Check(given, v); err != nil {
		t.Errorf("err = %v", err)
	}
}

func TestOpenSideBySide(t *testing.T) {
	var closed int
	r := telemetry.NewRegistry("")
	for _, d := range []telemetry.Descriptor{
		{Name: "a", Open: opens("a", &closed)},
		{Name: "b", Open: func(ctx context.Context, v telemetry.Values, env telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
			src, info, err := opens("b", &closed)(ctx, v, env)
			info.Simulated = true
			return src, info, err
		}},
		{Name: "broken", Open: openErr(errors.New("broken: no device"))},
	} {
		if err := r.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	sel, _ := r.Select([]string{"a", "b"})
	src, info, err := r.Open(context.Background(), sel, nil, telemetry.Env{})
	if err != nil {
		t.Fatal(err)
	}
	devs, _ := src.Devices(context.Background())
	if info.Source != "a+b" || !info.Simulated || info.Note != "side by side: a: a note | b: b note" || len(devs) != 2 {
		t.Errorf("info = %+v, devices %v", info, devs)
	}
	_ = src.Close()
	closed = 0
	sel, _ = r.Select([]string{"a", "broken"})
	if _, _, err := r.Open(context.Background(), sel, nil, telemetry.Env{}); err == nil || err.Error() != "broken: no device" {
		t.Errorf("err = %v", err)
	}
	if closed != 1 {
		t.Errorf("a was closed %d times after broken failed, want 1", closed)
	}
}

// What the run asks of the sources it names is a property of their
// descriptors, not of their names.
func TestAny(t *testing.T) {
	r := telemetry.NewRegistry("")
	var n int
	for _, d := range []telemetry.Descriptor{
		{Name: "gpus", Open: opens("gpus", &n)},
		{Name: "tape", Open: opens("tape", &n), Replays: true},
		{Name: "twin", Open: opens("twin", &n), FollowsSimulatedEngine: true},
	} {
		if err := r.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	replays := func(d telemetry.Descriptor) bool { return d.Replays }
	follows := func(d telemetry.Descriptor) bool { return d.FollowsSimulatedEngine }
	for _, c := range []struct {
		names   []string
		has     func(telemetry.Descriptor) bool
		want    bool
		explain string
	}{
		{[]string{"tape"}, replays, true, "tape replays"},
		{[]string{"gpus", "twin"}, follows, true, "twin follows the simulated engine"},
		{[]string{"gpus", "tape"}, follows, false, "neither follows it"},
		{[]string{telemetry.Auto, "unknown"}, replays, false, "auto and unknown names are no source"},
		{nil, replays, false, "no names"},
	} {
		if got := r.Any(c.names, c.has); got != c.want {
			t.Errorf("Any(%v) = %v, want %v (%s)", c.names, got, c.want, c.explain)
		}
	}
}
