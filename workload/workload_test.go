package workload

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func parseString(t *testing.T, data string, opt Options) *RequestSet {
	t.Helper()
	set, err := Parse(strings.NewReader(data), "test.jsonl", opt)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return set
}

func ids(set *RequestSet) []string {
	out := make([]string, len(set.Prompts))
	for i, p := range set.Prompts {
		out[i] = p.ID
	}
	return out
}

const shareGPTArray = `[
  {"id": "a", "conversations": [
    {"from": "human", "value": "Why is the sky blue?"},
    {"from": "gpt", "value": "Rayleigh scattering."}]},
  {"conversations": [{"from": "gpt", "value": "I speak first and nobody asks."}]},
  {"id": 7, "conversations": [
    {"from": "system", "value": "be brief"},
    {"from": "user", "value": "héllo"},
    {"from": "human", "value": "second question"},
    {"from": "assistant", "value": "ÀÉÎ"}]},
  {"conversations": [{"from": "human", "value": "   "}, {"from": "gpt", "value": "x"}]},
  {"conversations": [{"from": "human", "value": "no answer yet"}]}
]`

func TestFormats(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		format  string // requested
		want    string // detected
		prompts []Prompt
		skipped int
	}{
		{
			name: "sharegpt array", data: shareGPTArray, format: "auto", want: FormatShareGPT,
			prompts: []Prompt{
				// "Rayleigh scattering." is 20 characters: 20/4 = 5, clamped up to 16.
				{ID: "a", Prompt: "Why is the sky blue?", RefOutputChars: 20, MaxTokens: 16},
				// A reference of 3 characters (3 runes, 6 bytes) → 16 again.
				{ID: "7", Prompt: "héllo", RefOutputChars: 3, MaxTokens: 16},
				// No reference answer: the default 256. Default id: index 4.
				{ID: "4", Prompt: "no answer yet", MaxTokens: 256},
			},
			skipped: 2, // no human turn; blank human turn
		},
		{
			name:   "sharegpt jsonl with role/content turns",
			data:   `{"conversations":[{"role":"user","content":"q1"},{"role":"assistant","content":"` + strings.Repeat("x", 400) + `"}]}` + "\n",
			format: "", want: FormatShareGPT,
			prompts: []Prompt{{ID: "1", Prompt: "q1", RefOutputChars: 400, MaxTokens: 100}},
		},
		{
			name: "jsonl prompts", format: "jsonl", want: FormatJSONL,
			data: "{\"prompt\": \"one\"}\n\n  {\"prompt\": \"two\", \"max_tokens\": 32, \"id\": \"p2\"}\r\n{\"prompt\":\"three\",\"id\":3}",
			prompts: []Prompt{
				{ID: "1", Prompt: "one", MaxTokens: 256},
				{ID: "p2", Prompt: "two", MaxTokens: 32},
				{ID: "3", Prompt: "three", MaxTokens: 256},
			},
		},
		{
			name: "chat jsonl", format: "auto", want: FormatChat,
			data: `{"id":"c1","messages":[{"role":"system","content":"terse"},{"role":"user","content":"hi"}],"max_tokens":64}` + "\n" +
				`{"messages":[{"role":"user","content":"again"}]}`,
			prompts: []Prompt{
				{ID: "c1", Messages: []Message{{"system", "terse"}, {"user", "hi"}}, MaxTokens: 64},
				{ID: "2", Messages: []Message{{"user", "again"}}, MaxTokens: 256},
			},
		},
		{
			name: "code tasks", format: "auto", want: FormatCode,
			data: `{"task_id":"T/0","prompt":"def f():\n","canonical_solution":"    return 1\n","test":"","entry_point":"f"}` + "\n" +
				`{"task_id":"T/1","prompt":"def g():\n","canonical_solution":"` + strings.Repeat("y", 100000) + `"}`,
			prompts: []Prompt{
				{ID: "T/0", Prompt: "def f():\n", RefOutputChars: 13, MaxTokens: 16},
				// 100000/4 = 25000, capped at DefaultMaxTokensCap.
				{ID: "T/1", Prompt: "def g():\n", RefOutputChars: 100000, MaxTokens: DefaultMaxTokensCap},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := parseString(t, tt.data, Options{Format: tt.format})
			if set.Format != tt.want || set.Options.Format != tt.want {
				t.Errorf("format = %q (options %q), want %q", set.Format, set.Options.Format, tt.want)
			}
			if !reflect.DeepEqual(set.Prompts, tt.prompts) {
				t.Errorf("prompts:\n got %+v\nwant %+v", set.Prompts, tt.prompts)
			}
			if set.Skipped != tt.skipped {
				t.Errorf("skipped = %d, want %d", set.Skipped, tt.skipped)
			}
			if len(set.SHA256) != 64 {
				t.Errorf("sha256 = %q", set.SHA256)
			}
		})
	}
}

func TestDetectFailure(t *testing.T) {
	_, err := Parse(strings.NewReader(`{"text": "x", "label": 1}`), "d.jsonl", Options{Format: "auto"})
	if err == nil || !strings.Contains(err.Error(), `d.jsonl:1:1: cannot detect the format`) || !strings.Contains(err.Error(), `"label", "text"`) {
		t.Fatalf("err = %v", err)
	}
	_, err = Parse(strings.NewReader(`[1, 2]`), "d.json", Options{})
	if err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Fatalf("err = %v", err)
	}
	_, err = Parse(strings.NewReader(`{"prompt":"x"}`), "d.json", Options{Format: "csv"})
	if err == nil || !strings.Contains(err.Error(), `unknown format "csv"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestBadLinesAllReported(t *testing.T) {
	data := strings.Join([]string{
		`{"prompt": "fine"}`,                // 1
		`{"prompt": 42}`,                    // 2 wrong type
		`{"max_tokens": 3}`,                 // 3 missing prompt
		`{"prompt": "x", "max_tokens": -1}`, // 4 negative
		`{"prompt": "unterminated}`,         // 5 syntax
		``,                                  // 6 blank: ignored
		`{"prompt": "dup", "id": "d"}`,      // 7
		`{"prompt": "dup", "id": "d"}`,      // 8 duplicate id
		`   {"prompt": "x",, }`,             // 9 syntax, indented
		`{"prompt": ""}`,                    // 10 empty
		`{"prompt": "x", "id": [1]}`,        // 11 bad id
	}, "\n")
	_, err := Parse(strings.NewReader(data), "bad.jsonl", Options{Format: "jsonl"})
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("err = %v (%T), want *Errors", err, err)
	}
	wantLines := []int{2, 3, 4, 5, 8, 9, 10, 11}
	var gotLines []int
	for _, it := range errs.Items {
		gotLines = append(gotLines, it.Line)
	}
	if !reflect.DeepEqual(gotLines, wantLines) {
		t.Fatalf("lines = %v, want %v\n%v", gotLines, wantLines, err)
	}
	msg := err.Error()
	for _, want := range []string{
		`bad.jsonl:2: field "prompt": got number, want string`,
		`bad.jsonl:3: missing field "prompt"`,
		`bad.jsonl:4: field "max_tokens": -1, want >= 0`,
		`bad.jsonl:5:`, // syntax error with a column
		`bad.jsonl:8: duplicate id "d" (first on line 7)`,
		`bad.jsonl:9:19: invalid JSON`, // the second comma: 3 spaces + 15 characters before it
		`bad.jsonl:10: field "prompt": empty`,
		`bad.jsonl:11: field "id": want a string or a number`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if got := len(strings.Split(msg, "\n")); got != len(wantLines) {
		t.Errorf("%d lines in message, want %d", got, len(wantLines))
	}
}

func TestBadLinesCapped(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 30; i++ {
		b.WriteString(`{"messages": []}` + "\n")
	}
	_, err := Parse(strings.NewReader(b.String()), "many.jsonl", Options{Format: "chat"})
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("err = %v", err)
	}
	if len(errs.Items) != MaxErrors || errs.Omitted != 30-MaxErrors {
		t.Fatalf("items %d omitted %d", len(errs.Items), errs.Omitted)
	}
	if !strings.HasSuffix(err.Error(), "many.jsonl: ... and 10 more bad records") {
		t.Fatalf("tail of %q", err.Error())
	}
}

func TestBadRecordsPerFormat(t *testing.T) {
	tests := []struct{ format, data, want string }{
		{"sharegpt", `[{"id":"x"}]`, `f:1: missing field "conversations"`},
		{"sharegpt", "[\n{\"conversations\":[{\"value\":\"hi\"}]}]", `f:2: conversations[0]: missing "from"`},
		{"sharegpt", "[\n {\"conversations\": \"nope\"}\n]", `f:2: field "conversations": got string, want array`},
		{"sharegpt", "[\n{\"conversations\":[]},\n{\"conversations\":[]}  x", `f:3:`},
		{"sharegpt", "[\n{\"conversations\":[]}", `f:2:`},
		{"sharegpt", "[{\"conversations\":[{\"from\":\"human\",\"value\":\"a\"}]}] {}", `unexpected data after the top-level array`},
		{"chat", `{"messages":[{"role":"robot","content":"x"}]}`, `f:1: messages[0]: role "robot"`},
		{"chat", `{"messages":[{"role":"user","content":[{"type":"text"}]}]}`, `content parts are not supported`},
		{"chat", `{"messages":[{"role":"user"}]}`, `messages[0]: missing "content"`},
		{"chat", `{"messages":[{"role":"system","content":"x"}]}`, `no non-empty user message`},
		{"chat", `{"prompt":"x"}`, `missing field "messages"`},
		{"code", `{"prompt":"x"}`, `missing field "task_id"`},
		{"code", `{"task_id":"t"}`, `missing field "prompt"`},
		{"jsonl", `["prompt"]`, `f:1:2: record: got a string, want a JSON object`},
		{"jsonl", "{\"prompt\":\"a\"}\n [1]", `f:2:2: record: got an array, want a JSON object`},
	}
	for _, tt := range tests {
		_, err := Parse(strings.NewReader(tt.data), "f", Options{Format: tt.format})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %q: err = %v, want it to contain %q", tt.format, tt.data, err, tt.want)
		}
	}
}

func TestArrayRecordLines(t *testing.T) {
	data := "[\n  {\"conversations\": []},\n\n  {\"conversations\":\n   [{\"from\": \"human\", \"value\": 5}]}\n]"
	_, err := Parse(strings.NewReader(data), "x.json", Options{})
	if err == nil || !strings.Contains(err.Error(), `x.json:4: field "conversations.value": got number, want string`) {
		t.Fatalf("err = %v", err)
	}
}

func TestOnlySkippedIsAnError(t *testing.T) {
	_, err := Parse(strings.NewReader(`[{"conversations":[{"from":"gpt","value":"x"}]}]`), "s.json", Options{})
	if err == nil || !strings.Contains(err.Error(), "no usable prompts (1 records skipped)") {
		t.Fatalf("err = %v", err)
	}
	_, err = Parse(strings.NewReader("\n\n"), "e.jsonl", Options{})
	if err == nil || !strings.Contains(err.Error(), "no records") {
		t.Fatalf("err = %v", err)
	}
}

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(`{"prompt": "question ` + strings.Repeat("x", i) + `"}` + "\n")
	}
	return b.String()
}

func TestSampling(t *testing.T) {
	data := numbered(50)
	first := parseString(t, data, Options{Count: 5})
	if got, want := ids(first), []string{"1", "2", "3", "4", "5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("no shuffle: %v, want %v", got, want)
	}
	a := parseString(t, data, Options{Count: 10, Shuffle: true, Seed: 42})
	b := parseString(t, data, Options{Count: 10, Shuffle: true, Seed: 42})
	c := parseString(t, data, Options{Count: 10, Shuffle: true, Seed: 43})
	if !reflect.DeepEqual(ids(a), ids(b)) {
		t.Errorf("same seed, different samples: %v vs %v", ids(a), ids(b))
	}
	if reflect.DeepEqual(ids(a), ids(c)) {
		t.Errorf("seeds 42 and 43 gave the same sample %v", ids(a))
	}
	if reflect.DeepEqual(ids(a), ids(first)[:5]) {
		t.Errorf("shuffle kept file order")
	}
	// The shuffled sample is a prefix of the full shuffled order: growing
	// Count keeps the earlier picks.
	all := parseString(t, data, Options{Shuffle: true, Seed: 42})
	if !reflect.DeepEqual(ids(all)[:10], ids(a)) {
		t.Errorf("count 10 is not a prefix of the full order")
	}
	seen := map[string]bool{}
	for _, id := range ids(all) {
		seen[id] = true
	}
	if len(all.Prompts) != 50 || len(seen) != 50 {
		t.Errorf("full shuffle lost prompts: %d prompts, %d distinct", len(all.Prompts), len(seen))
	}
	// Pin the permutation: the order must not change between Go versions
	// or refactors, or archived sha256s stop matching.
	if got, want := ids(a), []string{"24", "15", "13", "39", "37", "22", "32", "40", "36", "25"}; !reflect.DeepEqual(got, want) {
		t.Errorf("seed 42 order = %q, want %q", got, want)
	}
}

func TestCountBeyondSet(t *testing.T) {
	data := numbered(3)
	_, err := Parse(strings.NewReader(data), "p.jsonl", Options{Count: 5})
	if err == nil || !strings.Contains(err.Error(), "asked for 5 prompts, the set has 3") {
		t.Fatalf("err = %v", err)
	}
	set := parseString(t, data, Options{Count: 7, Repeat: true})
	if got, want := ids(set), []string{"1", "2", "3", "1~2", "2~2", "3~2", "1~3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ids = %v, want %v", got, want)
	}
	if set.Prompts[3].Prompt != set.Prompts[0].Prompt {
		t.Fatalf("a repeat has a different prompt")
	}
}

func TestMaxTokensResolution(t *testing.T) {
	data := `{"prompt":"a","max_tokens":3000}` + "\n" + `{"prompt":"b"}` + "\n" + `{"prompt":"c","max_tokens":40}`
	tests := []struct {
		opt  Options
		want []int
	}{
		{Options{}, []int{2048, 256, 40}},                        // the default cap (2048) bounds record values too
		{Options{MaxTokens: 100}, []int{100, 100, 100}},          // fixed wins
		{Options{MaxTokensCap: 128}, []int{128, 128, 40}},        // cap bounds record and default values
		{Options{MaxTokensCap: 4096}, []int{3000, 256, 40}},      // a cap above the record keeps it
		{Options{MaxTokens: 9, MaxTokensCap: 5}, []int{9, 9, 9}}, // fixed ignores the cap
	}
	for _, tt := range tests {
		set := parseString(t, data, tt.opt)
		var got []int
		for _, p := range set.Prompts {
			got = append(got, p.MaxTokens)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%+v: max tokens %v, want %v", tt.opt, got, tt.want)
		}
	}
	// Reference lengths: chars/4 clamped to [16, cap].
	for _, tc := range []struct{ ref, capTok, want int }{
		{0, 2048, 256}, {10, 2048, 16}, {64, 2048, 16}, {68, 2048, 17}, {4000, 2048, 1000}, {40000, 2048, 2048}, {4000, 8, 8},
	} {
		got := resolveMaxTokens(Prompt{RefOutputChars: tc.ref}, Options{MaxTokensCap: tc.capTok})
		if got != tc.want {
			t.Errorf("ref %d cap %d: %d, want %d", tc.ref, tc.capTok, got, tc.want)
		}
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, opt := range []Options{{Count: -1}, {MaxTokens: -1}, {MaxTokensCap: -2}, {Temperature: -0.5}} {
		if _, err := Parse(strings.NewReader(`{"prompt":"x"}`), "o", opt); err == nil {
			t.Errorf("%+v: no error", opt)
		}
	}
}

func TestSHA256(t *testing.T) {
	data := numbered(20)
	base := Options{Count: 8, Shuffle: true, Seed: 1, Temperature: 0.7}
	ref := parseString(t, data, base)
	again, err := Parse(strings.NewReader(data), "another/name.jsonl", base)
	if err != nil {
		t.Fatal(err)
	}
	if again.SHA256 != ref.SHA256 {
		t.Errorf("sha256 depends on the source name or is unstable: %s vs %s", again.SHA256, ref.SHA256)
	}
	// Auto detection and the explicit format freeze to the same set.
	explicit := base
	explicit.Format = FormatJSONL
	if s := parseString(t, data, explicit); s.SHA256 != ref.SHA256 {
		t.Errorf("explicit format changed the sha256")
	}
	changes := map[string]func(*Options){
		"seed":        func(o *Options) { o.Seed = 2 },
		"count":       func(o *Options) { o.Count = 9 },
		"temperature": func(o *Options) { o.Temperature = 0 },
		"ignore_eos":  func(o *Options) { o.IgnoreEOS = true },
		"max_tokens":  func(o *Options) { o.MaxTokens = 64 },
		"cap":         func(o *Options) { o.MaxTokensCap = 100 },
		"shuffle":     func(o *Options) { o.Shuffle = false },
	}
	for name, change := range changes {
		o := base
		change(&o)
		if s := parseString(t, data, o); s.SHA256 == ref.SHA256 {
			t.Errorf("changing %s kept the sha256", name)
		}
	}
	// A prompt's text is covered.
	whole := parseString(t, data, Options{})
	if s := parseString(t, strings.Replace(data, "question x\"", "question y\"", 1), Options{}); s.SHA256 == whole.SHA256 {
		t.Errorf("changing a prompt kept the sha256")
	}
	// Without shuffle the seed does nothing and is not hashed.
	a := parseString(t, data, Options{Seed: 1})
	b := parseString(t, data, Options{Seed: 2})
	if a.SHA256 != b.SHA256 || a.Options.Seed != 0 {
		t.Errorf("seed without shuffle changed the sha256 (%v)", a.Options.Seed)
	}
	// Pin the canonical form so that a change to it is deliberate.
	one := parseString(t, `{"prompt":"hi","id":"p"}`, Options{})
	wantCanon := `{"v":1,"options":{"format":"jsonl","count":1,"seed":0,"shuffle":false,"repeat":false,"max_tokens":0,"max_tokens_cap":2048,"temperature":0,"ignore_eos":false},"prompts":[{"id":"p","prompt":"hi","max_tokens":256}]}`
	if got := string(one.Canonical()); got != wantCanon {
		t.Errorf("canonical form\n got %s\nwant %s", got, wantCanon)
	}
}

func TestBuiltins(t *testing.T) {
	if got, want := Builtins(), []string{"chat", "code", "long-context"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Builtins = %v", got)
	}
	counts := map[string]int{"chat": 41, "code": 20, "long-context": 8}
	formats := map[string]string{"chat": FormatShareGPT, "code": FormatCode, "long-context": FormatChat}
	for _, name := range Builtins() {
		set, err := LoadBuiltin(name, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(set.Prompts) != counts[name] || set.Format != formats[name] || set.Skipped != 0 {
			t.Errorf("%s: %d prompts, format %s, %d skipped", name, len(set.Prompts), set.Format, set.Skipped)
		}
		if set.Source != "builtin:"+name {
			t.Errorf("%s: source %q", name, set.Source)
		}
		for _, p := range set.Prompts {
			text := p.CompletionText()
			if strings.TrimSpace(text) == "" || p.MaxTokens <= 0 {
				t.Errorf("%s/%s: empty prompt or max_tokens %d", name, p.ID, p.MaxTokens)
			}
			if name == "long-context" {
				if n := utf8.RuneCountInString(text); n < 1500 || n > 4000 {
					t.Errorf("%s: %d characters, want 1500..4000", p.ID, n)
				}
			}
		}
	}
	chat, _ := LoadBuiltin("chat", Options{})
	short, long := 0, 0
	for _, p := range chat.Prompts {
		switch {
		case p.RefOutputChars < 100:
			short++
		case p.RefOutputChars > 600:
			long++
		}
	}
	if short < 5 || long < 5 {
		t.Errorf("chat reference answers not varied: %d short, %d long", short, long)
	}
	if _, err := LoadBuiltin("nope", Options{}); err == nil || !strings.Contains(err.Error(), "chat, code, long-context") {
		t.Errorf("unknown builtin: %v", err)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "set.jsonl")
	if err := os.WriteFile(path, []byte("{\"prompt\":\"a\"}\n{\"prompt\":5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, Options{})
	if err == nil || !strings.Contains(err.Error(), path+":2: ") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.json"), Options{}); err == nil {
		t.Fatal("missing file: no error")
	}
}

func TestPromptHelpers(t *testing.T) {
	p := Prompt{Prompt: "hi"}
	if got := p.ChatMessages(); !reflect.DeepEqual(got, []Message{{"user", "hi"}}) {
		t.Errorf("ChatMessages = %v", got)
	}
	q := Prompt{Messages: []Message{{"system", "s"}, {"user", "u"}}}
	if got := q.CompletionText(); got != "s\n\nu" {
		t.Errorf("CompletionText = %q", got)
	}
}
