package loadgen_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/sim/simtest"

	"github.com/joulebench/joulebench/engines/openai"
	"github.com/joulebench/joulebench/engines/sim"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workload"
)

func startSim(t *testing.T, cfg sim.Config) *sim.Engine {
	t.Helper()
	cfg.StartupS, cfg.StoppingS = 0, 0
	return simtest.Serve(t, cfg)
}

// noteText is n characters of text that starts with tag, so that texts of
// different tags share no 64-character block.
func noteText(tag string, n int) string {
	s := tag + strings.Repeat(" the river runs past the old mill", n/30+1)
	return s[:n]
}

// Two-turn conversations against the simulator with its prefix cache: the
// second turn carries the first turn's prompt and the engine's own answer,
// and its cached prompt tokens skip prefill.
//
// Worked out from the simulator's parameters (DefaultConfig: StepBaseS
// 0.02 s, PrefillTokPerS 20000, a token per 4 characters, 16-token blocks
// of 64 characters), one conversation at a time:
//   - turn 1: 8000 characters = 2000 prompt tokens, none cached; alone in
//     the batch, the first token comes with the step that prefills them:
//     TTFT = 0.02 + 2000/20000 = 0.120 s.
//   - turn 2: the 8000 characters (125 whole blocks, all cached by turn 1)
//     then the answer and 400 more characters: cached = 125·16 = 2000
//     tokens, and TTFT = 0.02 + (prompt_tokens - 2000)/20000, about
//     0.02 + 105/20000 = 0.025 s, where without the cache it would be
//     0.02 + prompt_tokens/20000 = 0.125 s: the 0.1 s of prefilling 2000
//     tokens is saved, and with it the energy of 0.1 s of prefill on the
//     simulated GPU.
func TestConversationPrefixCacheOnSim(t *testing.T) {
	cfg := sim.WithPrefixCache(sim.DefaultConfig())
	cfg.StopProb = 0
	eng := startSim(t, cfg)
	set := &workload.ConversationSet{Options: workload.ConversationOptions{IgnoreEOS: true}}
	for i := range 3 {
		set.Conversations = append(set.Conversations, workload.Conversation{ID: fmt.Sprintf("c%d", i), Turns: []workload.Turn{
			{User: noteText(fmt.Sprintf("conversation %d:", i), 8000), MaxTokens: 4},
			{User: noteText("and then?", 400), MaxTokens: 4},
		}})
	}
	client := openai.NewClient(eng.BaseURL())
	var mu sync.Mutex
	var recs []record.Request
	err := loadgen.RunConversations(context.Background(), loadgen.ConversationConfig{Phase: "formal", Model: eng.RequestModel(), Concurrency: 1}, set, client,
		func(r record.Request) { mu.Lock(); recs = append(recs, r); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 6 {
		t.Fatalf("%d turns recorded, want 6", len(recs))
	}
	const tol = 0.040 // scheduling and HTTP on a shared machine (the race detector, other packages' tests), above the model
	for _, r := range recs {
		if !r.OK || r.ConversationID == "" {
			t.Fatalf("%+v", r)
		}
		ttft := r.FirstTokenAt - r.SentAt
		var want float64
		switch r.Turn {
		case 1:
			if r.PromptTokens != 2000 || r.CachedPromptTokens != 0 {
				t.Errorf("%s turn 1: %d prompt tokens, %d cached; want 2000, 0", r.ConversationID, r.PromptTokens, r.CachedPromptTokens)
			}
			want = 0.120
		case 2:
			if r.CachedPromptTokens != 2000 || r.PromptTokens < 2100 {
				t.Errorf("%s turn 2: %d prompt tokens, %d cached; want 2000 cached of more than 2100", r.ConversationID, r.PromptTokens, r.CachedPromptTokens)
			}
			want = 0.02 + float64(r.PromptTokens-2000)/20000
		}
		if ttft < want-0.002 || ttft > want+tol {
			t.Errorf("%s turn %d: TTFT %.4f s, want %.4f s", r.ConversationID, r.Turn, ttft, want)
		}
	}
}

// Without the cache the second turn prefills its whole prompt.
func TestConversationWithoutPrefixCache(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.StopProb = 0
	eng := startSim(t, cfg)
	set := &workload.ConversationSet{Conversations: []workload.Conversation{{ID: "c", Turns: []workload.Turn{
		{User: noteText("x", 8000), MaxTokens: 4}, {User: "more", MaxTokens: 4, Think: time.Millisecond},
	}}}}
	var recs []record.Request
	err := loadgen.RunConversations(context.Background(), loadgen.ConversationConfig{Phase: "formal", Model: eng.RequestModel()}, set,
		openai.NewClient(eng.BaseURL()), func(r record.Request) { recs = append(recs, r) })
	if err != nil || len(recs) != 2 {
		t.Fatalf("%v, %d records", err, len(recs))
	}
	r := recs[1]
	// 0.02 + prompt_tokens/20000, above 0.12 s
	if want, ttft := 0.02+float64(r.PromptTokens)/20000, r.FirstTokenAt-r.SentAt; r.CachedPromptTokens != 0 || ttft < want-0.002 {
		t.Errorf("turn 2: %d cached, TTFT %.4f s, want 0 and %.4f s", r.CachedPromptTokens, ttft, want)
	}
	if !strings.HasPrefix(r.ID, "formal-c00000-t2") || r.Turn != 2 || r.PromptID != "c#2" {
		t.Errorf("turn 2 named %s, turn %d, prompt %s", r.ID, r.Turn, r.PromptID)
	}
}

// A replay of an Azure-format trace sends each request within 5 ms of its
// (sendBound: 50 ms under the race detector)
// scaled timestamp, measured from the sent_at times recorded.
func TestReplayAzureOnTime(t *testing.T) {
	spec, err := workload.ParseTraceSpec("trace:" + filepath.Join("..", "workload", "testdata", "traces", "azure-2024.csv") + ",scale=0.5,duration=6s")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := workload.LoadTrace(spec)
	if err != nil {
		t.Fatal(err)
	}
	set, err := tr.RequestSet(workload.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Real time: the answers stream at the simulator's pace (a faster one
	// would load the machine with token events, not what is measured
	// here); the replay stops 200 ms after the last send time, the
	// requests still generating then are cancelled, their sent_at kept.
	cfg := sim.DefaultConfig()
	cfg.MaxModelLen = 16384
	eng := startSim(t, cfg)
	reqs := loadgen.FromSet(set, "formal", eng.RequestModel(), false)
	offsets, err := tr.Offsets()
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string]float64{}
	stop := offsets[len(offsets)-1] + 200*time.Millisecond
	err = loadgen.RunAt(context.Background(), reqs, offsets, loadgen.Limits{}, stop, openai.NewClient(eng.BaseURL()),
		func(r record.Request) { sent[r.ID] = r.SentAt })
	if err != nil {
		t.Fatal(err)
	}
	if len(sent) != len(reqs) || len(reqs) < 20 {
		t.Fatalf("%d of %d requests recorded", len(sent), len(reqs))
	}
	t0 := sent[reqs[0].ID]
	var late []float64
	for i, r := range reqs {
		d := (sent[r.ID] - t0) - offsets[i].Seconds()
		late = append(late, d)
		if math.Abs(d) > sendBound {
			t.Errorf("%s sent %.4f s off its scaled timestamp %v", r.ID, d, offsets[i])
		}
	}
	sort.Float64s(late)
	t.Logf("%d requests; send time minus scaled timestamp from %.4f to %.4f s", len(reqs), late[0], late[len(late)-1])
}

// A failed turn ends its conversation: the turns after it are recorded as
// failed without being sent, so every turn of the set has its record.
func TestConversationFailedTurnEndsIt(t *testing.T) {
	var mu sync.Mutex
	var got []int // user messages of each request the server saw
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []workload.Message `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		got = append(got, len(body.Messages))
		mu.Unlock()
		if len(body.Messages) > 1 {
			if m := body.Messages[1]; m.Role != "assistant" || m.Content != "ok" {
				t.Errorf("turn 2 carries %+v, want the engine's own answer to turn 1", m)
			}
			http.Error(w, "turn 2 refused", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\n"+
			`data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	set := &workload.ConversationSet{Conversations: []workload.Conversation{{ID: "c", Turns: []workload.Turn{
		{User: "one", MaxTokens: 4}, {User: "two", MaxTokens: 4}, {User: "three", MaxTokens: 4},
	}}}}
	var recs []record.Request
	err := loadgen.RunConversations(context.Background(), loadgen.ConversationConfig{Phase: "formal", Model: "m"}, set,
		openai.NewClient(srv.URL), func(r record.Request) { recs = append(recs, r) })
	if err != nil || len(recs) != 3 {
		t.Fatalf("%v, %d records", err, len(recs))
	}
	if !recs[0].OK || recs[1].OK || recs[2].OK || !strings.Contains(recs[2].Error, "not sent: turn 2 of the conversation failed") || recs[2].Turn != 3 {
		t.Errorf("records %+v", recs)
	}
	// turn 1 alone, then turn 2 with turn 1 and its answer: 3 messages.
	// srv.Close waits for the handlers, and the lock orders their writes
	// before this read for the race detector too.
	srv.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("server saw requests of %v messages, want [1 3]", got)
	}
}
