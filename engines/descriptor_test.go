package engines_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/engines"
)

func start(engines.Options) (engines.Engine, error) { return nil, nil }
func attach(engines.Remote) (engines.Engine, error) { return nil, nil }

// A small registry: two managed kinds (one Ollama-API), a generic
// OpenAI-compatible kind and a simulated one.
func testRegistry(t *testing.T) *engines.Registry {
	t.Helper()
	r := engines.NewRegistry()
	for _, d := range []engines.Descriptor{
		{Kind: "a", API: engines.APIOpenAI, Start: start, Attach: attach, DefaultFamilies: []string{"a:x"}},
		{Kind: "o", API: engines.APIOllama, Start: start, Attach: attach},
		{Kind: "b", API: engines.APIOpenAI, Start: start, DefaultFamilies: []string{"b:y", "b:z"}},
		{Kind: "any", API: engines.APIOpenAI, Generic: true, Attach: attach},
		{Kind: "s", API: engines.APIOpenAI, Simulated: true, Start: start, DefaultFamilies: []string{"s:q"}},
	} {
		if err := r.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func TestRegisterErrors(t *testing.T) {
	r := testRegistry(t)
	cases := []struct {
		d    engines.Descriptor
		want string
	}{
		{engines.Descriptor{Kind: "a", API: engines.APIOpenAI, Start: start}, "registered twice"},
		{engines.Descriptor{API: engines.APIOpenAI, Start: start}, "without a kind"},
		{engines.Descriptor{Kind: "n", API: engines.APIOpenAI}, "neither started nor attached"},
		{engines.Descriptor{Kind: "n", API: engines.APIOpenAI, Simulated: true}, "neither started nor attached"},
		{engines.Descriptor{Kind: "g", API: "grpc", Start: start}, "API \"grpc\""},
		{engines.Descriptor{Kind: "any2", API: engines.APIOpenAI, Generic: true, Attach: attach}, "already the generic"},
		{engines.Descriptor{Kind: "x", API: engines.APIOpenAI, Start: start, Settings: []engines.Setting{{Flag: "x-fast"}}}, "setting --x-fast is not among its flags"},
		{engines.Descriptor{Kind: "x", API: engines.APIOpenAI, Start: start, Flags: []string{"x-mode"},
			Settings: []engines.Setting{{Flag: "x-mode", Default: "slow", Values: []engines.Value{{Name: "fast"}}}}}, `default of setting --x-mode "slow": want fast`},
	}
	for _, c := range cases {
		err := r.Register(c.d)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.d.Kind, err, c.want)
		}
	}
	if got := r.Kinds(); !slices.Equal(got, []string{"a", "o", "b", "any", "s"}) {
		t.Errorf("a failed registration changed the registry: %v", got)
	}
}

func TestForStart(t *testing.T) {
	r := testRegistry(t)
	cases := []struct{ kind, want, err string }{
		{"a", "a", ""},
		{"o", "o", ""},
		{"any", "", "--engine any needs --engine-url"},
		{"s", "s", ""}, // the simulator is started like the others
		{"zz", "", "want one of a, o, b, s (or --engine-url URL)"},
	}
	for _, c := range cases {
		d, err := r.ForStart(c.kind)
		if d.Kind != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %q %v, want %q %q", c.kind, d.Kind, err, c.want, c.err)
		}
	}
}

func TestForRemote(t *testing.T) {
	r := testRegistry(t)
	cases := []struct{ kind, api, want, err string }{
		{"", "", "any", ""},                     // unknown kind: the generic server
		{"", engines.APIOpenAI, "any", ""},      // of the OpenAI API
		{"", engines.APIOllama, "o", ""},        // no generic Ollama kind: the first that serves it
		{"any", engines.APIOllama, "o", ""},     // the generic kind follows the API
		{"a", "", "a", ""},                      // a named kind
		{"a", engines.APIOllama, "a", ""},       // keeps its kind whatever the API
		{"b", "", "", "want any, a or o"},       // cannot attach
		{"s", "", "", "with --engine-url"},      // simulated
		{"", "grpc", "", "no engine serves it"}, // unknown API
	}
	for _, c := range cases {
		d, err := r.ForRemote(c.kind, c.api)
		if d.Kind != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q/%q: %q %v, want %q %q", c.kind, c.api, d.Kind, err, c.want, c.err)
		}
	}
}

func TestFamilies(t *testing.T) {
	r := testRegistry(t)
	cases := []struct {
		kind string
		want []string
	}{
		{"a", []string{"a:x"}},
		{"o", nil},
		// The generic server may be any OpenAI-API kind: a's then b's
		// families, in registration order; never the simulator's.
		{"any", []string{"a:x", "b:y", "b:z"}},
		{"s", []string{"s:q"}},
		{"zz", nil},
	}
	for _, c := range cases {
		if got := r.Families(c.kind); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.kind, got, c.want)
		}
	}
	// The caller's copy is its own.
	f := r.Families("a")
	f[0] = "changed"
	if r.Families("a")[0] != "a:x" {
		t.Error("Families shares the descriptor's slice")
	}
}

// TestSettings: each kind declares its own settings with their flags; the
// registry reads them all from the command line and checks their values
// against the declarations.
func TestSettings(t *testing.T) {
	r := engines.NewRegistry()
	for _, d := range []engines.Descriptor{
		{Kind: "a", API: engines.APIOpenAI, Start: start, Flags: []string{"model", "a-warm"}, Settings: []engines.Setting{{Flag: "a-warm"}}},
		{Kind: "o", API: engines.APIOllama, Start: start, Flags: []string{"o-api"}, Settings: []engines.Setting{{Flag: "o-api", Values: []engines.Value{{Name: "native"}, {Name: "openai"}}}}},
	} {
		if err := r.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	flags := map[string]string{"a-warm": "true", "o-api": "openai", "model": "m"}
	s := r.Settings(func(f string) string { return flags[f] })
	if len(s) != 2 || !s.Bool("a-warm") || s["o-api"] != "openai" {
		t.Errorf("settings %v, want a-warm and o-api only", s)
	}
	for _, tc := range []struct {
		name string
		s    engines.Settings
		want string
	}{
		{"defaults", engines.Settings{"a-warm": "", "o-api": ""}, ""},
		{"values", engines.Settings{"a-warm": "false", "o-api": "native"}, ""},
		{"not a boolean", engines.Settings{"a-warm": "yes please"}, `--a-warm "yes please": want true or false`},
		{"not a value", engines.Settings{"o-api": "rest"}, `--o-api "rest": want native or openai`},
		{"nobody's", engines.Settings{"z-extra": "1"}, "--z-extra: no engine takes it"},
	} {
		err := r.CheckSettings(tc.s)
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if (engines.Settings{}).Bool("a-warm") {
		t.Error("an unset boolean is on")
	}
}

// TestSettingHelp: a setting's help is its doc, then each value that has
// a doc of its own, "or" before the last; the registry lists every
// declared setting once, in registration order, for the command line.
func TestSettingHelp(t *testing.T) {
	vals := []engines.Value{{Name: "a", Doc: "first"}, {Name: "b"}, {Name: "c", Doc: "third"}, {Name: "d", Doc: "fourth"}}
	for _, tc := range []struct {
		st   engines.Setting
		want string
	}{
		{engines.Setting{Flag: "x", Doc: "a boolean"}, "a boolean"},
		{engines.Setting{Flag: "x", Doc: "plain values", Values: []engines.Value{{Name: "a"}, {Name: "b"}}}, "plain values"},
		{engines.Setting{Flag: "x", Doc: "two", Values: vals[:1]}, "two: a (first)"},
		{engines.Setting{Flag: "x", Doc: "behaviour", Values: vals}, "behaviour: a (first), c (third) or d (fourth)"},
	} {
		if got := tc.st.Help(); got != tc.want {
			t.Errorf("help %q, want %q", got, tc.want)
		}
	}
	r := engines.NewRegistry()
	for _, d := range []engines.Descriptor{
		{Kind: "a", API: engines.APIOpenAI, Start: start, Flags: []string{"warm", "mode"}, Settings: []engines.Setting{{Flag: "warm"}, {Flag: "mode", Values: vals, Default: "b"}}},
		{Kind: "b", API: engines.APIOpenAI, Start: start, Flags: []string{"warm", "pull"}, Settings: []engines.Setting{{Flag: "warm"}, {Flag: "pull"}}},
	} {
		if err := r.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, st := range r.Declared() {
		got = append(got, st.Flag+"="+st.Default)
	}
	if want := []string{"warm=", "mode=b", "pull="}; !slices.Equal(got, want) {
		t.Errorf("declared %v, want %v", got, want)
	}
}

// SameModel: Ollama's implicit ":latest" on one side only; a tag after a
// registry port is still read from the last path segment.
func TestSameModel(t *testing.T) {
	for _, c := range []struct {
		want, served string
		same         bool
	}{
		{"tiny", "tiny", true},
		{"tiny", "tiny:latest", true},
		{"tiny:latest", "tiny", true},
		{"tiny:q8", "tiny:latest", false},
		{"tiny", "tiny:q8", false},
		{"host:5000/tiny", "host:5000/tiny:latest", true},
		{"Qwen/Qwen3-8B", "Qwen/Qwen3-8B", true},
		{"Qwen/Qwen3-8B", "Qwen/Qwen3-4B", false},
		{"", ":latest", false},
		{"tiny", "", false},
	} {
		if got := engines.SameModel(c.want, c.served); got != c.same {
			t.Errorf("SameModel(%q, %q) = %v, want %v", c.want, c.served, got, c.same)
		}
	}
}
