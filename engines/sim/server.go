package sim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

// SimulatedHeader is set to "true" on every response of the sim engine.
const SimulatedHeader = "X-Joulebench-Simulated"

func (e *Engine) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", e.handleHealth)
	mux.HandleFunc("GET /version", e.handleVersion)
	mux.HandleFunc("GET /v1/models", e.handleModels)
	mux.HandleFunc("GET /metrics", e.handleMetrics)
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { e.handleGenerate(w, r, true) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { e.handleGenerate(w, r, false) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found_error", "no route for "+r.Method+" "+r.URL.Path)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(SimulatedHeader, "true")
		mux.ServeHTTP(w, r)
	})
}

// writeJSON writes a complete response with its Content-Length and flushes
// it, so that a client has all of it even if the server dies right after.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encoding response","code":500}}`)
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
	_ = http.NewResponseController(w).Flush()
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": status},
	})
}

func (e *Engine) handleHealth(w http.ResponseWriter, _ *http.Request) {
	switch e.Phase() {
	case simtel.PhaseReady:
		w.WriteHeader(http.StatusOK)
	case simtel.PhaseLoading:
		writeError(w, http.StatusServiceUnavailable, "service_unavailable", "model is loading")
	default:
		writeError(w, http.StatusServiceUnavailable, "service_unavailable", "engine is stopping")
	}
}

func (e *Engine) handleVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"version": e.cfg.Version, "simulated": true})
}

func (e *Engine) handleModels(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	created := e.startedAt.Unix()
	e.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"id":                   e.cfg.Model,
			"object":               "model",
			"created":              created,
			"owned_by":             "joulebench-sim",
			"root":                 e.cfg.Model,
			"max_model_len":        e.cfg.MaxModelLen,
			"revision":             e.cfg.Revision,
			"tensor_parallel_size": e.cfg.TensorParallel,
			"simulated":            true,
		}},
	})
}

func (e *Engine) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	st := e.sched.snapshot()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	lbl := fmt.Sprintf(`{model_name=%q}`, e.cfg.Model)
	bw := bufio.NewWriter(w)
	metric := func(name, typ, help string, v float64) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n%s%s %g\n", name, help, name, typ, name, lbl, v)
	}
	metric("sim:num_requests_running", "gauge", "Number of requests in the batch (prefill or decode).", float64(st.running))
	metric("sim:num_requests_waiting", "gauge", "Number of requests waiting for a slot.", float64(st.waiting))
	metric("sim:kv_cache_usage_perc", "gauge", "KV cache usage, 1 means 100 percent.", float64(st.kvTokens)/float64(e.cfg.KVCacheTokens))
	metric("sim:num_slots", "gauge", "Continuous batching slot limit.", float64(e.cfg.Slots))
	metric("sim:prompt_tokens_total", "counter", "Prompt tokens of accepted requests.", float64(st.promptTotal))
	metric("sim:generation_tokens_total", "counter", "Generated tokens.", float64(st.genTotal))
	metric("sim:request_success_total", "counter", "Requests finished.", float64(st.finished))
	metric("sim:request_aborted_total", "counter", "Requests whose client went away.", float64(st.aborted))
	// The activity the simulated GPUs follow, for GPUs that follow this
	// engine from another process (serve-sim in an engine pod).
	_ = simtel.WriteActivity(bw, e.Activity(), fmt.Sprintf(`model_name=%q`, e.cfg.Model))
	_ = bw.Flush()
}

// genRequest is the union of the chat and completions request bodies the
// sim understands; unknown fields are ignored, as by vLLM.
type genRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS bool `json:"ignore_eos"`
	N         *int `json:"n"`
	// KVTransfer is vLLM's kv_transfer_params of a disaggregated
	// deployment: do_remote_prefill says the prompt's KV cache comes from
	// the prefill engine, so this (decode) engine does not prefill it.
	KVTransfer *struct {
		DoRemotePrefill bool `json:"do_remote_prefill"`
		DoRemoteDecode  bool `json:"do_remote_decode"`
	} `json:"kv_transfer_params"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// messageText returns a message's text: a string, or the text parts of an
// array of content parts.
func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content must be a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// promptOf returns the text that seeds the request and its prompt tokens.
func promptOf(req *genRequest, chat bool) (string, int, error) {
	if chat {
		if len(req.Messages) == 0 {
			return "", 0, errors.New("messages is required")
		}
		var key strings.Builder
		chars := 0
		for i, m := range req.Messages {
			t, err := messageText(m.Content)
			if err != nil {
				return "", 0, fmt.Errorf("messages[%d]: %w", i, err)
			}
			chars += len(t)
			key.WriteString(m.Role)
			key.WriteByte(0)
			key.WriteString(t)
			key.WriteByte(0)
		}
		return key.String(), promptTokens(chars), nil
	}
	if len(req.Prompt) == 0 || string(req.Prompt) == "null" {
		return "", 0, errors.New("prompt is required")
	}
	var s string
	if err := json.Unmarshal(req.Prompt, &s); err == nil {
		return s, promptTokens(len(s)), nil
	}
	var ss []string
	if err := json.Unmarshal(req.Prompt, &ss); err == nil && len(ss) == 1 {
		return ss[0], promptTokens(len(ss[0])), nil
	}
	var ids []int
	if err := json.Unmarshal(req.Prompt, &ids); err == nil && len(ids) > 0 {
		return string(req.Prompt), len(ids), nil
	}
	return "", 0, errors.New("prompt must be a string, a one-element array of strings or an array of token ids")
}

func (e *Engine) nextID(prefix string) string {
	e.mu.Lock()
	e.reqN++
	n := e.reqN
	e.mu.Unlock()
	return fmt.Sprintf("%s-sim-%d", prefix, n)
}

func (e *Engine) handleGenerate(w http.ResponseWriter, r *http.Request, chat bool) {
	switch e.Phase() {
	case simtel.PhaseReady:
	case simtel.PhaseLoading:
		writeError(w, http.StatusServiceUnavailable, "service_unavailable", "model is loading")
		return
	default:
		writeError(w, http.StatusServiceUnavailable, "service_unavailable", "engine is stopping")
		return
	}
	var req genRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<20))
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error())
		return
	}
	if req.Model != "" && req.Model != e.cfg.Model {
		writeError(w, http.StatusNotFound, "not_found_error", fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return
	}
	if req.N != nil && *req.N != 1 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "the sim supports n = 1 only")
		return
	}
	key, ptoks, err := promptOf(&req, chat)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	if ptoks >= e.cfg.MaxModelLen {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %d input tokens.", e.cfg.MaxModelLen, ptoks))
		return
	}
	maxTok := req.MaxTokens
	if req.MaxCompletionTokens != nil {
		maxTok = req.MaxCompletionTokens
	}
	var limit int
	if maxTok == nil {
		limit = min(e.cfg.DefaultMaxTokens, e.cfg.MaxModelLen-ptoks)
	} else {
		limit = *maxTok
		if limit < 1 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens must be at least 1")
			return
		}
		if ptoks+limit > e.cfg.MaxModelLen {
			writeError(w, http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion).",
					e.cfg.MaxModelLen, ptoks+limit, ptoks, limit))
			return
		}
	}

	kind := "completions"
	if chat {
		kind = "chat"
	}
	rng := seqRNG(e.cfg.Seed, kind, key, limit, req.IgnoreEOS)
	target, finish := limit, "length"
	if !req.IgnoreEOS && rng.Float64() < e.cfg.StopProb {
		// natural answers are not vanishingly short
		lo := max(1, int(math.Ceil(float64(limit)*e.cfg.MinStopFrac)))
		if l := lo + rng.IntN(limit-lo+1); l < limit {
			target, finish = l, "stop"
		}
	}
	cached := 0
	if e.cache != nil {
		cached = e.cache.admit(cacheText(&req, chat, key), ptoks)
	}
	prefill := ptoks - cached
	if req.KVTransfer != nil && req.KVTransfer.DoRemotePrefill {
		prefill = 0 // the KV cache came from the prefill engine
	}
	q := &seq{
		ctx:         r.Context(),
		prompt:      ptoks,
		cached:      cached,
		prefillLeft: prefill,
		target:      target,
		finish:      finish,
		rng:         rng,
		out:         newStream(),
		handled:     make(chan struct{}),
	}
	defer close(q.handled) // after the response is written: a pending crash may go ahead
	if err := e.sched.submit(q); err != nil {
		writeError(w, http.StatusServiceUnavailable, "service_unavailable", "engine is stopping")
		return
	}
	prefix, object := "cmpl", "text_completion"
	if chat {
		prefix, object = "chatcmpl", "chat.completion"
	}
	id := e.nextID(prefix)
	created := time.Now().Unix()
	if req.Stream {
		includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		if chat {
			object = "chat.completion.chunk" // completions chunks stay "text_completion"
		}
		e.streamResponse(w, r, q, chat, id, object, created, includeUsage)
		return
	}
	e.wholeResponse(w, r, q, chat, id, object, created)
}

func usageOf(q *seq, generated int) map[string]any {
	u := map[string]any{
		"prompt_tokens":     q.prompt,
		"completion_tokens": generated,
		"total_tokens":      q.prompt + generated,
	}
	if q.cached > 0 {
		u["prompt_tokens_details"] = map[string]any{"cached_tokens": q.cached}
	}
	return u
}

// cacheText is the text the prefix cache sees: a completions prompt (its
// key), or a chat request's message contents joined.
func cacheText(req *genRequest, chat bool, key string) string {
	if !chat {
		return key
	}
	var b strings.Builder
	for _, m := range req.Messages {
		t, _ := messageText(m.Content) // checked by promptOf
		b.WriteString(t)
	}
	return b.String()
}

func (e *Engine) wholeResponse(w http.ResponseWriter, r *http.Request, q *seq, chat bool, id, object string, created int64) {
	var text strings.Builder
	n := 0
	for {
		select {
		case <-q.out.notify:
		case <-r.Context().Done():
			return
		}
		toks, done, finish, err := q.out.take()
		for _, t := range toks {
			text.WriteString(t)
		}
		n += len(toks)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "service_unavailable", err.Error())
			return
		}
		if !done {
			continue
		}
		choice := map[string]any{"index": 0, "logprobs": nil, "finish_reason": finish}
		if chat {
			choice["message"] = map[string]any{"role": "assistant", "content": text.String()}
		} else {
			choice["text"] = text.String()
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": object, "created": created, "model": e.cfg.Model,
			"choices": []any{choice},
			"usage":   usageOf(q, n),
		})
		return
	}
}

func (e *Engine) streamResponse(w http.ResponseWriter, r *http.Request, q *seq, chat bool, id, object string, created int64, includeUsage bool) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()

	chunk := func(choices []any, usage map[string]any) error {
		m := map[string]any{"id": id, "object": object, "created": created, "model": e.cfg.Model, "choices": choices}
		if usage != nil {
			m["usage"] = usage
		}
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		return nil
	}
	tokenChoice := func(text string) []any {
		if chat {
			return []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}, "logprobs": nil, "finish_reason": nil}}
		}
		return []any{map[string]any{"index": 0, "text": text, "logprobs": nil, "finish_reason": nil}}
	}
	n := 0
	for {
		select {
		case <-q.out.notify:
		case <-r.Context().Done():
			return
		}
		toks, done, finish, err := q.out.take()
		for _, t := range toks {
			if n == 0 && chat {
				role := []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant"}, "logprobs": nil, "finish_reason": nil}}
				if chunk(role, nil) != nil {
					return
				}
			}
			if chunk(tokenChoice(t), nil) != nil {
				return
			}
			n++
		}
		if err != nil {
			// Cut like a dying server: no finish, no [DONE].
			_ = rc.Flush()
			return
		}
		if done {
			var final map[string]any
			if chat {
				final = map[string]any{"index": 0, "delta": map[string]any{}, "logprobs": nil, "finish_reason": finish}
			} else {
				final = map[string]any{"index": 0, "text": "", "logprobs": nil, "finish_reason": finish}
			}
			if chunk([]any{final}, nil) != nil {
				return
			}
			if includeUsage && chunk([]any{}, usageOf(q, n)) != nil {
				return
			}
			_, _ = io.WriteString(w, "data: [DONE]\n\n")
			_ = rc.Flush()
			return
		}
		if len(toks) > 0 {
			if rc.Flush() != nil {
				return
			}
		}
	}
}
