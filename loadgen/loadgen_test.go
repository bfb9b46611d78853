package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/workload"
)

// fakeDoer records how many requests are in flight. With hold set, each
// request waits for a token on release (ok) or for ctx (cancelled, with
// the cause as openai.Client words it).
type fakeDoer struct {
	hold        bool
	release     chan struct{}
	started     chan string
	inflight    atomic.Int32
	maxInflight atomic.Int32
}

func newFake(hold bool) *fakeDoer {
	return &fakeDoer{hold: hold, release: make(chan struct{}), started: make(chan string, 10000)}
}

func (f *fakeDoer) Do(ctx context.Context, r workload.Request) record.Request {
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		m := f.maxInflight.Load()
		if n <= m || f.maxInflight.CompareAndSwap(m, n) {
			break
		}
	}
	f.started <- r.ID
	rec := record.Request{ID: r.ID, Phase: r.Phase, SentAt: 1}
	if f.hold {
		select {
		case <-f.release:
		case <-ctx.Done():
			rec.Error = "cancelled"
			if c := context.Cause(ctx); !errors.Is(c, context.Canceled) {
				rec.Error += ": " + c.Error()
			}
			return rec
		}
	}
	rec.OK, rec.OutputTokens = true, 10
	return rec
}

func idsOf(reqs []workload.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.ID
	}
	return out
}

func requests(n int) []workload.Request {
	out := make([]workload.Request, n)
	for i := range out {
		out[i] = workload.Request{ID: fmt.Sprintf("r%03d", i), Phase: "formal", Chat: true, Prompt: "p"}
	}
	return out
}

// collector is a sink that fails the test if it is ever called
// concurrently.
type collector struct {
	t     *testing.T
	busy  atomic.Bool
	recs  []record.Request
	progs []Progress
}

func (c *collector) sink(r record.Request) {
	if !c.busy.CompareAndSwap(false, true) {
		c.t.Error("sink called concurrently")
	}
	c.recs = append(c.recs, r)
	c.busy.Store(false)
}

func (c *collector) progress(p Progress) {
	if !c.busy.CompareAndSwap(false, true) {
		c.t.Error("progress called concurrently with sink or itself")
	}
	c.progs = append(c.progs, p)
	c.busy.Store(false)
}

func (c *collector) last() Progress { return c.progs[len(c.progs)-1] }

func waitStarted(t *testing.T, f *fakeDoer, n int) []string {
	t.Helper()
	var ids []string
	for len(ids) < n {
		select {
		case id := <-f.started:
			ids = append(ids, id)
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d requests started", len(ids), n)
		}
	}
	return ids
}

func TestConcurrencyCapsInFlight(t *testing.T) {
	f := newFake(true)
	c := &collector{t: t}
	errc := make(chan error, 1)
	go func() {
		errc <- Run(context.Background(), Config{Mode: Concurrency, Concurrency: 4}, requests(20), f, c.sink, c.progress)
	}()
	first := waitStarted(t, f, 4)
	sort.Strings(first)
	if !reflect.DeepEqual(first, []string{"r000", "r001", "r002", "r003"}) {
		t.Fatalf("started %v, want the first four", first)
	}
	select {
	case id := <-f.started:
		t.Fatalf("%s started while 4 were in flight", id)
	case <-time.After(100 * time.Millisecond):
	}
	f.release <- struct{}{} // one finishes: exactly one more may start
	waitStarted(t, f, 1)
	select {
	case id := <-f.started:
		t.Fatalf("%s started: two replaced one", id)
	case <-time.After(100 * time.Millisecond):
	}
	close(f.release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if m := f.maxInflight.Load(); m != 4 {
		t.Fatalf("max in flight %d, want 4", m)
	}
	if len(c.recs) != 20 || c.last() != (Progress{Sent: 20, Done: 20, Tokens: 200}) {
		t.Fatalf("%d records, progress %+v", len(c.recs), c.last())
	}
}

func TestRequestsSentInOrder(t *testing.T) {
	f := newFake(false)
	if err := Run(context.Background(), Config{Mode: Concurrency, Concurrency: 1}, requests(30), f, nil, nil); err != nil {
		t.Fatal(err)
	}
	ids := waitStarted(t, f, 30)
	for i, id := range ids {
		if id != fmt.Sprintf("r%03d", i) {
			t.Fatalf("start order %v", ids)
		}
	}
}

func TestArrivalsDeterministic(t *testing.T) {
	a := Arrivals(2000, 10, 7)
	if !reflect.DeepEqual(a, Arrivals(2000, 10, 7)) {
		t.Fatal("same seed, different schedules")
	}
	if reflect.DeepEqual(a, Arrivals(2000, 10, 8)) {
		t.Fatal("seeds 7 and 8 gave the same schedule")
	}
	if a[0] != 0 {
		t.Fatalf("first arrival at %v", a[0])
	}
	for i := 1; i < len(a); i++ {
		if a[i] < a[i-1] {
			t.Fatalf("arrivals go back at %d", i)
		}
	}
	// 1999 gaps of mean 0.1 s: the sum is within a few percent of 199.9 s
	// (the standard deviation of the sum is about 4.5 s). The schedule is
	// fixed by the seed, so this cannot flake.
	if total := a[len(a)-1].Seconds(); math.Abs(total-199.9) > 15 {
		t.Fatalf("total %.1fs, want about 199.9s", total)
	}
	// Pinned: a change here changes every archived Poisson run's schedule.
	// (Within a microsecond: floating point may differ in the last bit
	// between architectures.)
	want := []time.Duration{0, 131267072, 232700516}
	for i, w := range want {
		if d := a[i] - w; d > time.Microsecond || d < -time.Microsecond {
			t.Fatalf("first arrivals %v, want %v", a[:3], want)
		}
	}
	for _, d := range Arrivals(5, math.Inf(1), 1) {
		if d != 0 {
			t.Fatal("infinite rate must send everything at once")
		}
	}
}

func TestPoissonRun(t *testing.T) {
	f := newFake(false)
	c := &collector{t: t}
	start := time.Now()
	// 20 requests at 200/s: about 0.1 s of schedule.
	if err := Run(context.Background(), Config{Mode: Poisson, Rate: 200, Seed: 3}, requests(20), f, c.sink, c.progress); err != nil {
		t.Fatal(err)
	}
	sched := Arrivals(20, 200, 3)
	if el := time.Since(start); el < sched[19] {
		t.Fatalf("finished in %v, before the last scheduled send at %v", el, sched[19])
	}
	if len(c.recs) != 20 {
		t.Fatalf("%d records", len(c.recs))
	}
	ids := waitStarted(t, f, 20)
	sort.Strings(ids) // two sends closer than scheduling noise may start in either order
	if !reflect.DeepEqual(ids, idsOf(requests(20))) {
		t.Fatalf("started %v", ids)
	}
}

func TestPoissonConcurrencyCap(t *testing.T) {
	f := newFake(true)
	errc := make(chan error, 1)
	go func() {
		errc <- Run(context.Background(), Config{Mode: Poisson, Rate: math.Inf(1), Concurrency: 3}, requests(10), f, nil, nil)
	}()
	waitStarted(t, f, 3)
	select {
	case id := <-f.started:
		t.Fatalf("%s started past the cap", id)
	case <-time.After(100 * time.Millisecond):
	}
	close(f.release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if m := f.maxInflight.Load(); m != 3 {
		t.Fatalf("max in flight %d", m)
	}
}

func TestMaxRequests(t *testing.T) {
	f := newFake(false)
	c := &collector{t: t}
	if err := Run(context.Background(), Config{MaxRequests: 3}, requests(10), f, c.sink, c.progress); err != nil {
		t.Fatal(err)
	}
	if len(c.recs) != 3 || c.last().Sent != 3 {
		t.Fatalf("%d records, progress %+v", len(c.recs), c.last())
	}
}

func TestMaxDuration(t *testing.T) {
	f := newFake(true)
	c := &collector{t: t}
	start := time.Now()
	err := Run(context.Background(), Config{Mode: Concurrency, Concurrency: 2, MaxDuration: 100 * time.Millisecond}, requests(10), f, c.sink, c.progress)
	if err != nil {
		t.Fatalf("max duration is a normal end, got %v", err)
	}
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Fatalf("stopped after %v", el)
	}
	if len(c.recs) != 2 {
		t.Fatalf("%d records, want the 2 in flight (unsent requests are not recorded)", len(c.recs))
	}
	for _, r := range c.recs {
		if r.OK || r.Error != "cancelled: max duration" {
			t.Fatalf("%+v", r)
		}
	}
	if p := c.last(); p != (Progress{Sent: 2, Done: 2, Failed: 2}) {
		t.Fatalf("progress %+v", p)
	}
}

func TestCancellation(t *testing.T) {
	f := newFake(true)
	c := &collector{t: t}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- Run(ctx, Config{Mode: Concurrency, Concurrency: 3}, requests(10), f, c.sink, c.progress)
	}()
	waitStarted(t, f, 3)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	if len(c.recs) != 3 {
		t.Fatalf("%d records, want the 3 in flight", len(c.recs))
	}
	for _, r := range c.recs {
		if r.OK || r.Error != "cancelled" {
			t.Fatalf("%+v", r)
		}
	}
	// Cancelled before anything is sent: nothing recorded.
	c2 := &collector{t: t}
	if err := Run(ctx, Config{}, requests(5), newFake(false), c2.sink, c2.progress); !errors.Is(err, context.Canceled) || len(c2.recs) != 0 {
		t.Fatalf("err %v, %d records", err, len(c2.recs))
	}
}

func TestSinkSerializedAndProgress(t *testing.T) {
	f := newFake(false)
	c := &collector{t: t}
	if err := Run(context.Background(), Config{}, requests(300), f, c.sink, c.progress); err != nil {
		t.Fatal(err)
	}
	if len(c.recs) != 300 {
		t.Fatalf("%d records", len(c.recs))
	}
	seen := map[string]bool{}
	for _, r := range c.recs {
		if seen[r.ID] {
			t.Fatalf("%s recorded twice", r.ID)
		}
		seen[r.ID] = true
	}
	for i := 1; i < len(c.progs); i++ {
		a, b := c.progs[i-1], c.progs[i]
		if b.Sent < a.Sent || b.Done < a.Done || b.Done > b.Sent || b.Tokens < a.Tokens {
			t.Fatalf("progress went wrong: %+v then %+v", a, b)
		}
	}
	if c.last() != (Progress{Sent: 300, Done: 300, Tokens: 3000}) {
		t.Fatalf("%+v", c.last())
	}
}

func TestFailedRequestsCounted(t *testing.T) {
	d := doerFunc(func(ctx context.Context, r workload.Request) record.Request {
		ok := r.ID != "r001"
		return record.Request{ID: r.ID, OK: ok, OutputTokens: 5}
	})
	c := &collector{t: t}
	if err := Run(context.Background(), Config{}, requests(4), d, c.sink, c.progress); err != nil {
		t.Fatal(err)
	}
	// The failed request's 5 tokens are not counted.
	if p := c.last(); p != (Progress{Sent: 4, Done: 4, Failed: 1, Tokens: 15}) {
		t.Fatalf("%+v", p)
	}
}

type doerFunc func(context.Context, workload.Request) record.Request

func (f doerFunc) Do(ctx context.Context, r workload.Request) record.Request { return f(ctx, r) }

func TestValidate(t *testing.T) {
	bad := []Config{
		{Mode: "burst"},
		{Mode: Concurrency},
		{Mode: Concurrency, Concurrency: -1},
		{Mode: Poisson},
		{Mode: Poisson, Rate: math.NaN()},
		{MaxRequests: -1},
		{MaxDuration: -time.Second},
	}
	for _, cfg := range bad {
		if err := cfg.Validate(); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
		if err := Run(context.Background(), cfg, requests(1), newFake(false), nil, nil); err == nil {
			t.Errorf("%+v: Run accepted it", cfg)
		}
	}
	if _, err := ParseMode("burst"); err == nil || !strings.Contains(err.Error(), "unlimited, concurrency, constant, poisson, gamma, ramp") {
		t.Errorf("ParseMode: %v", err)
	}
	for _, cfg := range []Config{{}, {Mode: Unlimited}, {Mode: Concurrency, Concurrency: 1}, {Mode: Poisson, Rate: 0.5}, {Mode: Poisson, Rate: math.Inf(1)}} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

func TestFromSet(t *testing.T) {
	set, err := workload.LoadBuiltin("long-context", workload.Options{Temperature: 0.3, IgnoreEOS: true, Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	reqs := FromSet(set, "formal", "m", true)
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[2]
	if r.ID != "formal-00002" || r.Phase != "formal" || r.PromptID != set.Prompts[2].ID || r.Model != "m" || !r.Chat ||
		r.MaxTokens != set.Prompts[2].MaxTokens || r.Temperature != 0.3 || !r.IgnoreEOS || len(r.Messages) != 1 {
		t.Fatalf("%+v", r)
	}
}

func TestLimitsTimeoutForAPlainDoer(t *testing.T) {
	// A Doer that is not a Tracker gets the timeout through its context.
	f := newFake(true)
	c := &collector{t: t}
	cfg := Config{Limits: Limits{Timeout: 20 * time.Millisecond}}
	if err := Run(context.Background(), cfg, requests(2), f, c.sink, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.recs {
		if r.OK || r.Error != "cancelled: request timeout" {
			t.Fatalf("%+v", r)
		}
	}
}

// trackerDoer reports two tokens, then waits for release, and records the
// limits it was given.
type trackerDoer struct {
	*fakeDoer
	limits chan Limits
}

func (d trackerDoer) DoFlight(ctx context.Context, r workload.Request, f *Flight) record.Request {
	d.limits <- f.Limits
	f.AddTokens(2)
	return d.Do(ctx, r)
}

func TestTrackerGetsLimitsAndWatchSeesFlights(t *testing.T) {
	d := trackerDoer{fakeDoer: newFake(true), limits: make(chan Limits, 10)}
	watched := make(chan Waiting, 1000)
	cfg := Config{Mode: Concurrency, Concurrency: 2, Limits: Limits{Timeout: time.Hour, Stall: time.Minute},
		WatchEvery: 5 * time.Millisecond,
		Watch: func(w Waiting) {
			select {
			case watched <- w:
			default:
			}
		}}
	done := make(chan error, 1)
	c := &collector{t: t}
	go func() { done <- Run(context.Background(), cfg, requests(2), d, c.sink, nil) }()
	waitStarted(t, d.fakeDoer, 2)
	for range 2 {
		if l := <-d.limits; l != cfg.Limits {
			t.Fatalf("limits %+v, want %+v", l, cfg.Limits)
		}
	}
	// Both requests are in flight with 2 tokens each reported.
	deadline := time.After(10 * time.Second)
	for {
		var w Waiting
		select {
		case w = <-watched:
		case <-deadline:
			t.Fatal("no report of both flights")
		}
		if w.InFlight == 2 && w.Tokens == 4 {
			if w.Oldest != "r000" && w.Oldest != "r001" || w.OldestTokens != 2 || w.OldestAge <= 0 {
				t.Fatalf("waiting %+v", w)
			}
			break
		}
	}
	close(d.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(c.recs) != 2 {
		t.Fatalf("%d records", len(c.recs))
	}
}

func TestWatchValidated(t *testing.T) {
	for _, cfg := range []Config{
		{Watch: func(Waiting) {}},
		{Limits: Limits{Timeout: -1}},
		{Limits: Limits{Stall: -1}},
	} {
		if err := cfg.Validate(); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}
