package ssebench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// counter is a clock that reads 1, 2, 3, ... one step per call.
func counter() func() float64 {
	n := 0.0
	return func() float64 { n++; return n }
}

// writeLog records each Write call's size in chunks of tokenFrame.
type writeLog struct{ chunks []int }

func (w *writeLog) Write(p []byte) (int, error) {
	w.chunks = append(w.chunks, len(p)/len(tokenFrame))
	return len(p), nil
}

func TestWriteBatches(t *testing.T) {
	for _, tc := range []struct {
		name          string
		tokens, batch int
		chunks        []int
		writes, ends  []float64
	}{
		// 10 chunks, 4 per write: 4 + 4 + 2, the clock read before and
		// after each write (1 and 2, 3 and 4, 5 and 6), shared by the
		// chunks the write carries.
		{"remainder", 10, 4, []int{4, 4, 2}, []float64{1, 1, 1, 1, 3, 3, 3, 3, 5, 5}, []float64{2, 2, 2, 2, 4, 4, 4, 4, 6, 6}},
		{"one per write", 3, 1, []int{1, 1, 1}, []float64{1, 3, 5}, []float64{2, 4, 6}},
		{"batch above the stream", 2, 64, []int{2}, []float64{1, 1}, []float64{2, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w writeLog
			got, ends, err := writeBatches(&w, tc.tokens, tc.batch, counter())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ends, tc.ends) {
				t.Errorf("write ends = %v, want %v", ends, tc.ends)
			}
			if !slices.Equal(w.chunks, tc.chunks) {
				t.Errorf("chunks per write = %v, want %v", w.chunks, tc.chunks)
			}
			if !slices.Equal(got, tc.writes) {
				t.Errorf("write times = %v, want %v", got, tc.writes)
			}
		})
	}
}

// The step loop's pacing, step by step on made-up times: a stream due
// 100 ms after t0 gets nothing at t0+50ms, its first chunk at t0+100ms and
// one chunk per step after; a stream due at once starts at the first step.
func TestStepPacing(t *testing.T) {
	s := &Server{cfg: Config{Clock: counter()}, arrivals: make(chan *stream, 2)}
	t0 := time.Unix(1000, 0)
	late := &stream{conn: &writeLog{}, tokens: 2, due: t0.Add(100 * time.Millisecond), done: make(chan error, 1)}
	now := &stream{conn: &writeLog{}, tokens: 3, due: t0, done: make(chan error, 1)}
	s.arrivals <- late
	s.arrivals <- now
	var active []*stream
	for i, step := range []struct {
		at                  time.Duration
		lateWrites, nowWrit int
		active              int
	}{
		{0, 0, 1, 2},
		{50 * time.Millisecond, 0, 2, 2},
		{100 * time.Millisecond, 1, 3, 1}, // now is done
		{120 * time.Millisecond, 2, 3, 0}, // late is done
	} {
		active = s.step(active, t0.Add(step.at))
		if len(late.writes) != step.lateWrites || len(now.writes) != step.nowWrit || len(active) != step.active {
			t.Fatalf("after step %d at +%v: %d and %d chunks written, %d streams active; want %d, %d, %d",
				i, step.at, len(late.writes), len(now.writes), len(active), step.lateWrites, step.nowWrit, step.active)
		}
	}
	// The clock is read before and after each chunk written, in order:
	// now's chunks at 1, 3, 7 (late's first took 5 and 6), late's at 5
	// and 9; each write's end is one tick after its start.
	for _, c := range []struct {
		name         string
		st           *stream
		writes, ends []float64
	}{{"now", now, []float64{1, 3, 7}, []float64{2, 4, 8}}, {"late", late, []float64{5, 9}, []float64{6, 10}}} {
		if !slices.Equal(c.st.writes, c.writes) || !slices.Equal(c.st.ends, c.ends) {
			t.Errorf("%s: write times %v, ends %v; want %v, %v", c.name, c.st.writes, c.st.ends, c.writes, c.ends)
		}
	}
	for _, st := range []*stream{late, now} {
		select {
		case err := <-st.done:
			if err != nil {
				t.Error(err)
			}
		default:
			t.Error("a finished stream was not told")
		}
	}
}

func post(t *testing.T, url, id, body string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if id != "" {
		req.Header.Set("X-Request-Id", id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %s, content type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	return string(b)
}

func dataLines(body string) (content, other int, done bool) {
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "data: [DONE]":
			done = true
		case strings.HasPrefix(line, "data: ") && strings.Contains(line, `"content":" tok"`):
			content++
		case strings.HasPrefix(line, "data: "):
			other++
		}
	}
	return content, other, done
}

// A paced stream over real HTTP: max_tokens chunks, the tail, [DONE]; the
// log has one entry under the request id, with one write time per chunk,
// the first no earlier than First after the arrival.
func TestServerPaced(t *testing.T) {
	ctx := context.Background()
	const first, gap = 60 * time.Millisecond, 5 * time.Millisecond
	srv, err := Start(ctx, "127.0.0.1:0", Config{First: first, Gap: gap})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	body := post(t, srv.URL(), "run-1-f000001", `{"model":"m","max_tokens": 7,"stream":true}`)
	content, other, done := dataLines(body)
	if content != 7 || other != TailEvents || !done {
		t.Fatalf("%d content events, %d others, [DONE] %v; want 7, %d, true\n%s", content, other, done, TailEvents, body)
	}
	if !strings.Contains(body, `"completion_tokens":7`) {
		t.Errorf("no usage of 7 tokens in\n%s", body)
	}
	entries := srv.Log().Entries("")
	if len(entries) != 1 || entries[0].ID != "run-1-f000001" || len(entries[0].Writes) != 7 || len(entries[0].WriteEnds) != 7 {
		t.Fatalf("log = %+v, want one entry run-1-f000001 with 7 writes and their ends", entries)
	}
	e := entries[0]
	if d := e.Writes[0] - e.ArrivedAt; d < first.Seconds() {
		t.Errorf("first write %.4f s after arrival, want at least %v", d, first)
	}
	if !slices.IsSorted(e.Writes) || e.Writes[6] == e.Writes[0] {
		t.Errorf("write times %v: want increasing, one per step", e.Writes)
	}
	for i := range e.Writes {
		if e.WriteEnds[i] < e.Writes[i] {
			t.Errorf("chunk %d: write ended at %v before it began at %v", i, e.WriteEnds[i], e.Writes[i])
		}
	}
}

// Unpaced with batching: 10 chunks in writes of 4 (4, 4, 2) share three
// write times; without max_tokens the stream has DefaultTokens chunks.
func TestServerBatched(t *testing.T) {
	srv, err := Start(context.Background(), "127.0.0.1:0", Config{Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if content, _, _ := dataLines(post(t, srv.URL(), "r-a", `{"max_tokens":10}`)); content != 10 {
		t.Fatalf("%d content events, want 10", content)
	}
	if content, _, _ := dataLines(post(t, srv.URL(), "r-b", `{}`)); content != DefaultTokens {
		t.Fatalf("%d content events without max_tokens, want %d", content, DefaultTokens)
	}
	e := srv.Log().Entries("r-a")
	if len(e) != 1 {
		t.Fatalf("entries r-a = %+v", e)
	}
	w := e[0].Writes
	distinct := slices.Compact(slices.Clone(w))
	if len(w) != 10 || len(distinct) > 3 || w[0] != w[3] || w[4] != w[7] || w[8] != w[9] {
		t.Errorf("write times %v: want 10 in three groups of 4, 4, 2", w)
	}
}

// GET /v1/models lists the model; /ssebench/log?prefix= gives the entries
// of one run as JSON; anything else is 404.
func TestServerEndpoints(t *testing.T) {
	srv, err := Start(context.Background(), "127.0.0.1:0", Config{Model: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	post(t, srv.URL(), "runA-1", `{"max_tokens":2}`)
	post(t, srv.URL(), "runB-1", `{"max_tokens":3}`)
	get := func(path string) (int, []byte) {
		resp, err := http.Get(srv.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, b := get("/v1/models"); code != 200 || !bytes.Contains(b, []byte(`"id":"tiny"`)) {
		t.Errorf("/v1/models: %d %s", code, b)
	}
	code, b := get("/ssebench/log?prefix=runB-")
	var entries []Entry
	if err := json.Unmarshal(b, &entries); code != 200 || err != nil {
		t.Fatalf("/ssebench/log: %d %v %s", code, err, b)
	}
	if len(entries) != 1 || entries[0].ID != "runB-1" || len(entries[0].Writes) != 3 {
		t.Errorf("/ssebench/log?prefix=runB- = %+v, want runB-1 with 3 writes", entries)
	}
	if code, _ := get("/metrics"); code != 404 {
		t.Errorf("/metrics: %d, want 404", code)
	}
}

func TestStartRejects(t *testing.T) {
	for _, cfg := range []Config{{Batch: -1}, {Gap: time.Millisecond, Batch: 2}, {First: -time.Second}} {
		if srv, err := Start(context.Background(), "127.0.0.1:0", cfg); err == nil {
			srv.Close()
			t.Errorf("Start(%+v) succeeded, want an error", cfg)
		}
	}
}

func TestReadRequest(t *testing.T) {
	for _, tc := range []struct {
		name, raw         string
		method, path, id  string
		query, body, fail string
	}{
		{name: "post", raw: "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nx-request-id:  run-7 \r\ncontent-length: 4\r\n\r\nabcd",
			method: "POST", path: "/v1/chat/completions", id: "run-7", body: "abcd"},
		{name: "get with query", raw: "GET /ssebench/log?prefix=a%2Db HTTP/1.1\r\n\r\n", method: "GET", path: "/ssebench/log", query: "prefix=a%2Db"},
		{name: "chunked body", raw: "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", fail: "transfer-encoding"},
		{name: "bad length", raw: "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", fail: "content-length"},
		{name: "short body", raw: "POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nabc", fail: "body"},
		{name: "bad line", raw: "HELLO\r\n\r\n", fail: "request line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req request
			err := readRequest(bufio.NewReader(strings.NewReader(tc.raw)), &req)
			if tc.fail != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fail) {
					t.Fatalf("error %v, want one about %s", err, tc.fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.method != tc.method || req.path != tc.path || req.id != tc.id || req.query != tc.query || string(req.body) != tc.body {
				t.Errorf("got %+v", req)
			}
		})
	}
	if got := queryValue("prefix=a%2Db&x=1", "prefix"); got != "a-b" {
		t.Errorf("queryValue = %q, want a-b", got)
	}
}

func TestJSONInt(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"max_tokens":256}`, 256},
		{`{"stream":true, "max_tokens": 12,"x":1}`, 12},
		{`{"stream":true}`, 0},
	} {
		if got := jsonInt([]byte(tc.body), `"max_tokens":`); got != tc.want {
			t.Errorf("jsonInt(%s) = %d, want %d", tc.body, got, tc.want)
		}
	}
}

func TestMinimalClient(t *testing.T) {
	srv, err := Start(context.Background(), "127.0.0.1:0", Config{Batch: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	res, err := RunMinimal(context.Background(), srv.URL(), 4, 7)
	if err != nil {
		t.Fatal(err)
	}
	// 4 streams × (7 content + 2 tail) = 36 data lines, 28 tokens.
	if res.Requests != 4 || res.Failed != 0 || res.DataLines != 36 || res.Tokens != 28 {
		t.Errorf("minimal client: %+v, want 4 requests, 36 data lines, 28 tokens", res)
	}
	if _, err := RunMinimal(context.Background(), srv.URL()+"/nowhere", 1, 1); err == nil {
		t.Error("a 404 counted as a stream")
	}
}
