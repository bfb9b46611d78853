// Package workload loads prompt datasets and freezes them into request sets.
//
// A dataset is read in one of four formats (ShareGPT JSON, JSONL prompts,
// OpenAI chat JSONL, HumanEval-style code tasks), either as a JSON array or
// as one JSON object per line. Loading samples it (deterministically, from a
// seed), resolves every prompt's max_tokens, and computes a sha256 over the
// frozen prompts and options so that a run archive can say exactly which
// requests were sent. Three small sample sets written for the project are
// embedded: see Builtins.
package workload

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/joulebench/joulebench/internal/boundedfile"
)

// Format names.
const (
	FormatShareGPT = "sharegpt"
	FormatJSONL    = "jsonl"
	FormatChat     = "chat"
	FormatCode     = "code"
	// FormatConversation reads a multi-turn dataset (ShareGPT's multi-turn
	// records or the turns schema, see LoadConversations) whose turns are
	// sent one after the other with the conversation so far; as a request
	// set it is the turns, in order (see ConversationRequestSet).
	FormatConversation = "conversation"
	FormatAuto         = "auto"
)

// Formats lists the dataset formats Parse accepts, "auto" last.
var Formats = []string{FormatShareGPT, FormatJSONL, FormatChat, FormatCode, FormatConversation, FormatAuto}

// Defaults used when Options leaves a value at zero.
const (
	// DefaultMaxTokens is a prompt's max_tokens when neither the options,
	// the record nor a reference answer say otherwise.
	DefaultMaxTokens = 256
	// DefaultMaxTokensCap bounds max_tokens derived from a reference answer
	// when Options.MaxTokensCap is zero.
	DefaultMaxTokensCap = 2048
	// MinDerivedMaxTokens is the lower clamp of max_tokens derived from a
	// reference answer.
	MinDerivedMaxTokens = 16
	// CharsPerToken converts a reference answer's length to tokens.
	CharsPerToken = 4
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Prompt is one request's input.
type Prompt struct {
	// ID is stable across loads: the record's id or task_id, else its
	// 1-based line number (JSONL) or 0-based index (JSON array).
	ID string `json:"id"`
	// Prompt is the text for completions-style requests; chat requests use
	// it as a single user message when Messages is empty.
	Prompt string `json:"prompt,omitempty"`
	// Messages is the chat form.
	Messages []Message `json:"messages,omitempty"`
	// MaxTokens is resolved when a set is frozen (Load, Parse): it is never
	// zero in a RequestSet. In a record, 0 means "use the set's default".
	MaxTokens int `json:"max_tokens"`
	// RefOutputChars is the length in characters of the dataset's reference
	// answer (ShareGPT's next assistant turn, a code task's canonical
	// solution); 0 when the dataset has none.
	RefOutputChars int `json:"ref_output_chars,omitempty"`
}

// ChatMessages returns the prompt as chat messages: Messages, or Prompt as a
// single user message.
func (p Prompt) ChatMessages() []Message {
	if len(p.Messages) > 0 {
		return p.Messages
	}
	return []Message{{Role: "user", Content: p.Prompt}}
}

// CompletionText returns the prompt as one text for completions-style
// requests: Prompt, or the messages' contents joined by blank lines.
func (p Prompt) CompletionText() string {
	if p.Prompt != "" || len(p.Messages) == 0 {
		return p.Prompt
	}
	parts := make([]string, len(p.Messages))
	for i, m := range p.Messages {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n\n")
}

// Options say how a dataset is read and sampled.
type Options struct {
	// Format is one of Formats; "" means auto (detected from the keys of
	// the first record).
	Format string `json:"format"`
	// Count is how many prompts to keep; 0 keeps all.
	Count int `json:"count"`
	// Seed drives Shuffle; it has no effect (and is not hashed) without it.
	Seed int64 `json:"seed"`
	// Shuffle samples in a seeded random order instead of file order.
	Shuffle bool `json:"shuffle"`
	// Repeat allows Count to exceed the dataset: prompts are reused in the
	// same (possibly shuffled) order, with "~2", "~3", ... appended to the
	// ids of the repeats. Without it, such a Count is an error.
	Repeat bool `json:"repeat"`
	// MaxTokens, when > 0, is every prompt's max_tokens. When 0 a prompt
	// keeps its record's max_tokens (capped by MaxTokensCap when that is
	// set), else RefOutputChars/4 clamped to [16, MaxTokensCap], else 256.
	MaxTokens int `json:"max_tokens"`
	// MaxTokensCap bounds derived max_tokens; 0 means DefaultMaxTokensCap.
	MaxTokensCap int `json:"max_tokens_cap"`
	// Temperature and IgnoreEOS are sent with every request.
	Temperature float64 `json:"temperature"`
	IgnoreEOS   bool    `json:"ignore_eos"`
	// MemoryAvailable bounds the memory the set and its run may take, in
	// bytes: a Count that would not fit is refused before anything is
	// allocated for it. 0 asks the system (Linux: MemAvailable and the
	// cgroup limit); negative turns the check off. Not part of the sha256.
	MemoryAvailable int64 `json:"-"`
}

// RequestSet is a frozen, sampled dataset.
type RequestSet struct {
	// Source is the file path, or "builtin:<name>".
	Source string
	// Format is the format the data was read as (never "auto").
	Format  string
	Prompts []Prompt
	// Skipped counts records that hold no usable prompt (a ShareGPT
	// conversation without a human turn, or with an empty one); they are
	// not errors.
	Skipped int
	// SHA256 is the hex sha256 of the canonical JSON of Options and
	// Prompts (see Canonical). It does not depend on Source.
	SHA256 string
	// Options are the effective options: Format resolved, MaxTokensCap
	// defaulted, Seed zeroed when Shuffle is off.
	Options Options
	// Unique is how many distinct prompts the set was drawn from (the
	// dataset's usable prompts).
	Unique int
	// Sampling says in words how the prompts were drawn (order or seeded
	// shuffle, repeats), for run.json.
	Sampling string
	// Origin says where a downloaded dataset came from; nil for a built-in
	// set, a local file or the synthetic set.
	Origin *Origin
	// LengthMethod says how a synthetic set's lengths are in the served
	// model's tokens (LengthTokenize, LengthCalibrated, LengthEstimate);
	// "" for a dataset whose prompts are what they are.
	LengthMethod string
	// Arrivals, when not nil, are the prompts' send times from the start
	// of the stage (a replayed trace): they replace the stage's load shape.
	Arrivals []time.Duration
	// Trace says which trace and window a replayed set comes from.
	Trace *TraceInfo
	// Conversations, when not nil, is the multi-turn set the prompts are
	// the turns of: it is sent conversation by conversation.
	Conversations *ConversationSet
	// refit regenerates a generated set (shared prefixes, a trace) with
	// its lengths divided by tokens per word (see FitRatio); nil for the
	// others.
	refit func(tokensPerWord float64) (*RequestSet, error)
}

// canonicalVersion changes whenever the canonical form does.
const canonicalVersion = 1

type canonicalForm struct {
	Version int      `json:"v"`
	Options Options  `json:"options"`
	Prompts []Prompt `json:"prompts"`
}

// Canonical returns the canonical JSON the SHA256 is computed over:
// {"v":1,"options":{...},"prompts":[...]} with fields in a fixed order and
// no insignificant whitespace.
func (s *RequestSet) Canonical() []byte {
	var b bytes.Buffer
	s.writeCanonical(&b)
	return b.Bytes()
}

// canonicalSum is the hex sha256 of Canonical followed by extra, computed
// prompt by prompt: a set of many repeated prompts never holds its whole
// canonical JSON (20,000 requests of a 1 MiB prompt would be 20 GB).
func (s *RequestSet) canonicalSum(extra string) string {
	h := sha256.New()
	s.writeCanonical(h)
	io.WriteString(h, extra)
	return hex.EncodeToString(h.Sum(nil))
}

// writeCanonical writes exactly what json.Marshal writes for
// canonicalForm, one prompt at a time. Writes go to a hash or a buffer,
// which do not fail.
func (s *RequestSet) writeCanonical(w io.Writer) {
	must := func(b []byte, err error) []byte {
		if err != nil {
			// Only strings, ints, bools and a finite float: cannot fail.
			panic("workload: canonical json: " + err.Error())
		}
		return b
	}
	fmt.Fprintf(w, `{"v":%d,"options":`, canonicalVersion)
	w.Write(must(json.Marshal(s.Options)))
	io.WriteString(w, `,"prompts":`)
	if s.Prompts == nil {
		io.WriteString(w, "null}")
		return
	}
	io.WriteString(w, "[")
	// An Encoder reuses its buffer: no copy of each prompt's JSON.
	enc := json.NewEncoder(dropNewline{w})
	for i := range s.Prompts {
		if i > 0 {
			io.WriteString(w, ",")
		}
		if err := enc.Encode(&s.Prompts[i]); err != nil {
			must(nil, err)
		}
	}
	io.WriteString(w, "]}")
}

// dropNewline drops the newline json.Encoder ends each value with (the
// only raw newline in its output: one in a string is escaped), so that
// the value is what json.Marshal writes.
type dropNewline struct{ w io.Writer }

func (d dropNewline) Write(p []byte) (int, error) {
	if _, err := d.w.Write(bytes.TrimSuffix(p, []byte("\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

//go:embed data
var builtinFS embed.FS

// builtinFiles maps a built-in set's name to its embedded file.
var builtinFiles = map[string]string{
	"chat":         "data/chat.json",
	"code":         "data/code.jsonl",
	"long-context": "data/long-context.jsonl",
}

// Builtins returns the names of the embedded sample sets, sorted.
func Builtins() []string {
	names := make([]string, 0, len(builtinFiles))
	for n := range builtinFiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LoadBuiltin loads an embedded sample set by name (see Builtins).
func LoadBuiltin(name string, opt Options) (*RequestSet, error) {
	file, ok := builtinFiles[name]
	if !ok {
		return nil, fmt.Errorf("unknown built-in request set %q (have %s)", name, strings.Join(Builtins(), ", "))
	}
	data, err := builtinFS.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("built-in request set %q: %w", name, err)
	}
	return parse(data, "builtin:"+name, opt)
}

// Load reads a dataset file. With Format "auto" (or "") the format is
// detected from the content. A file that Hub.Fetch cached carries its
// origin (PATH.origin.json beside it) into the set. The file must be a
// regular file (not a device such as /dev/zero, nor a pipe) that fits in
// the memory available.
func Load(path string, opt Options) (*RequestSet, error) {
	// Checked before opening: opening a FIFO would wait for a writer.
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("request set: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("request set %s: not a regular file (%s); give a dataset file", path, st.Mode().Type())
	}
	if st.Size() > MaxDatasetBytes {
		return nil, fmt.Errorf("request set %s: %s, more than the %s a dataset file may have; use a smaller dataset", path, byteText(float64(st.Size())), byteText(MaxDatasetBytes))
	}
	avail := opt.MemoryAvailable
	if avail == 0 {
		avail, _ = availableMemory()
	}
	// The file is held whole while its records are decoded: about twice
	// its size.
	if avail > 0 && st.Size() > avail/2 {
		return nil, fmt.Errorf("request set %s: %s is more than half of the %s of memory available; use a smaller dataset", path, byteText(float64(st.Size())), byteText(float64(avail)))
	}
	// Read checks the kind and size again on the open file (opened without
	// blocking) and reads through a limit.
	data, err := boundedfile.Read(path, "request set", MaxDatasetBytes)
	if err != nil {
		return nil, err
	}
	set, err := parse(data, path, opt)
	if err != nil {
		return nil, err
	}
	if o, err := readOrigin(path); err == nil {
		set.Origin = o
	}
	return set, nil
}

// Open loads a dataset by name: a built-in set (see Builtins), the
// synthetic set (random, or random:input_len=…,output_len=…,range_ratio=…;
// see RandomSpec), the shared-prefix set (prefix:…, see PrefixSpec), a
// trace (trace:FILE,…, see TraceSpec; its requests in arrival order), or a
// file path. A Hub dataset (hf:…, sharegpt) must be
// fetched first (Hub.Fetch) and opened by its cached path.
func Open(name string, opt Options) (*RequestSet, error) {
	if _, ok := builtinFiles[name]; ok {
		return LoadBuiltin(name, opt)
	}
	if IsRandom(name) {
		spec, err := ParseRandomSpec(name)
		if err != nil {
			return nil, err
		}
		return Random(spec, opt)
	}
	if IsPrefix(name) {
		spec, err := ParsePrefixSpec(name)
		if err != nil {
			return nil, err
		}
		return SharedPrefix(spec, opt)
	}
	if IsTrace(name) {
		spec, err := ParseTraceSpec(name)
		if err != nil {
			return nil, err
		}
		t, err := LoadTrace(spec)
		if err != nil {
			return nil, err
		}
		return t.RequestSet(opt)
	}
	if h := HubName(name); h != "" {
		if _, err := os.Stat(name); err != nil {
			return nil, fmt.Errorf("request set %s: a Hub dataset is downloaded by the run command (--dataset %s), not opened directly", name, name)
		}
	}
	return Load(name, opt)
}

// OwnOutputLengths reports whether a dataset name gives each request its
// output length itself: the synthetic set (output_len), the shared-prefix
// set (output_len) and a trace (each row's). The simulator's quick
// max_tokens, meant to shorten a dataset's reference answers, leaves those
// alone; an explicit max_tokens still overrides the first two.
func OwnOutputLengths(name string) bool {
	return IsRandom(name) || IsPrefix(name) || IsTrace(name)
}

// Parse reads a dataset from r; name is used in errors and as Source.
func Parse(r io.Reader, name string, opt Options) (*RequestSet, error) {
	data, err := readBounded(r, name)
	if err != nil {
		return nil, err
	}
	return parse(data, name, opt)
}

// readBounded reads a dataset of at most MaxDatasetBytes (a file that grew
// past its checked size, or a stream without one, is still bounded).
func readBounded(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxDatasetBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", name, err)
	}
	if len(data) > MaxDatasetBytes {
		return nil, fmt.Errorf("%s: more than the %s a dataset may have; use a smaller dataset", name, byteText(MaxDatasetBytes))
	}
	return data, nil
}

func parse(data []byte, name string, opt Options) (*RequestSet, error) {
	if err := opt.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if opt.Format == FormatConversation {
		cs, err := ParseConversations(data, name, ConversationOptionsOf(opt))
		if err != nil {
			return nil, err
		}
		return cs.RequestSet(opt)
	}
	recs, err := splitRecords(data, name)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s: no records", name)
	}
	format := opt.Format
	if format == "" || format == FormatAuto {
		if format, err = detect(recs[0], name); err != nil {
			return nil, err
		}
	}
	prompts, skipped, err := decodeRecords(format, recs, name)
	if err != nil {
		return nil, err
	}
	if len(prompts) == 0 {
		return nil, fmt.Errorf("%s: no usable prompts (%d records skipped)", name, skipped)
	}
	opt.Format = format
	return freeze(prompts, skipped, name, opt)
}

func (o Options) validate() error {
	switch o.Format {
	case "", FormatShareGPT, FormatJSONL, FormatChat, FormatCode, FormatConversation, FormatAuto:
	default:
		return fmt.Errorf("unknown format %q (want one of %s)", o.Format, strings.Join(Formats, ", "))
	}
	switch {
	case o.Count < 0:
		return fmt.Errorf("count %d: must be >= 0", o.Count)
	case o.MaxTokens < 0:
		return fmt.Errorf("max_tokens %d: must be >= 0", o.MaxTokens)
	case o.MaxTokensCap < 0:
		return fmt.Errorf("max_tokens_cap %d: must be >= 0", o.MaxTokensCap)
	case o.Temperature < 0 || math.IsNaN(o.Temperature) || math.IsInf(o.Temperature, 0):
		return fmt.Errorf("temperature %v: must be a finite number >= 0", o.Temperature)
	}
	return nil
}

// freeze samples the prompts, resolves max_tokens and hashes the result.
func freeze(all []Prompt, skipped int, source string, opt Options) (*RequestSet, error) {
	if !opt.Shuffle {
		opt.Seed = 0
	}
	if opt.MaxTokensCap == 0 {
		opt.MaxTokensCap = DefaultMaxTokensCap
	}
	order := make([]int, len(all))
	for i := range order {
		order[i] = i
	}
	if opt.Shuffle {
		shuffle(order, opt.Seed)
	}
	n := len(all)
	if opt.Count > 0 {
		if opt.Count > n && !opt.Repeat {
			return nil, fmt.Errorf("%s: asked for %d prompts, the set has %d (set repeat to reuse prompts)", source, opt.Count, n)
		}
		n = opt.Count
	}
	if err := checkMemory(all, n, source, opt.MemoryAvailable); err != nil {
		return nil, err
	}
	prompts := make([]Prompt, n)
	for i := range prompts {
		p := all[order[i%len(all)]]
		if round := i / len(all); round > 0 {
			p.ID += "~" + strconv.Itoa(round+1)
		}
		p.MaxTokens = resolveMaxTokens(p, opt)
		prompts[i] = p
	}
	opt.Count = n
	set := &RequestSet{Source: source, Format: opt.Format, Prompts: prompts, Skipped: skipped, Options: opt,
		Unique: len(all), Sampling: sampling(n, len(all), opt)}
	set.SHA256 = set.canonicalSum("")
	return set, nil
}

// sampling describes how freeze drew n prompts from a set of size unique.
func sampling(n, unique int, opt Options) string {
	order := "in file order"
	if opt.Shuffle {
		order = fmt.Sprintf("in a seeded shuffle (PCG, seed %d)", opt.Seed)
	}
	if n <= unique {
		return fmt.Sprintf("%d of %d prompts %s", n, unique, order)
	}
	rounds := (n + unique - 1) / unique
	return fmt.Sprintf("%d requests from %d prompts %s, the order repeated %d times (round k ≥ 2 appends ~k to the id)", n, unique, order, rounds)
}

// resolveMaxTokens applies the precedence documented on Options.MaxTokens.
// opt.MaxTokensCap is already defaulted.
func resolveMaxTokens(p Prompt, opt Options) int {
	capTok := opt.MaxTokensCap
	switch {
	case opt.MaxTokens > 0:
		return opt.MaxTokens
	case p.MaxTokens > 0:
		return min(p.MaxTokens, capTok)
	case p.RefOutputChars > 0:
		lo := min(MinDerivedMaxTokens, capTok)
		return max(lo, min(p.RefOutputChars/CharsPerToken, capTok))
	default:
		return min(DefaultMaxTokens, capTok)
	}
}

// shuffle is a Fisher–Yates shuffle driven by PCG, whose output is fully
// specified, so a seed gives the same order on every Go version.
func shuffle(a []int, seed int64) {
	src := rand.NewPCG(uint64(seed), 0x6a6f756c6562656e) // "joulebench"
	for i := len(a) - 1; i > 0; i-- {
		// Lemire's multiply-high: uniform enough for sampling prompts.
		hi, _ := bits.Mul64(src.Uint64(), uint64(i+1))
		j := int(hi)
		a[i], a[j] = a[j], a[i]
	}
}
