package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/joulebench/joulebench/internal/boundedfile"
)

// Turn is one user turn of a conversation: the message, the answer's
// max_tokens, and how long the user thinks before sending it (after the
// previous answer).
type Turn struct {
	User      string        `json:"user"`
	MaxTokens int           `json:"max_tokens"`
	Think     time.Duration `json:"think_ns,omitempty"`
}

// Conversation is a multi-turn dialogue to replay: each turn is sent with
// the conversation so far (the system message, earlier user turns and the
// engine's own answers to them).
type Conversation struct {
	ID     string `json:"id"`
	System string `json:"system,omitempty"`
	Turns  []Turn `json:"turns"`
}

// ConversationOptions say how a conversation dataset is read.
type ConversationOptions struct {
	// Count keeps the first Count conversations (0: all).
	Count int
	// MaxTurns keeps each conversation's first MaxTurns turns (0: all).
	MaxTurns int
	// MaxTokens, when > 0, is every turn's max_tokens; else a turn keeps its
	// own, or its reference answer's length / 4 clamped to [16, 2048], or 256.
	MaxTokens int
	// Think is the think time of turns that give none.
	Think time.Duration
	// IgnoreEOS and Temperature are sent with every turn.
	IgnoreEOS   bool
	Temperature float64
}

// ConversationSet is a frozen conversation dataset.
type ConversationSet struct {
	Source        string
	Conversations []Conversation
	Options       ConversationOptions
	// Turns counts the turns of all conversations.
	Turns int
	// SHA256 is over the canonical JSON of the options and conversations.
	SHA256 string
}

// LoadConversations reads a conversation dataset: a JSON array or JSONL of
// ShareGPT records ({"id", "conversations": [{"from": "human"|"gpt"|
// "system", "value"}...]}, each human turn a turn, the gpt turn after it
// its reference answer) or of joulebench's schema ({"id", "system"?,
// "turns": [{"user", "max_tokens"?, "think_s"?}...]}).
func LoadConversations(path string, opt ConversationOptions) (*ConversationSet, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("conversations: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("conversations %s: not a regular file", path)
	}
	data, err := boundedfile.Read(path, "conversations", MaxDatasetBytes)
	if err != nil {
		return nil, err
	}
	return ParseConversations(data, path, opt)
}

// convRecord holds both schemas.
type convRecord struct {
	ID            json.RawMessage `json:"id"`
	System        string          `json:"system"`
	Conversations *[]shareGPTTurn `json:"conversations"`
	Turns         *[]struct {
		User      *string  `json:"user"`
		MaxTokens int      `json:"max_tokens"`
		ThinkS    *float64 `json:"think_s"`
	} `json:"turns"`
}

// ParseConversations is LoadConversations on a file's contents.
func ParseConversations(data []byte, name string, opt ConversationOptions) (*ConversationSet, error) {
	if opt.Count < 0 || opt.MaxTurns < 0 || opt.MaxTokens < 0 || opt.Think < 0 {
		return nil, fmt.Errorf("conversations %s: count, max turns, max tokens and think time must be >= 0", name)
	}
	recs, err := splitRecords(data, name)
	if err != nil {
		return nil, err
	}
	set := &ConversationSet{Source: name, Options: opt}
	for _, r := range recs {
		if opt.Count > 0 && len(set.Conversations) == opt.Count {
			break
		}
		c, err := decodeConversation(r, opt)
		if err != nil {
			var le *LineError
			if errors.As(err, &le) {
				return nil, fmt.Errorf("%s:%d: %s", name, le.Line, le.Msg)
			}
			return nil, fmt.Errorf("%s:%d: %w", name, r.line, err)
		}
		if len(c.Turns) == 0 {
			continue // no user turn: nothing to send
		}
		if opt.MaxTurns > 0 && len(c.Turns) > opt.MaxTurns {
			c.Turns = c.Turns[:opt.MaxTurns]
		}
		set.Turns += len(c.Turns)
		set.Conversations = append(set.Conversations, c)
	}
	if len(set.Conversations) == 0 {
		return nil, fmt.Errorf("conversations %s: no conversation with a user turn", name)
	}
	b, err := json.Marshal(struct {
		V             int                 `json:"v"`
		Options       ConversationOptions `json:"options"`
		Conversations []Conversation      `json:"conversations"`
	}{1, opt, set.Conversations})
	if err != nil {
		return nil, fmt.Errorf("conversations %s: %w", name, err)
	}
	sum := sha256.Sum256(b)
	set.SHA256 = hex.EncodeToString(sum[:])
	return set, nil
}

func decodeConversation(r record, opt ConversationOptions) (Conversation, error) {
	var rec convRecord
	if err := unmarshal(r, &rec); err != nil {
		return Conversation{}, err
	}
	id, err := recordID(r, rec.ID, "id")
	if err != nil {
		return Conversation{}, err
	}
	c := Conversation{ID: id, System: rec.System}
	switch {
	case rec.Turns != nil:
		for i, t := range *rec.Turns {
			if t.User == nil {
				return Conversation{}, &LineError{Line: r.line, Msg: fmt.Sprintf("turns[%d]: missing \"user\"", i)}
			}
			if t.MaxTokens < 0 || (t.ThinkS != nil && !(*t.ThinkS >= 0 && *t.ThinkS < 86400)) {
				return Conversation{}, &LineError{Line: r.line, Msg: fmt.Sprintf("turns[%d]: max_tokens must be >= 0 and think_s in [0, 86400)", i)}
			}
			turn := Turn{User: *t.User, MaxTokens: t.MaxTokens, Think: opt.Think}
			if t.ThinkS != nil {
				turn.Think = time.Duration(math.Round(*t.ThinkS * 1e9))
			}
			c.Turns = append(c.Turns, turn)
		}
	case rec.Conversations != nil:
		if err := shareGPTTurns(r, *rec.Conversations, &c, opt); err != nil {
			return Conversation{}, err
		}
	default:
		return Conversation{}, &LineError{Line: r.line, Msg: `missing field "turns" or "conversations"`}
	}
	for i := range c.Turns {
		if opt.MaxTokens > 0 {
			c.Turns[i].MaxTokens = opt.MaxTokens
		} else if c.Turns[i].MaxTokens == 0 {
			c.Turns[i].MaxTokens = DefaultMaxTokens
		}
	}
	return c, nil
}

// shareGPTTurns takes a ShareGPT conversation's human turns, each with its
// next gpt turn's length as the max_tokens reference.
func shareGPTTurns(r record, turns []shareGPTTurn, c *Conversation, opt ConversationOptions) error {
	for i, t := range turns {
		switch t.speaker() {
		case "":
			return &LineError{Line: r.line, Msg: fmt.Sprintf("conversations[%d]: missing \"from\"", i)}
		case "system":
			if len(c.Turns) == 0 {
				c.System = t.text()
			}
		case "human", "user":
			if strings.TrimSpace(t.text()) == "" {
				return nil // the conversation ends at an empty turn
			}
			turn := Turn{User: t.text(), Think: opt.Think}
			if i+1 < len(turns) {
				if n := utf8.RuneCountInString(turns[i+1].text()); n > 0 && turns[i+1].speaker() != "human" && turns[i+1].speaker() != "user" {
					turn.MaxTokens = min(DefaultMaxTokensCap, max(MinDerivedMaxTokens, n/CharsPerToken))
				}
			}
			c.Turns = append(c.Turns, turn)
		}
	}
	return nil
}

// ConversationOptionsOf maps a request set's options onto a conversation
// set's: Count counts conversations, MaxTokens fixes every turn's.
func ConversationOptionsOf(opt Options) ConversationOptions {
	return ConversationOptions{Count: opt.Count, MaxTokens: opt.MaxTokens, IgnoreEOS: opt.IgnoreEOS, Temperature: opt.Temperature}
}

// RequestSet is the set's turns as a frozen request set, in order (ids
// "<conversation id>#<turn>"): what the run counts and records as its
// request set. The turns are sent by loadgen.RunConversations, each with
// the conversation before it.
func (cs *ConversationSet) RequestSet(opt Options) (*RequestSet, error) {
	var prompts []Prompt
	for _, c := range cs.Conversations {
		for k, t := range c.Turns {
			prompts = append(prompts, Prompt{ID: fmt.Sprintf("%s#%d", c.ID, k+1), Prompt: t.User, MaxTokens: t.MaxTokens})
		}
	}
	opt.Count, opt.Shuffle, opt.Repeat = 0, false, false
	opt.Format = FormatConversation
	opt.MaxTokensCap = max(opt.MaxTokensCap, DefaultMaxTokensCap)
	set, err := freeze(prompts, 0, cs.Source, opt)
	if err != nil {
		return nil, err
	}
	set.SHA256 = cs.SHA256
	set.Unique = len(cs.Conversations)
	set.Conversations = cs
	set.Sampling = fmt.Sprintf("multi-turn: %d conversations, %d turns, each turn sent after the previous answer with the conversation so far", len(cs.Conversations), cs.Turns)
	return set, nil
}

// MostInFlight is the most requests of the set that can be in flight at
// once: each of its prompts, but one turn per conversation of a
// conversation set (a conversation's turns go one after another: 100,000
// turns of one conversation are one request at a time).
func (s *RequestSet) MostInFlight() int {
	if s.Conversations != nil {
		return len(s.Conversations.Conversations)
	}
	return len(s.Prompts)
}
