package openai

// Benchmarks of the streaming client against a loopback server written for
// them: a bare HTTP/1.1 server on a net.Listener that writes precomputed
// chunk frames, so that it costs little and allocates nothing per token.
// Both run the server in a child process (the test binary in server mode),
// as an engine runs, so that the client's CPU is measured alone and its
// scheduler is not the server's.
//
//	go test -run '^$' -bench Ingest -benchtime 2s ./engines/openai/
//	go test -run '^$' -bench Latency -benchtime 5x ./engines/openai/

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/internal/streamcore"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workload"
)

// tokenFrame is one HTTP chunk holding one SSE event the size of vLLM's.
var tokenFrame = frame(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}` + "\n\n")

const streamHeader = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"

func frame(payload string) []byte {
	return []byte(fmt.Sprintf("%x\r\n%s\r\n", len(payload), payload))
}

// streamServer streams max_tokens tokens per request. Unpaced, each
// connection's goroutine writes them as fast as it can. Paced (gap > 0), it
// behaves like an inference engine's step loop: one goroutine wakes every
// gap and writes one token to every stream that is due, a stream's first
// token being due first after its request arrived; it records when it
// wrote each token, by the request's bench_id.
type streamServer struct {
	ln         net.Listener
	clock      func() float64
	first, gap time.Duration
	arrivals   chan *pacedStream
	urgent     bool   // raise the step loop's thread priority
	batch      []byte // unpaced: this many token frames per write (nil: one)

	mu      sync.Mutex
	writes  map[int][]float64
	arrived atomic.Int64 // requests read
}

type pacedStream struct {
	conn   net.Conn
	id     int
	tokens int
	due    time.Time
	times  []float64
	done   chan error
}

func startStreamServer(tb testing.TB, clock func() float64, first, gap time.Duration) *streamServer {
	return startServer(tb, clock, first, gap, false)
}

func startServer(tb testing.TB, clock func() float64, first, gap time.Duration, urgent bool) *streamServer {
	return startBatchServer(tb, clock, first, gap, urgent, 1)
}

// startBatchServer is startServer whose unpaced streams write batch
// tokens per write (the ingest ceiling: a server that batches its
// writes).
func startBatchServer(tb testing.TB, clock func() float64, first, gap time.Duration, urgent bool, batch int) *streamServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &streamServer{ln: ln, clock: clock, first: first, gap: gap, urgent: urgent, writes: map[int][]float64{}}
	if batch > 1 {
		s.batch = bytes.Repeat(tokenFrame, batch)
	}
	stop := make(chan struct{})
	if gap > 0 {
		s.arrivals = make(chan *pacedStream, 4096)
		go s.stepLoop(stop)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	tb.Cleanup(func() { ln.Close(); close(stop) })
	return s
}

func (s *streamServer) url() string { return "http://" + s.ln.Addr().String() }

func (s *streamServer) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 8192)
	var body, tail []byte
	for {
		line, err := br.Peek(12)
		if err != nil {
			return
		}
		if string(line) == "GET /arrived" {
			if s.serveArrived(c, br) != nil {
				return
			}
			continue
		}
		if string(line) == "GET /writes " {
			if s.serveWrites(c, br) != nil {
				return
			}
			continue
		}
		body, err = readRequest(br, body[:0])
		if err != nil {
			return
		}
		s.arrived.Add(1)
		id, tokens := jsonInt(body, `"bench_id":`), jsonInt(body, `"max_tokens":`)
		if _, err := io.WriteString(c, streamHeader); err != nil {
			return
		}
		if s.arrivals != nil {
			ps := &pacedStream{conn: c, id: id, tokens: tokens, due: time.Now().Add(s.first), times: make([]float64, 0, tokens), done: make(chan error, 1)}
			s.arrivals <- ps
			if <-ps.done != nil {
				return
			}
			s.mu.Lock() // before the tail, which lets the client finish
			s.writes[id] = ps.times
			s.mu.Unlock()
		} else {
			i := 0
			if n := len(s.batch) / len(tokenFrame); n > 1 {
				for ; i+n <= tokens; i += n {
					if _, err := c.Write(s.batch); err != nil {
						return
					}
				}
			}
			for ; i < tokens; i++ {
				if _, err := c.Write(tokenFrame); err != nil {
					return
				}
			}
		}
		tail = appendTail(tail[:0], tokens)
		if _, err := c.Write(tail); err != nil {
			return
		}
	}
}

// skipHead reads a request's head up to its blank line.
func skipHead(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			return nil
		}
	}
}

// serveArrived answers GET /arrived with the number of requests read so
// far.
func (s *streamServer) serveArrived(c net.Conn, br *bufio.Reader) error {
	if err := skipHead(br); err != nil {
		return err
	}
	n := strconv.FormatInt(s.arrived.Load(), 10)
	_, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(n), n)
	return err
}

// serveWrites answers GET /writes with the write times recorded so far, as
// JSON {bench_id: [unix seconds...]} (the out-of-process server's report).
func (s *streamServer) serveWrites(c net.Conn, br *bufio.Reader) error {
	if err := skipHead(br); err != nil {
		return err
	}
	s.mu.Lock()
	body, err := json.Marshal(s.writes)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	return err
}

// stepLoop writes one token to every due stream each gap.
func (s *streamServer) stepLoop(stop chan struct{}) {
	if s.urgent {
		// The loop's thread runs ahead of the client's where the system
		// allows it (as an engine's would on its own cores), so that the
		// time it stamps is close to its write; without the privilege
		// this does nothing.
		runtime.LockOSThread()
		raiseThreadPriority()
	}
	var active []*pacedStream
	tick := time.NewTicker(s.gap)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			for more := true; more; {
				select {
				case ps := <-s.arrivals:
					active = append(active, ps)
				default:
					more = false
				}
			}
			kept := active[:0]
			for _, ps := range active {
				if now.Before(ps.due) {
					kept = append(kept, ps)
					continue
				}
				t := s.clock()
				if _, err := ps.conn.Write(tokenFrame); err != nil {
					ps.done <- err
					continue
				}
				ps.times = append(ps.times, t)
				if len(ps.times) == ps.tokens {
					ps.done <- nil
					continue
				}
				kept = append(kept, ps)
			}
			clear(active[len(kept):])
			active = kept
		}
	}
}

func appendTail(b []byte, tokens int) []byte {
	for _, p := range []string{
		`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n",
		`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":` + strconv.Itoa(tokens) + `,"total_tokens":` + strconv.Itoa(tokens+8) + "}}\n\n",
		"data: [DONE]\n\n",
	} {
		b = append(b, frame(p)...)
	}
	return append(b, "0\r\n\r\n"...)
}

// readRequest reads one HTTP/1.1 request with a Content-Length body.
func readRequest(br *bufio.Reader, body []byte) ([]byte, error) {
	n := -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		if len(line) <= 2 { // the blank line
			break
		}
		if len(line) > 15 && bytes.EqualFold(line[:15], []byte("content-length:")) {
			n, _ = strconv.Atoi(string(bytes.TrimSpace(line[15:])))
		}
	}
	if n < 0 {
		return nil, fmt.Errorf("no content-length")
	}
	body = append(body, make([]byte, n)...)
	_, err := io.ReadFull(br, body[len(body)-n:])
	return body, err
}

func jsonInt(b []byte, key string) int {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0
	}
	n := 0
	for _, c := range b[i+len(key):] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// rawStream is the floor client: it writes a request and reads the
// response to its end without parsing anything.
func rawStream(c net.Conn, br *bufio.Reader, req []byte) error {
	if _, err := c.Write(req); err != nil {
		return err
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if string(line) == "0\r\n" {
			_, err = br.ReadSlice('\n')
			return err
		}
	}
}

func raiseFDLimit(tb testing.TB) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Logf("getrlimit: %v", err)
		return
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			tb.Logf("setrlimit: %v", err)
		}
	}
	if lim.Cur < 4200 {
		tb.Skipf("open file limit %d is too low for 2,000 loopback sockets", lim.Cur)
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// BenchmarkIngest measures streamed tokens ingested per CPU-second of the
// client with 1, 100 and 1,000 concurrent streams of 256 tokens each,
// against a server in a child process (so that getrusage counts the
// client alone) that writes one token per write, or 64 (batch=64: the
// ingest ceiling, many events per read). One op is one token. Clients:
//
//	client: this package's Client, every per-chunk time kept, as a run
//	sends (DoFlight with the profiles' stall and request timeouts)
//	min: the reference, a minimal net/http client that only counts the
//	lines starting with "data:"
//	raw: writes the request on its own connection and reads the response
//	to its end without looking at it, a floor
//
// With the client pinned apart from the server, e.g.
//
//	JOULEBENCH_BENCH_SERVER_CPU=1 taskset -c 0 go test -run '^$' -bench Ingest ./engines/openai/
func BenchmarkIngest(b *testing.B) {
	raiseFDLimit(b)
	const tokensPerStream = 256
	for _, batch := range []int{1, 64} {
		srv := startProcServerBatch(b, 0, 0, batch)
		for _, streams := range []int{1, 100, 1000} {
			for _, kind := range []string{"client", "min", "raw"} {
				b.Run(fmt.Sprintf("%s-streams=%d-batch=%d", kind, streams, batch), func(b *testing.B) {
					benchIngest(b, srv.addr, kind, streams, tokensPerStream)
				})
			}
		}
	}
}

func benchIngest(b *testing.B, addr, kind string, streams, tokensPerStream int) {
	url := "http://" + addr
	client := NewClient(url, WithRecordTokenTimes(true))
	minClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, DisableCompression: true}}
	body := []byte(fmt.Sprintf(`{"bench_id":0,"max_tokens":%d}`, tokensPerStream))
	rawReq := []byte(fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	requests := (b.N + tokensPerStream - 1) / tokensPerStream
	var next, tokens atomic.Int64
	var failed atomic.Int32
	worker := func() {
		var conn net.Conn
		var br *bufio.Reader
		if kind == "raw" {
			var err error
			if conn, err = net.Dial("tcp", addr); err != nil {
				failed.Add(1)
				return
			}
			defer conn.Close()
			br = bufio.NewReaderSize(conn, readBufSize)
		}
		for next.Add(1) <= int64(requests) {
			switch kind {
			case "raw":
				if rawStream(conn, br, rawReq) != nil {
					failed.Add(1)
					return
				}
				tokens.Add(int64(tokensPerStream))
			case "min":
				n, err := minStream(minClient, url+"/v1/chat/completions", body)
				if err != nil {
					failed.Add(1)
					return
				}
				tokens.Add(int64(n - 3)) // less the finish, usage and [DONE] events
			default:
				// As a run's requests step sends: with a flight, the
				// profiles' 60 s stall timeout and one hour timeout.
				f := &workload.Flight{ID: "bench", Limits: workload.Limits{Timeout: time.Hour, Stall: time.Minute}}
				rec := client.DoFlight(context.Background(), Request{Chat: true, Prompt: "p", MaxTokens: tokensPerStream, Extra: map[string]any{"bench_id": 0}}, f)
				if !rec.OK || len(rec.TokenTimes) != tokensPerStream {
					failed.Add(1)
					return
				}
				tokens.Add(int64(rec.OutputTokens))
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, t0 := cpuSeconds(), time.Now()
	var wg sync.WaitGroup
	for i := 0; i < streams; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); worker() }()
	}
	wg.Wait()
	wall, cpu := time.Since(t0).Seconds(), cpuSeconds()-cpu0
	b.StopTimer()
	if failed.Load() > 0 {
		b.Fatalf("%d streams failed", failed.Load())
	}
	n := float64(tokens.Load())
	b.ReportMetric(n/wall, "tokens/s")
	if cpu > 0 {
		b.ReportMetric(n/cpu, "tokens/cpu-s")
		b.ReportMetric(cpu/n*1e9, "cpu-ns/token")
	}
}

// minStream is the reference client of BenchmarkIngest: it posts body and
// counts the lines of the response that start with "data:".
func minStream(c *http.Client, url string, body []byte) (int, error) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, readBufSize)
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		if bytes.HasPrefix(line, []byte("data:")) {
			n++
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// BenchmarkLatency runs 100 and 1,000 concurrent streams of 50 tokens, the
// first 200 ms after the request arrives and then one every 20 ms (5,000
// and 50,000 tokens/s offered), and compares the client's times with the
// server's write times, all from one clock. times=kernel is the client as
// it runs (token times from the kernel's receive stamps, see engines/internal/streamcore/arrival.go);
// times=read takes each time when the client reads the token, which shows
// what the client's own scheduling would add without the stamps:
//
//	ttft_added: client first_token_at - server's first write
//	token_added: client token time - server write time, every token
//	itl_client / itl_server: gaps between consecutive tokens
//	tokens/s: tokens over [first write, last write] at the server and over
//	[first token, last token] at the client; below the offered rate by
//	the streams' staggered starts and ends
//	decode_tokens/s: the sum over streams of (tokens-1)/(last-first), the
//	aggregate rate while every stream is decoding, which the offered rate
//	(streams x 50 tokens/s) is to be compared with
//
// The burst configurations (first=0) have no first-token delay: the first
// tokens arrive while the client is still sending the rest of the 1,000
// requests, on connections it has to open (the idle ones are closed before
// each round, as in a run's formal stage). send=each is one goroutine per
// request that encodes, dials and writes as it is started (the unlimited
// mode before Prepare); send=loadgen is the unlimited mode as it runs now
// (loadgen.Run: the client's Prepare, then the sends in waves that let
// the client read between them; see loadgen.BurstWave).
// They also report:
//
//	bounded_first_%: first tokens whose time is an upper bound (read
//	together with a later chunk; see streamcore.ReadStamp)
//	burst_ms: first to last sent_at of a round
func BenchmarkLatency(b *testing.B) {
	raiseFDLimit(b)
	for _, streams := range []int{100, 1000} {
		for _, stamps := range []bool{true, false} {
			times := map[bool]string{true: "kernel", false: "read"}[stamps]
			b.Run(fmt.Sprintf("streams=%d/times=%s", streams, times), func(b *testing.B) {
				benchLatency(b, latencyConfig{streams: streams, stamps: stamps, first: 200 * time.Millisecond})
			})
		}
	}
	for _, send := range []string{"each", "loadgen"} {
		b.Run("streams=1000/first=0/send="+send, func(b *testing.B) {
			benchLatency(b, latencyConfig{streams: 1000, stamps: true, burst: true, loadgen: send == "loadgen"})
		})
	}
}

type latencyConfig struct {
	streams int
	stamps  bool
	first   time.Duration // the server's first-token delay
	burst   bool          // open new connections each round
	loadgen bool          // send through loadgen.Run (unlimited)
}

func benchLatency(b *testing.B, cfg latencyConfig) {
	const (
		tokens = 50
		gap    = 20 * time.Millisecond
	)
	streams := cfg.streams
	// The server runs in its own process, as an engine does, so that its
	// step loop does not share this process's Go scheduler with the 1,000
	// client goroutines; both sides stamp times with the wall clock.
	srv := startProcServer(b, cfg.first, gap)
	client := NewClient(srv.url(), WithClock(wallClock), WithReceiveStamps(cfg.stamps))
	var ttftAdded, tokenAdded, itlClient, itlServer []float64
	var clientRate, serverRate, clientDecode, serverDecode []float64
	var burstMS []float64
	boundedFirst := 0
	// Warm up: open the connections (one token each, not measured).
	var warm sync.WaitGroup
	for i := 0; i < streams; i++ {
		warm.Add(1)
		go func() {
			defer warm.Done()
			client.Do(context.Background(), Request{Chat: true, Prompt: "p", MaxTokens: 1, Extra: map[string]any{"bench_id": -1}})
		}()
	}
	warm.Wait()
	b.ReportAllocs()
	b.ResetTimer()
	for iter := 0; iter < b.N; iter++ {
		recs := make([]record.Request, streams)
		reqs := make([]workload.Request, streams)
		for i := range reqs {
			reqs[i] = Request{ID: strconv.Itoa(i), Phase: "formal", Chat: true, Prompt: "p", MaxTokens: tokens, Extra: map[string]any{"bench_id": iter*streams + i}}
		}
		if cfg.burst {
			b.StopTimer()
			client.http.CloseIdleConnections()
			time.Sleep(100 * time.Millisecond) // the server sees them closed
			b.StartTimer()
		}
		if cfg.loadgen {
			err := loadgen.Run(context.Background(), loadgen.Config{Mode: loadgen.Unlimited}, reqs, client, func(rec record.Request) {
				i, _ := strconv.Atoi(rec.ID)
				recs[i] = rec
			}, func(p loadgen.Progress) {
				if p.Done == streams {
					boundedFirst += p.BoundedFirst
				}
			})
			if err != nil {
				b.Fatal(err)
			}
		} else {
			var wg sync.WaitGroup
			var bounded atomic.Int64
			for i := range reqs {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					f := &workload.Flight{}
					recs[i] = client.DoFlight(context.Background(), reqs[i], f)
					if _, first := f.Bounded(); first {
						bounded.Add(1)
					}
				}(i)
			}
			wg.Wait()
			boundedFirst += int(bounded.Load())
		}
		b.StopTimer()
		sMin, sMaxSent := 1e300, 0.0
		for _, r := range recs {
			sMin, sMaxSent = min(sMin, r.SentAt), max(sMaxSent, r.SentAt)
		}
		burstMS = append(burstMS, (sMaxSent-sMin)*1e3)
		writes, err := srv.writes(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		cMin, cMax, sMin, sMax := 1e300, 0.0, 1e300, 0.0
		total := 0
		for i, r := range recs {
			w := writes[iter*streams+i]
			if !r.OK || r.OutputTokens != tokens || len(r.TokenTimes) != tokens || len(w) != tokens {
				b.Fatalf("stream %d: ok %v (%s), %d tokens, %d times, %d server writes", i, r.OK, r.Error, r.OutputTokens, len(r.TokenTimes), len(w))
			}
			total += tokens
			ttftAdded = append(ttftAdded, (r.FirstTokenAt-w[0])*1e3)
			for j := range w {
				tokenAdded = append(tokenAdded, (r.TokenTimes[j]-w[j])*1e3)
				if j > 0 {
					itlClient = append(itlClient, (r.TokenTimes[j]-r.TokenTimes[j-1])*1e3)
					itlServer = append(itlServer, (w[j]-w[j-1])*1e3)
				}
			}
			cMin, cMax = min(cMin, r.TokenTimes[0]), max(cMax, r.TokenTimes[tokens-1])
			sMin, sMax = min(sMin, w[0]), max(sMax, w[tokens-1])
		}
		cDec, sDec := 0.0, 0.0
		for i, r := range recs {
			w := writes[iter*streams+i]
			cDec += float64(tokens-1) / (r.TokenTimes[tokens-1] - r.TokenTimes[0])
			sDec += float64(tokens-1) / (w[tokens-1] - w[0])
		}
		clientDecode, serverDecode = append(clientDecode, cDec), append(serverDecode, sDec)
		clientRate = append(clientRate, float64(total)/(cMax-cMin))
		serverRate = append(serverRate, float64(total)/(sMax-sMin))
		b.StartTimer()
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		v    []float64
	}{{"ttft_added", ttftAdded}, {"token_added", tokenAdded}, {"itl_client", itlClient}, {"itl_server", itlServer}} {
		b.ReportMetric(percentile(m.v, 50), m.name+"_p50_ms")
		b.ReportMetric(percentile(m.v, 99), m.name+"_p99_ms")
	}
	b.ReportMetric(percentile(itlClient, 99)-percentile(itlServer, 99), "itl_p99_diff_ms")
	b.ReportMetric(mean(clientRate), "client_tokens/s")
	b.ReportMetric(mean(serverRate), "server_tokens/s")
	b.ReportMetric(mean(clientDecode), "client_decode_tokens/s")
	b.ReportMetric(mean(serverDecode), "server_decode_tokens/s")
	if cfg.burst {
		b.ReportMetric(100*float64(boundedFirst)/float64(b.N*streams), "bounded_first_%")
		b.ReportMetric(mean(burstMS), "burst_ms")
	}
}

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[int(p/100*float64(len(s)-1)+0.5)]
}

func mean(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t / float64(len(v))
}

// BenchmarkBurst measures the unlimited mode's send burst alone: 1,000
// requests whose first token comes 2 s after they arrive, sent on new
// connections, timed from the first send until the server has read all of
// them (it reports the count at GET /arrived, polled every millisecond):
//
//	burst_ms: wall time of the burst
//	burst_cpu_ms: the client's CPU time over it (both cores counted)
//
// send=each: one goroutine per request that encodes, dials and writes as
// it is started (the unlimited mode before Prepare); send=prepared: the
// client's Prepare first (not timed), then the sends released from one
// gate (loadgen's unlimited mode before its waves, whose pauses are for
// reading, not in this measure); send=warm: the same with the
// connections already idle in the transport (opened by a request each), a
// floor that Prepare does not reach (net/http still sets each prepared
// connection up when a request takes it).
func BenchmarkBurst(b *testing.B) {
	raiseFDLimit(b)
	const streams = 1000
	srv := startProcServer(b, 2*time.Second, 20*time.Millisecond)
	for _, send := range []string{"each", "prepared", "warm"} {
		b.Run("send="+send, func(b *testing.B) {
			var wall, cpu []float64
			for iter := 0; iter < b.N; iter++ {
				client := NewClient(srv.url(), WithClock(wallClock))
				reqs := make([]workload.Request, streams)
				for i := range reqs {
					reqs[i] = Request{ID: strconv.Itoa(i), Phase: "formal", Chat: true, Prompt: "p", MaxTokens: 1, Extra: map[string]any{"bench_id": -2}}
				}
				if send == "warm" {
					burstWarm(b, client, streams)
				}
				base, err := srv.arrived(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				release := func() {}
				if send == "prepared" {
					release = client.Prepare(context.Background(), reqs)
				}
				gate := make(chan struct{})
				var wg sync.WaitGroup
				for i := range reqs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if send != "each" {
							<-gate
						}
						client.Do(context.Background(), reqs[i])
					}()
				}
				cpu0, t0 := cpuSeconds(), time.Now()
				close(gate)
				for {
					n, err := srv.arrived(context.Background())
					if err != nil {
						b.Fatal(err)
					}
					if n-base >= streams {
						break
					}
					time.Sleep(time.Millisecond)
				}
				wall = append(wall, time.Since(t0).Seconds()*1e3)
				cpu = append(cpu, (cpuSeconds()-cpu0)*1e3)
				wg.Wait()
				release()
				client.http.CloseIdleConnections()
			}
			b.ReportMetric(percentile(wall, 50), "burst_ms")
			b.ReportMetric(percentile(cpu, 50), "burst_cpu_ms")
		})
	}
}

// burstWarm opens n connections in the client's transport, one request
// each, and leaves them idle.
func burstWarm(b *testing.B, client *Client, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client.Do(context.Background(), Request{Chat: true, Prompt: "p", MaxTokens: 1, Extra: map[string]any{"bench_id": -1}})
		}()
	}
	wg.Wait()
}

// BenchmarkParseChunk compares the allocation-free chunk scanner with the
// same parse written with github.com/goccy/go-json (libChunk, the library
// the archive and the Ollama stream use) and with decoding the chunk into a
// small struct with encoding/json.
//
// Measured while choosing (go test -cpu 1, a vLLM-sized chunk, shared
// 2-core AMD EPYC; three runs each):
//
//	scanner                                  307-460 ns/chunk  0 allocs
//	goccy/go-json, strings as reused
//	  RawMessages, one pass (nested structs
//	  merge a repeated member: not the same
//	  results as encoding/json)              320-606 ns        0 allocs
//	goccy/go-json, libChunk (three passes,
//	  same results as encoding/json)         690-980 ns        0 allocs
//	goccy/go-json into strings                   731 ns        1 alloc
//	go-json-experiment jsontext, walked         2724 ns        0 allocs
//	encoding/json into a struct                10910 ns        9 allocs
//
// The library holds 0 allocations per token only with its results kept as
// RawMessages, and then costs 2-3 times the scanner per chunk. At the
// ingest ceiling (many chunks per read) the parse is most of the client's
// CPU per token, so the SSE path keeps the scanner; BenchmarkIngest
// unbatched (one chunk per write, where the syscalls dominate) could not
// tell the two apart on this machine: client 2,816-2,933 cpu-ns/token with
// either, raw 1,741-2,249 at 100 streams.
func BenchmarkParseChunk(b *testing.B) {
	chunk := tokenFrame[bytes.IndexByte(tokenFrame, '{') : bytes.LastIndexByte(tokenFrame, '}')+1]
	b.Run("scanner", func(b *testing.B) {
		b.ReportAllocs()
		var info chunkInfo
		for i := 0; i < b.N; i++ {
			if err := parseChunk(chunk, &info); err != nil || info.contentChars != 4 {
				b.Fatal(err, info)
			}
		}
	})
	b.Run("memo", func(b *testing.B) {
		// A stream's next token: read from the remembered shape.
		b.ReportAllocs()
		var info chunkInfo
		var memo chunkMemo
		for i := 0; i < b.N; i++ {
			if err := parseChunkMemo(chunk, &info, &memo); err != nil || info.contentChars != 4 {
				b.Fatal(err, info)
			}
		}
	})
	b.Run("goccy-go-json", func(b *testing.B) {
		b.ReportAllocs()
		var info chunkInfo
		var p libChunk
		for i := 0; i < b.N; i++ {
			if err := p.parse(chunk, &info); err != nil || info.contentChars != 4 {
				b.Fatal(err, info)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		var c struct {
			Choices []struct {
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		for i := 0; i < b.N; i++ {
			if err := json.Unmarshal(chunk, &c); err != nil || len(c.Choices[0].Delta.Content) != 4 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadSSE measures the client's own work per streamed token,
// without a network: a stream of 256 vLLM-sized token events (and the
// finish, usage and [DONE] events) read from memory by readSSE, every
// token time recorded. Each read is a new one for the receive stamps (a
// fake stamper), so the clock is read once per read, as with a socket.
// One op is one token.
func BenchmarkReadSSE(b *testing.B) {
	const tokens = 256
	event := tokenFrame[bytes.IndexByte(tokenFrame, 'd'):]
	event = event[:bytes.Index(event, []byte("\n\n"))+2]
	var data []byte
	for range tokens {
		data = append(data, event...)
	}
	for _, e := range []string{finishChunk, usageChunk(1, tokens), "[DONE]"} {
		data = append(data, "data: "+e+"\n\n"...)
	}
	c := NewClient("http://127.0.0.1:1")
	b.ReportAllocs()
	b.SetBytes(int64(len(data) / tokens))
	body := &countedReader{}
	for i := 0; i < b.N; i += tokens {
		rec := record.Request{MaxTokens: tokens, TokenTimes: make([]float64, 0, tokens+1)}
		st := stream{c: c, x: &streamcore.Exchange{}, stamper: body, rec: &rec}
		body.Reset(data)
		st.readSSE(body)
		if !st.sawDone || len(rec.TokenTimes) != tokens {
			b.Fatalf("done %v, %d token times", st.sawDone, len(rec.TokenTimes))
		}
	}
}

// countedReader is a bytes.Reader that numbers its reads as a stamped
// connection does (no stamps: the clock's reading is the time).
type countedReader struct {
	bytes.Reader
	seq uint64
}

func (r *countedReader) Read(p []byte) (int, error) {
	r.seq++
	return r.Reader.Read(p)
}

func (r *countedReader) LastReceived() int64            { return 0 }
func (r *countedReader) LastRead() streamcore.ReadStamp { return streamcore.ReadStamp{Seq: r.seq} }
