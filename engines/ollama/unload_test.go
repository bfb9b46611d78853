package ollama

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/engines"
)

// Unload posts keep_alive 0 for the model to /api/generate (also given a
// base URL ending in /v1, as an OpenAI-API client of Ollama has), and a
// refusal is an error naming the status.
func TestUnload(t *testing.T) {
	var got map[string]any
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/generate" {
			http.NotFound(w, r)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Error(err)
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	msg, err := Unload(context.Background(), srv.Client(), srv.URL+"/v1", "tiny:latest")
	if err != nil || !strings.Contains(msg, "unloaded tiny:latest") {
		t.Fatalf("Unload: %q, %v", msg, err)
	}
	if got["model"] != "tiny:latest" || got["keep_alive"] != float64(0) {
		t.Errorf("body %v, want model tiny:latest and keep_alive 0", got)
	}
	status = http.StatusNotFound
	if _, err := Unload(context.Background(), srv.Client(), srv.URL, "gone"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("refused unload: %v, want an error naming 404", err)
	}
}

// --ollama-pull is refused: weights are loaded, never downloaded, inside
// startup.
func TestPullRefused(t *testing.T) {
	d := Descriptor()
	err := d.Validate(engines.Options{Common: engines.Common{Model: "tiny"}, Settings: engines.Settings{FlagPull: "true"}})
	if err == nil || !strings.Contains(err.Error(), "ollama pull tiny") {
		t.Errorf("Validate with --ollama-pull: %v, want a refusal naming `ollama pull tiny`", err)
	}
	if err := d.Validate(engines.Options{Common: engines.Common{Model: "tiny"}}); err != nil {
		t.Errorf("Validate without it: %v", err)
	}
}
