package all_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/all"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workload"
)

// TestClientPreparesAndNamesRequests: the run's OpenAI client, wrapped to
// add the thinking setting, still has the Preparer ability (the unlimited
// stage opens its connections ahead), and every request carries
// X-Request-Id: <run id>-<request id>.
func TestClientPreparesAndNamesRequests(t *testing.T) {
	var mu sync.Mutex
	ids := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ids[r.Header.Get("X-Request-Id")] = true
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	s := all.Spec{RunID: "run42", Thinking: all.ThinkingOn}
	d := all.NewClient(s, &fakeEngine{}, func() float64 { return 1 })(srv.URL)
	if _, ok := d.(loadgen.Preparer); !ok {
		t.Fatalf("%T is not a loadgen.Preparer", d)
	}
	reqs := make([]workload.Request, 5)
	for i := range reqs {
		reqs[i] = workload.Request{ID: fmt.Sprintf("formal-%05d", i), Phase: "formal", Chat: true, Prompt: "p"}
	}
	var recs []record.Request
	if err := loadgen.Run(context.Background(), loadgen.Config{}, reqs, d, func(r record.Request) { recs = append(recs, r) }, nil); err != nil {
		t.Fatal(err)
	}
	// The handler's writes reach this goroutine through the network, which
	// the race detector cannot see: read ids under the lock.
	mu.Lock()
	defer mu.Unlock()
	for _, r := range recs {
		if !r.OK {
			t.Fatalf("%s: %s", r.ID, r.Error)
		}
		if want := "run42-" + r.ID; !ids[want] {
			t.Errorf("no request with X-Request-Id %q (got %v)", want, ids)
		}
	}
}
