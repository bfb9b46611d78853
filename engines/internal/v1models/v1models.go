// Package v1models reads an OpenAI-compatible server's GET /v1/models, as
// vLLM, SGLang and any OpenAI-compatible server write it. It is shared by
// the engine packages and is not part of joulebench's public API.
package v1models

import (
	"context"
	"fmt"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/process"
)

// Model is one entry of a /v1/models list.
type Model struct {
	ID          string `json:"id"`
	Root        string `json:"root"`
	OwnedBy     string `json:"owned_by"`
	MaxModelLen int    `json:"max_model_len"`
}

// List GETs /v1/models and returns the entry whose id is want (else the
// one engines.SameModel takes for it: Ollama's "tiny:latest" for "tiny"),
// or the first when want is "" or absent (the identity check then
// reports the mismatch), with the decoded body.
func List(ctx context.Context, srv *process.Server, want string) (Model, any, error) {
	var list struct {
		Data []Model `json:"data"`
	}
	raw, err := srv.GetJSON(ctx, "/v1/models", &list)
	if err != nil {
		return Model{}, nil, err
	}
	if len(list.Data) == 0 {
		return Model{}, raw, fmt.Errorf("GET %s/v1/models lists no model", srv.Base)
	}
	for _, m := range list.Data {
		if m.ID == want {
			return m, raw, nil
		}
	}
	// Ollama lists "tiny" as "tiny:latest" (its implicit tag).
	for _, m := range list.Data {
		if want != "" && engines.SameModel(want, m.ID) {
			return m, raw, nil
		}
	}
	return list.Data[0], raw, nil
}
