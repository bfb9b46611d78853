package ssebench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestSplitRequestID(t *testing.T) {
	const run = "20261130T151332Z-benchmark-1.0-openai"
	for _, tc := range []struct {
		header, run, id string
		ok              bool
	}{
		{run + "-f000042", run, "f000042", true},
		{run + "-w-1", run, "w-1", true}, // dashes in the request id stay
		{run + "-", run, "", false},
		{run, run, "", false},
		{"20261130T151332Z-benchmark-1.0-vllm-f000042", run, "", false}, // another run
		{"f000042", "", "", false},
	} {
		id, ok := SplitRequestID(tc.header, tc.run)
		if id != tc.id || ok != tc.ok {
			t.Errorf("SplitRequestID(%q, %q) = %q, %v; want %q, %v", tc.header, tc.run, id, ok, tc.id, tc.ok)
		}
	}
}

func TestByRequest(t *testing.T) {
	entries := []Entry{{ID: "r-1-a", Writes: []float64{1}}, {ID: "r-1-b", Writes: []float64{2, 3}}}
	m, err := ByRequest(entries, "r-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || len(m["a"].Writes) != 1 || len(m["b"].Writes) != 2 {
		t.Errorf("ByRequest = %+v", m)
	}
	for _, tc := range []struct {
		entries []Entry
		fail    string
	}{
		{append(entries, Entry{ID: "r-1-a"}), `"a" came twice`},
		{append(entries, Entry{ID: "r-2-a"}), `is not "r-1"`},
		{append(entries, Entry{}), `X-Request-Id ""`},
	} {
		if _, err := ByRequest(tc.entries, "r-1"); err == nil || !strings.Contains(err.Error(), tc.fail) {
			t.Errorf("error %v, want one with %s", err, tc.fail)
		}
	}
}

func TestLogEntriesAndJSON(t *testing.T) {
	var l Log
	l.Add(Entry{ID: "a-1", ArrivedAt: 1.5, Writes: []float64{2, 2.25}})
	l.Add(Entry{ID: "b-1", ArrivedAt: 3})
	if got := l.Entries("a-"); len(got) != 1 || got[0].ID != "a-1" {
		t.Errorf("Entries(a-) = %+v", got)
	}
	var b bytes.Buffer
	if err := l.WriteJSON(&b, "c-"); err != nil || strings.TrimSpace(b.String()) != "[]" {
		t.Errorf("WriteJSON(c-) = %q, %v; want []", b.String(), err)
	}
	b.Reset()
	if err := l.WriteJSON(&b, ""); err != nil {
		t.Fatal(err)
	}
	var back []Entry
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || back[0].ArrivedAt != 1.5 || back[0].Writes[1] != 2.25 || back[1].ID != "b-1" {
		t.Errorf("round trip = %+v", back)
	}
}
