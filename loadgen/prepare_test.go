package loadgen

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/workload"
)

// preparer records the calls of the Preparer ability around the requests
// it is asked to send, and counts the odd-numbered requests' first tokens
// (and one more chunk each) as bounded.
type preparer struct {
	mu       sync.Mutex
	events   []string // "prepare", "do", "release", in order
	prepared []string
}

func (p *preparer) Prepare(ctx context.Context, reqs []workload.Request) func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, "prepare")
	p.prepared = idsOf(reqs)
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.events = append(p.events, "release")
	}
}

func (p *preparer) Do(ctx context.Context, r workload.Request) archive.Request {
	return p.DoFlight(ctx, r, nil)
}

func (p *preparer) DoFlight(ctx context.Context, r workload.Request, f *Flight) archive.Request {
	p.mu.Lock()
	p.events = append(p.events, "do")
	p.mu.Unlock()
	if r.ID[len(r.ID)-1]%2 == 1 {
		f.AddBounded(true)
		f.AddBounded(false)
		f.SetFirstWithin(time.Duration(r.ID[len(r.ID)-1]-'0') * time.Millisecond)
	}
	return archive.Request{ID: r.ID, OK: true, OutputTokens: 1}
}

func TestUnlimitedPreparesFirstAndReleasesLast(t *testing.T) {
	for _, tc := range []struct {
		mode     Mode
		prepared bool
	}{
		{Unlimited, true},
		{Concurrency, false},
		{Poisson, false},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			p := &preparer{}
			c := &collector{t: t}
			cfg := Config{Mode: tc.mode, Concurrency: 2, Rate: 1e6, MaxRequests: 5}
			if err := Run(context.Background(), cfg, requests(8), p, c.sink, c.progress); err != nil {
				t.Fatal(err)
			}
			want := []string{"do", "do", "do", "do", "do"}
			var wantIDs []string
			if tc.prepared {
				want = append(append([]string{"prepare"}, want...), "release")
				wantIDs = []string{"r000", "r001", "r002", "r003", "r004"} // MaxRequests applies first
			}
			if !reflect.DeepEqual(p.events, want) || !reflect.DeepEqual(p.prepared, wantIDs) {
				t.Errorf("calls %v with %v, want %v with %v", p.events, p.prepared, want, wantIDs)
			}
			// r001 and r003 had their first token (within 1 and 3 ms) and
			// one more chunk bounded.
			if got := c.last(); got != (Progress{Sent: 5, Done: 5, Tokens: 5, BoundedFirst: 2, BoundedChunks: 4, BoundedFirstWithin: 3 * time.Millisecond}) {
				t.Errorf("progress %+v", got)
			}
			// The records say it too: r001 and r003 bounded (1 and 3 ms
			// wide) with 2 bounded chunks each, the others exact.
			for _, rec := range c.recs {
				odd := rec.ID[len(rec.ID)-1]%2 == 1
				wantS, wantChunks := 0.0, 0
				if odd {
					wantS, wantChunks = float64(rec.ID[len(rec.ID)-1]-'0')/1000, 2
				}
				if rec.FirstTokenBounded != odd || rec.FirstTokenBoundS != wantS || rec.BoundedChunks != wantChunks {
					t.Errorf("%s: bounded %v by %v s, %d chunks; want %v, %v, %d", rec.ID, rec.FirstTokenBounded, rec.FirstTokenBoundS, rec.BoundedChunks, odd, wantS, wantChunks)
				}
			}
		})
	}
}

// TestGateReleasesSendsTogether: with a gate (the unlimited mode) no
// request is sent before every request's goroutine is started.
func TestGateReleasesSendsTogether(t *testing.T) {
	const n = 200
	for _, gated := range []bool{true, false} {
		r := &runner{ctx: context.Background(), flights: map[*Flight]struct{}{}, done: make(chan archive.Request, n), sent: make(chan struct{}, 1)}
		var once sync.Once
		startedAtFirst := make(chan int64, 1)
		r.d = doerFunc(func(ctx context.Context, req workload.Request) archive.Request {
			once.Do(func() { startedAtFirst <- r.sentN.Load() })
			return archive.Request{ID: req.ID, OK: true}
		})
		var gate chan struct{}
		if gated {
			gate = make(chan struct{})
		}
		r.sendAll(requests(n), nil, nil, gate)
		r.wg.Wait()
		got := <-startedAtFirst
		if gated && got != n {
			t.Errorf("gated: the first request was sent when %d of %d were started", got, n)
		}
		if len(r.done) != n {
			t.Errorf("gated %v: %d finished, want %d", gated, len(r.done), n)
		}
	}
}
