package ssebench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// MinimalResult is what the minimal client counted.
type MinimalResult struct {
	Requests  int `json:"requests"`
	Failed    int `json:"failed"`
	DataLines int `json:"data_lines"`
	// Tokens is DataLines less the server's TailEvents per successful
	// request: the content chunks, one token each.
	Tokens int     `json:"tokens"`
	WallS  float64 `json:"wall_s"`
	// CPUS is this process's user + system CPU over the streaming (0
	// where the system does not say).
	CPUS float64 `json:"cpu_s"`
}

// RunMinimal is the reference client: streams concurrent requests of
// maxTokens tokens to url (the server's root), each on its own connection
// through net/http, reading every response line by line and counting the
// lines that start with "data: " (not [DONE]); nothing is parsed or timed.
func RunMinimal(ctx context.Context, url string, streams, maxTokens int) (MinimalResult, error) {
	if streams <= 0 || maxTokens <= 0 {
		return MinimalResult{}, fmt.Errorf("minimal client: %d streams of %d tokens: want both positive", streams, maxTokens)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true, ForceAttemptHTTP2: false}}
	defer hc.CloseIdleConnections()
	body := fmt.Appendf(nil, `{"model":"ssebench","stream":true,"max_tokens":%d,"messages":[{"role":"user","content":"hi"}]}`, maxTokens)
	target := strings.TrimRight(url, "/") + "/v1/chat/completions"
	res := MinimalResult{Requests: streams}
	var mu sync.Mutex
	var wg sync.WaitGroup
	cpu0, t0 := cpuSeconds(), time.Now()
	for range streams {
		wg.Go(func() {
			lines, err := minimalStream(ctx, hc, target, body)
			mu.Lock()
			defer mu.Unlock()
			res.DataLines += lines
			if err != nil {
				res.Failed++
				return
			}
			res.Tokens += lines - TailEvents
		})
	}
	wg.Wait()
	res.WallS = time.Since(t0).Seconds()
	if c := cpuSeconds(); c > 0 {
		res.CPUS = c - cpu0
	}
	if res.Failed > 0 {
		return res, fmt.Errorf("minimal client: %d of %d streams failed", res.Failed, streams)
	}
	return res, nil
}

var dataPrefix, doneLine = []byte("data: "), []byte("data: [DONE]")

func minimalStream(ctx context.Context, hc *http.Client, target string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %s", resp.Status)
	}
	br := bufio.NewReaderSize(resp.Body, 32<<10)
	lines := 0
	for {
		line, err := br.ReadSlice('\n')
		if bytes.HasPrefix(line, dataPrefix) {
			if bytes.HasPrefix(line, doneLine) {
				return lines, nil
			}
			lines++
		}
		if err == io.EOF {
			return lines, fmt.Errorf("stream ended without [DONE]")
		}
		if err != nil && err != bufio.ErrBufferFull {
			return lines, err
		}
	}
}
