package ollama

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/internal/chunkset"
	"github.com/joulebench/joulebench/engines/internal/redirect"
	"github.com/joulebench/joulebench/engines/internal/streamcore"
	"github.com/joulebench/joulebench/internal/runclock"
	"github.com/joulebench/joulebench/workload"
)

// TimingKeys are the engine-reported numbers kept in
// record.Request.EngineTimings (counts, and durations in nanoseconds).
var TimingKeys = []string{"eval_count", "eval_duration", "prompt_eval_count", "prompt_eval_duration", "load_duration", "total_duration"}

// Client sends requests through Ollama's native streaming API:
// POST /api/chat (chat requests) or /api/generate, NDJSON lines.
//
// Times are read as by the OpenAI client (engines/openai), through the
// same streaming core (engines/internal/streamcore): sent_at when the connection is
// obtained, first_token_at at the first line that carries text (response,
// message.content, or the thinking text), done_at at the line with
// "done": true; token_times at every line with text (Ollama streams one
// token per line). output_tokens is eval_count (tokens_source "engine"),
// prompt_tokens prompt_eval_count, and the six timing fields are kept.
// A failed request keeps what arrived before the failure but carries 0
// output tokens; implausible counts (negative, above max_tokens, absurd)
// fail the request (streamcore.SettleCounts).
type Client struct {
	chatURL, generateURL string
	http                 *http.Client
	clock                func() float64
	timeout, stall       time.Duration
	tokenTimes           bool
	options              map[string]any
	keepAlive            string
	think                *bool
	auth                 []string // the Authorization header (nil: none)
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient replaces the HTTP client.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithStallTimeout cuts a stream when no bytes arrive for d once it
// started (0, the default: never).
func WithStallTimeout(d time.Duration) Option { return func(c *Client) { c.stall = d } }

// WithClock sets the run's clock (Unix seconds).
func WithClock(clock func() float64) Option { return func(c *Client) { c.clock = clock } }

// WithRequestTimeout bounds each request (0: none; default
// streamcore.DefaultRequestTimeout, an hour).
func WithRequestTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithRecordTokenTimes says whether token_times are recorded (default true).
func WithRecordTokenTimes(on bool) Option { return func(c *Client) { c.tokenTimes = on } }

// WithOptions adds model options sent with every request (seed, num_ctx,
// ...); a request's own num_predict and temperature win.
func WithOptions(o map[string]any) Option { return func(c *Client) { c.options = o } }

// WithKeepAlive sends keep_alive with every request.
func WithKeepAlive(s string) Option { return func(c *Client) { c.keepAlive = s } }

// WithAPIKey sends key as a bearer token with every request.
func WithAPIKey(key string) Option {
	return func(c *Client) {
		if key != "" {
			c.auth = []string{"Bearer " + key}
		}
	}
}

// WithThink sends "think": on (thinking models, Ollama >= 0.9).
func WithThink(on bool) Option { return func(c *Client) { c.think = &on } }

// NewClient returns a native-API client of the server at baseURL.
func NewClient(baseURL string, opts ...Option) *Client {
	c := &Client{
		chatURL:     streamcore.Endpoint(baseURL, "/api/chat"),
		generateURL: streamcore.Endpoint(baseURL, "/api/generate"),
		timeout:     streamcore.DefaultRequestTimeout,
		tokenTimes:  true,
	}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		c.http = &http.Client{Transport: streamcore.NewTransport()}
	}
	// The key and the URL's credentials go to this server only.
	c.http = redirect.Guard(c.http)
	if c.clock == nil {
		c.clock = runclock.Func()
	}
	return c
}

// line is one NDJSON line of /api/generate or /api/chat.
type line struct {
	Response string `json:"response"`
	Thinking string `json:"thinking"`
	Message  *struct {
		Content  string `json:"content"`
		Thinking string `json:"thinking"`
	} `json:"message"`
	Done       bool   `json:"done"`
	DoneReason string `json:"done_reason"`
	Error      string `json:"error"`
}

type timings struct {
	TotalDuration      *float64 `json:"total_duration"`
	LoadDuration       *float64 `json:"load_duration"`
	PromptEvalCount    *float64 `json:"prompt_eval_count"`
	PromptEvalDuration *float64 `json:"prompt_eval_duration"`
	EvalCount          *float64 `json:"eval_count"`
	EvalDuration       *float64 `json:"eval_duration"`
}

func (t *timings) put(m map[string]float64) {
	set := func(k string, v *float64) {
		if v != nil {
			m[k] = *v
		}
	}
	set("total_duration", t.TotalDuration)
	set("load_duration", t.LoadDuration)
	set("prompt_eval_count", t.PromptEvalCount)
	set("prompt_eval_duration", t.PromptEvalDuration)
	set("eval_count", t.EvalCount)
	set("eval_duration", t.EvalDuration)
}

// Do sends r and reads the whole stream; it never returns an error (a
// failure is a record with ok=false).
func (c *Client) Do(ctx context.Context, r workload.Request) record.Request {
	return c.DoFlight(ctx, r, nil)
}

// DoFlight (the loadgen.Tracker ability) is Do under the flight's
// limits (a zero limit keeps the client's), reporting each line with text
// into f (nil: none).
func (c *Client) DoFlight(ctx context.Context, r workload.Request, f *workload.Flight) record.Request {
	body, target, err := c.encode(r)
	hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/x-ndjson"}}
	if c.auth != nil {
		hdr["Authorization"] = c.auth
	}
	var rec record.Request
	x := streamcore.Begin(ctx, streamcore.Call{
		Config: streamcore.Config{HTTP: c.http, Clock: c.clock, Timeout: c.timeout, Stall: c.stall,
			Header: hdr, ErrorBody: errorText, MaxErrorBody: 300},
		Target: target, Body: body, EncodeErr: err, TokenTimes: c.tokenTimes}, r, f, &rec)
	if x == nil {
		return rec
	}
	defer x.Close()
	resp := x.Resp
	chars, done, readErr, streamErr := 0, false, error(nil), ""
	thinking := false          // a line held thinking text: first_answer_at is recorded
	var texts chunkset.Counter // distinct chunk texts
	var t timings
	br := bufio.NewReaderSize(resp.Body, 16<<10)
	for {
		raw, err := br.ReadBytes('\n')
		now := x.Now() // when the line reached the machine: one time per read, never going back
		if b := bytes.TrimSpace(raw); len(b) > 0 {
			var l line
			if jerr := gojson.Unmarshal(b, &l); jerr != nil {
				streamErr = "bad stream line: " + jerr.Error()
				rec.DoneAt = now
				break
			}
			if l.Error != "" {
				streamErr = l.Error
				rec.DoneAt = now
				break
			}
			n := utf8.RuneCountInString(l.Response) + utf8.RuneCountInString(l.Thinking)
			if l.Message != nil {
				n += utf8.RuneCountInString(l.Message.Content) + utf8.RuneCountInString(l.Message.Thinking)
			}
			if n > 0 {
				if rec.FirstTokenAt == 0 {
					rec.FirstTokenAt = now
				}
				thinking = thinking || l.Thinking != "" || (l.Message != nil && l.Message.Thinking != "")
				answerLine(&rec, r.Answer, l, thinking, now)
				if c.tokenTimes {
					rec.TokenTimes = append(rec.TokenTimes, now)
				}
				chars += n
				f.AddTokens(1)
				texts.Add(lineHash(l))
			}
			if l.Done {
				rec.DoneAt = now
				if jerr := gojson.Unmarshal(b, &t); jerr != nil {
					// A count that does not decode is no count: the
					// request fails, as for an implausible one, rather
					// than fall back to the chars/4 estimate.
					streamErr = "implausible token count from the server: the done line's counts do not decode: " + jerr.Error()
					t = timings{}
					break
				}
				done = true
				break
			}
		}
		if err != nil {
			rec.DoneAt = now
			if err != io.EOF {
				readErr = err
			}
			break
		}
	}
	rec.OutputChars = chars
	rec.DistinctChunks = texts.Distinct()
	switch {
	case streamErr != "":
		rec.Error = truncate(streamErr, 300)
	case readErr != nil:
		rec.Error = x.Describe(readErr, "stream cut: ")
	case !done:
		rec.Error = "stream ended before a line with done: true"
	case rec.FirstTokenAt == 0:
		rec.Error = "empty response: the stream completed without an output token"
	default:
		rec.OK = true
	}
	settle(&rec, &t, chars)
	return rec
}

// settle sets the record's engine timings and token counts from the done
// line's timings t (eval_count, else an estimate from chars) and checks
// them (streamcore.SettleCounts; a count that is not whole fails too).
func settle(rec *record.Request, t *timings, chars int) {
	tm := map[string]float64{}
	t.put(tm)
	if len(tm) > 0 {
		rec.EngineTimings = tm
	}
	switch {
	case t.EvalCount != nil:
		rec.OutputTokens = streamcore.ClampInt(*t.EvalCount)
		rec.TokensSource = streamcore.SourceEngine
		if t.PromptEvalCount != nil {
			rec.PromptTokens = streamcore.ClampInt(*t.PromptEvalCount)
		}
	case chars > 0 || rec.OK:
		rec.OutputTokens = streamcore.Estimate(chars)
		rec.TokensSource = streamcore.SourceEstimate
	}
	if len(rec.TokenTimes) == 0 {
		rec.TokenTimes = nil
	}
	if c := t.EvalCount; rec.OK && c != nil && *c != math.Trunc(*c) {
		rec.OK = false
		rec.Error = "implausible token count from the server: eval_count " + strconv.FormatFloat(*c, 'g', -1, 64) + " is not a whole number"
	}
	streamcore.SettleCounts(rec)
}

func (c *Client) encode(r workload.Request) ([]byte, string, error) {
	body := map[string]any{}
	target := c.generateURL
	p := workload.Prompt{Prompt: r.Prompt, Messages: r.Messages}
	if r.Chat {
		target = c.chatURL
		body["messages"] = p.ChatMessages()
	} else {
		body["prompt"] = p.CompletionText()
	}
	if r.Model != "" {
		body["model"] = r.Model
	}
	opts := map[string]any{}
	for k, v := range c.options {
		opts[k] = v
	}
	if r.MaxTokens > 0 {
		opts["num_predict"] = r.MaxTokens
	}
	opts["temperature"] = r.Temperature
	if c.keepAlive != "" {
		body["keep_alive"] = c.keepAlive
	}
	if c.think != nil {
		body["think"] = *c.think
	}
	for k, v := range r.Extra {
		if k == "options" {
			if m, ok := v.(map[string]any); ok {
				for ok2, ov := range m {
					opts[ok2] = ov
				}
				continue
			}
		}
		body[k] = v
	}
	body["options"] = opts
	body["stream"] = true
	b, err := json.Marshal(body)
	return b, target, err
}

// errorText is the "error" of a JSON error body, else the body.
func errorText(b []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if gojson.Unmarshal(b, &e) == nil && e.Error != "" {
		return e.Error
	}
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "?")), " ")
	if s == "" {
		return "(empty body)"
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}
