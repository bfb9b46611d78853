package steps

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
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

func (c *usageClient) Do(_ context.Context, r workload.Request) archive.Request {
	c.sent++
	if c.fail {
		return archive.Request{ID: r.ID, Error: "connection refused"}
	}
	return archive.Request{ID: r.ID, OK: true, PromptTokens: 5 + 3*len(strings.Fields(r.Prompt)), OutputTokens: 1}
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
