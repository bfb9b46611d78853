package steps

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/workload"
)

// The requests a step sends, by hand: prompts × repeat, capped by
// max_requests, saturating where the product would overflow (the memory
// check then refuses it instead of seeing a negative count).
func TestRequestsSent(t *testing.T) {
	for _, tc := range []struct {
		prompts, repeat, maxRequests, want int
	}{
		{10, 1, 0, 10},
		{10, 3, 0, 30},
		{10, 3, 25, 25},
		{10, 3, 100, 30},
		{1, 20_000, 0, 20_000},
		{1 << 40, 1 << 40, 0, math.MaxInt},
		{1 << 40, 1 << 40, 7, 7},
	} {
		c := &RequestsConfig{Repeat: tc.repeat, MaxRequests: tc.maxRequests}
		if got := requestsSent(c, tc.prompts); got != tc.want {
			t.Errorf("%d prompts × repeat %d, max %d: %d, want %d", tc.prompts, tc.repeat, tc.maxRequests, got, tc.want)
		}
	}
}

// tokenizingEngine is a test engine whose server counts three tokens a
// word and a BOS, or fails to.
type tokenizingEngine struct {
	*testEngine
	fail error
}

func (e *tokenizingEngine) CountTokens(_ context.Context, text string) (int, error) {
	if e.fail != nil {
		return 0, e.fail
	}
	return 1 + 3*len(strings.Fields(text)), nil
}

// usageClient answers every request with prompt_tokens as a server with a
// chat template of 5 tokens and three tokens a word counts them, or fails.
type usageClient struct {
	fail bool
	sent int
}

func (c *usageClient) Do(_ context.Context, r workload.Request) record.Request {
	c.sent++
	if c.fail {
		return record.Request{ID: r.ID, Error: "connection refused"}
	}
	return record.Request{ID: r.ID, OK: true, PromptTokens: 5 + 3*len(strings.Fields(r.Prompt)), OutputTokens: 1}
}

// A random set's lengths are fitted with the engine's tokenizer when it
// has one, else calibrated with two probe requests, else left estimated;
// each prompt then counts its drawn length in that method's tokens to
// within one word (3 tokens).
func TestServedLengths(t *testing.T) {
	tokenized := func(s string) int { return 1 + 3*len(strings.Fields(s)) }
	served := func(s string) int { return 5 + 3*len(strings.Fields(s)) }
	for _, tc := range []struct {
		name   string
		engine engines.Engine
		client *usageClient
		method string
		count  func(string) int
		probes int
	}{
		{"tokenizer", &tokenizingEngine{testEngine: newTestEngine("")}, &usageClient{}, workload.LengthTokenize, tokenized, 0},
		{"no tokenizer: calibrated", newTestEngine(""), &usageClient{}, workload.LengthCalibrated, served, 2},
		{"tokenizer fails: calibrated", &tokenizingEngine{testEngine: newTestEngine(""), fail: errors.New("404")}, &usageClient{}, workload.LengthCalibrated, served, 2},
		{"nothing works: estimate", newTestEngine(""), &usageClient{fail: true}, workload.LengthEstimate, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := workload.Random(workload.RandomSpec{InputLen: 60, OutputLen: 4, RangeRatio: 0.5}, workload.Options{Count: 10, MemoryAvailable: -1})
			if err != nil {
				t.Fatal(err)
			}
			d := &Deps{Engine: tc.engine, Client: tc.client, Model: "m", Chat: true}
			got, err := servedLengths(context.Background(), newRC(t), d, set)
			if err != nil {
				t.Fatal(err)
			}
			if got.LengthMethod != tc.method || tc.client.sent != tc.probes {
				t.Fatalf("method %q after %d probes, want %q after %d", got.LengthMethod, tc.client.sent, tc.method, tc.probes)
			}
			if tc.count == nil {
				if got != set {
					t.Error("the set changed though nothing could count it")
				}
				return
			}
			for i, p := range got.Prompts {
				want := len(strings.Fields(set.Prompts[i].Prompt))
				if n := tc.count(p.Prompt); n < want-3 || n > want+3 {
					t.Errorf("prompt %s: %d tokens, drawn %d", p.ID, n, want)
				}
			}
			if m := requestSetMeta(got, 10); m.LengthMethod != tc.method {
				t.Errorf("run.json length_method %q", m.LengthMethod)
			}
		})
	}
	// A dataset is sent as it is.
	chat, err := workload.LoadBuiltin("chat", workload.Options{Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	c := &usageClient{}
	if got, err := servedLengths(context.Background(), newRC(t), &Deps{Engine: newTestEngine(""), Client: c}, chat); err != nil || got != chat || c.sent != 0 {
		t.Errorf("a dataset was refitted: %v, %d probes", err, c.sent)
	}
}

// A trace's prompts are made in the served model's tokens too, not a word
// a token: with the engine's tokenizer, and against a server without one
// (an external llama-server) by two probe requests (the calibration read
// the random set's spec from the source and failed on "trace:..."; the
// set stayed a word a token: 682 tokens served for a mean 259 asked).
// Rows of 259, 100 and 400 tokens; the server counts 5 + 3 a word
// (usageClient). FitRatio's one ratio comes from the first prompt: 259
// words are 5 + 777 = 782 tokens, 3.019 a word, so a row of L tokens gets
// round(L / 3.019) words and 5 + 3·that tokens: 263 (259), 104 (100),
// 404 (400), each within 5 of its row. With the tokenizer (1 + 3 a word):
// 778 / 259 = 3.004 a word, and 1 + 3·round(L/3.004) = 259, 100, 400 ± 3.
func TestServedLengthsTrace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "burst.csv")
	csv := "Timestamp,Model,Request tokens,Response tokens\n0,m,259,4\n1,m,100,4\n2,m,400,4\n"
	if err := os.WriteFile(p, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := []int{259, 100, 400}
	for _, tc := range []struct {
		name   string
		engine engines.Engine
		method string
		count  func(string) int
		probes int
	}{
		{"tokenizer", &tokenizingEngine{testEngine: newTestEngine("")}, workload.LengthTokenize, func(s string) int { return 1 + 3*len(strings.Fields(s)) }, 0},
		{"no tokenizer: calibrated", newTestEngine(""), workload.LengthCalibrated, func(s string) int { return 5 + 3*len(strings.Fields(s)) }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := workload.Open("trace:"+p, workload.Options{MemoryAvailable: -1})
			if err != nil {
				t.Fatal(err)
			}
			client := &usageClient{}
			d := &Deps{Engine: tc.engine, Client: client, Model: "m", Chat: true}
			got, err := servedLengths(context.Background(), newRC(t), d, set)
			if err != nil {
				t.Fatal(err)
			}
			if got.LengthMethod != tc.method || client.sent != tc.probes {
				t.Fatalf("method %q after %d probes, want %q after %d", got.LengthMethod, client.sent, tc.method, tc.probes)
			}
			if len(got.Prompts) != len(rows) || len(got.Arrivals) != len(rows) {
				t.Fatalf("%d prompts, %d arrivals", len(got.Prompts), len(got.Arrivals))
			}
			for i, pr := range got.Prompts {
				if n := tc.count(pr.Prompt); n < rows[i]-5 || n > rows[i]+5 {
					t.Errorf("row %d: %d tokens served, %d asked", i+1, n, rows[i])
				}
			}
			if m := requestSetMeta(got, 3); m.LengthMethod != tc.method || m.Trace == nil {
				t.Errorf("run.json request_set: %+v", m)
			}
		})
	}
}
