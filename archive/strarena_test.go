package archive

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/joulebench/joulebench/archive/record"
)

// addr is where a string's bytes are.
func addr(s string) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(s))) }

// The strings a decoded request keeps (id, prompt_id, conversation_id,
// error) are copied into the reader's arena, one after the other, so that
// they share no small allocation with the decoder's strings that are
// dropped (issue 46): line k+1's id starts where line k's error ended.
func TestKeptStringsShareArenaChunks(t *testing.T) {
	var d jsonLine
	const n = 1000
	reqs := make([]record.Request, n)
	for k := range reqs {
		line := fmt.Sprintf(`{"id":"f%06d","phase":"formal","prompt_id":"p%05d","conversation_id":"c%d","ok":false,"error":"e%d","tokens_source":"usage","sent_at":1,"token_times":[1.5,2.5]}`, k, k, k%10, k%10)
		if err := d.decodeRequest([]byte(line), &reqs[k]); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("f%06d", k); reqs[k].ID != want {
			t.Fatalf("line %d: id %q, want %q", k, reqs[k].ID, want)
		}
	}
	// Each line keeps 7+6+2+2 = 17 bytes: a 64 KiB chunk holds 3855
	// lines, so all 1000 are in one chunk (or two, if the first lines
	// interned strings ended a chunk: at most one gap).
	gaps := 0
	for k := 1; k < n; k++ {
		p, q := reqs[k-1], reqs[k]
		if addr(p.PromptID) != addr(p.ID)+7 || addr(p.ConversationID) != addr(p.PromptID)+6 || addr(p.Error) != addr(p.ConversationID)+2 {
			t.Fatalf("line %d: its kept strings are not adjacent: id %#x, prompt_id %#x, conversation_id %#x, error %#x", k-1, addr(p.ID), addr(p.PromptID), addr(p.ConversationID), addr(p.Error))
		}
		if addr(q.ID) != addr(p.Error)+2 {
			gaps++
		}
	}
	if gaps > 1 {
		t.Fatalf("%d lines' ids do not follow the previous line's strings; want them in one chunk", gaps)
	}
	for k, r := range reqs {
		if r.ID != fmt.Sprintf("f%06d", k) || r.PromptID != fmt.Sprintf("p%05d", k) || r.ConversationID != fmt.Sprintf("c%d", k%10) || r.Error != fmt.Sprintf("e%d", k%10) {
			t.Fatalf("record %d changed after later lines: %+v", k, r)
		}
	}
}

// A string longer than the room left in the chunk starts a new one; a
// string longer than a chunk gets an allocation of its own, and the chunk
// goes on after it.
func TestArenaChunkBoundary(t *testing.T) {
	var a strArena
	first := a.keep("ab")
	filler := a.keep(strings.Repeat("x", arenaChunk-4))
	if addr(filler) != addr(first)+2 {
		t.Fatalf("the filler does not follow the first string")
	}
	tail := a.keep("cd") // exactly the 2 bytes left
	if addr(tail) != addr(filler)+arenaChunk-4 {
		t.Fatalf("a string that fits the room left was not put there")
	}
	next := a.keep("efg") // no room left: a new chunk
	if d := addr(next) - addr(first); d < arenaChunk && d > 0 {
		t.Fatalf("a string past the chunk's end is %d bytes after its start", d)
	}
	big := a.keep(strings.Repeat("y", arenaChunk+1))
	after := a.keep("hi")
	if addr(after) != addr(next)+3 {
		t.Fatalf("the chunk did not go on after a string longer than a chunk")
	}
	if addr(big) >= addr(next)-3 && addr(big) < addr(next)+arenaChunk {
		t.Fatalf("a string longer than a chunk was put in the chunk")
	}
	if a.keep("") != "" {
		t.Fatal(`keep("") is not ""`)
	}
	for _, c := range []struct{ got, want string }{
		{first, "ab"}, {filler, strings.Repeat("x", arenaChunk-4)}, {tail, "cd"}, {next, "efg"},
		{big, strings.Repeat("y", arenaChunk+1)}, {after, "hi"},
	} {
		if c.got != c.want {
			t.Fatalf("a kept string changed: %.20q, want %.20q", c.got, c.want)
		}
	}
}

// One reader decodes every seed line in turn (the arena and the interned
// strings shared), and each record still equals encoding/json's after all
// of them are decoded.
func TestDecodeRequestsSharedReader(t *testing.T) {
	var d jsonLine
	var lines []string
	for range 3 {
		lines = append(lines, requestSeeds...)
	}
	got := make([]record.Request, len(lines))
	ok := make([]bool, len(lines))
	for i, s := range lines {
		ok[i] = d.decodeRequest([]byte(s), &got[i]) == nil
	}
	for i, s := range lines {
		if !ok[i] {
			continue
		}
		var want record.Request
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatalf("line %q: decoded, but encoding/json: %v", s, err)
		}
		if !reflect.DeepEqual(got[i], want) {
			t.Fatalf("line %q:\n decoder: %#v\nencoding/json: %#v", s, got[i], want)
		}
	}
}
