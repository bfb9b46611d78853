package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Unload asks the Ollama server at baseURL to release model now
// (POST /api/generate with no prompt and keep_alive 0), so that the next
// engine of a comparison does not share the GPU with it.
func Unload(ctx context.Context, hc *http.Client, baseURL, model string) (string, error) {
	body, err := json.Marshal(map[string]any{"model": model, "keep_alive": 0})
	if err != nil {
		return "", fmt.Errorf("unload %s: %w", model, err)
	}
	base := strings.TrimSuffix(strings.TrimSuffix(baseURL, "/"), "/v1")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/generate", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("unload %s: %w", model, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("unload %s: %w", model, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("unload %s: %s answered %s", model, base, resp.Status)
	}
	return fmt.Sprintf("unloaded %s from %s (keep_alive 0)", model, base), nil
}
