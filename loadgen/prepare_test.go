package loadgen

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
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

func (p *preparer) Do(ctx context.Context, r workload.Request) record.Request {
	return p.DoFlight(ctx, r, nil)
}

func (p *preparer) DoFlight(ctx context.Context, r workload.Request, f *Flight) record.Request {
	p.mu.Lock()
	p.events = append(p.events, "do")
	p.mu.Unlock()
	if r.ID[len(r.ID)-1]%2 == 1 {
		f.AddBounded(true)
		f.AddBounded(false)
		f.SetFirstWithin(time.Duration(r.ID[len(r.ID)-1]-'0') * time.Millisecond)
	}
	return record.Request{ID: r.ID, OK: true, OutputTokens: 1}
}

// TestBurstPreparedFirstAndReleasedLast: the burst at the start is
// prepared before the first send and released after the last finished:
// all of an unlimited stage, the first fill of a concurrency stage (and of
// unlimited capped in flight, which is concurrency), nothing of an open
// mode.
func TestBurstPreparedFirstAndReleasedLast(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		prepared []string
	}{
		// MaxRequests applies first.
		{"unlimited", Config{Mode: Unlimited}, []string{"r000", "r001", "r002", "r003", "r004"}},
		{"concurrency", Config{Mode: Concurrency, Concurrency: 2}, []string{"r000", "r001"}},
		{"unlimited-capped", Config{Mode: Unlimited, MaxConcurrency: 3}, []string{"r000", "r001", "r002"}},
		{"concurrency-above-count", Config{Mode: Concurrency, Concurrency: 50}, []string{"r000", "r001", "r002", "r003", "r004"}},
		{"poisson", Config{Mode: Poisson, Rate: 1e6, MaxConcurrency: 2}, nil},
		{"constant", Config{Mode: Constant, Rate: 1e6}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &preparer{}
			c := &collector{t: t}
			cfg := tc.cfg
			cfg.MaxRequests = 5
			if err := Run(context.Background(), cfg, requests(8), p, c.sink, c.progress); err != nil {
				t.Fatal(err)
			}
			want := []string{"do", "do", "do", "do", "do"}
			if tc.prepared != nil {
				want = append(append([]string{"prepare"}, want...), "release")
			}
			if !reflect.DeepEqual(p.events, want) || !reflect.DeepEqual(p.prepared, tc.prepared) {
				t.Errorf("calls %v with %v, want %v with %v", p.events, p.prepared, want, tc.prepared)
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
		r := &runner{ctx: context.Background(), flights: map[*Flight]struct{}{}, done: make(chan record.Request, n), sent: make(chan struct{}, 1)}
		var once sync.Once
		startedAtFirst := make(chan int64, 1)
		r.d = doerFunc(func(ctx context.Context, req workload.Request) record.Request {
			once.Do(func() { startedAtFirst <- r.sentN.Load() })
			return record.Request{ID: req.ID, OK: true}
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
