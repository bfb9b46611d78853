package workload

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Both schemas are read turn by turn; the numbers are counted from the
// fixtures with a separate script: 200 conversations, 598 human turns in
// the ShareGPT file; conv-001's first answer has 320 characters (max_tokens
// 320/4 = 80), its second 365 (91); t001's first turn asks 56 tokens after
// 1.42 s.
func TestLoadConversations(t *testing.T) {
	sg, err := LoadConversations(filepath.Join("testdata", "conversations", "sharegpt-multiturn.json"), ConversationOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := sg.Conversations[0]
	if len(sg.Conversations) != 200 || sg.Turns != 598 || c.ID != "conv-001" || len(c.Turns) != 4 {
		t.Fatalf("%d conversations, %d turns; first %s with %d turns", len(sg.Conversations), sg.Turns, c.ID, len(c.Turns))
	}
	if c.Turns[0].MaxTokens != 80 || c.Turns[1].MaxTokens != 91 || len(c.Turns[0].User) != 227 {
		t.Errorf("conv-001 turns: %+v", c.Turns[:2])
	}
	js, err := LoadConversations(filepath.Join("testdata", "conversations", "turns.jsonl"), ConversationOptions{Count: 10, MaxTurns: 2, Think: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(js.Conversations) != 10 || js.Turns != 20 {
		t.Fatalf("%d conversations, %d turns; want 10 and 20", len(js.Conversations), js.Turns)
	}
	if tr := js.Conversations[0].Turns[0]; tr.MaxTokens != 56 || tr.Think != 1420*time.Millisecond {
		t.Errorf("t001 turn 1: %+v", tr)
	}
	if len(sg.SHA256) != 64 || sg.SHA256 == js.SHA256 {
		t.Errorf("sha256 %q, %q", sg.SHA256, js.SHA256)
	}
}

func TestConversationErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"id":"a","turns":[{"max_tokens":3}]}`, "c.jsonl:1: turns[0]: missing \"user\""},
		{"{\"id\":\"a\",\"turns\":[{\"user\":\"hi\"}]}\n{\"id\":\"b\"}", "c.jsonl:2: missing field \"turns\" or \"conversations\""},
		{`{"id":"a","turns":[{"user":"x","think_s":-1}]}`, "c.jsonl:1: turns[0]: max_tokens must be >= 0"},
		{`{"id":"a","conversations":[{"value":"x"}]}`, "c.jsonl:1: conversations[0]: missing \"from\""},
		{`{"id":"a","conversations":[{"from":"gpt","value":"x"}]}`, "no conversation with a user turn"},
	} {
		_, err := ParseConversations([]byte(c.body), "c.jsonl", ConversationOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.body, err, c.want)
		}
	}
}
