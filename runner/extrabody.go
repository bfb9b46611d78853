package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workload"
)

// ParseExtraBody parses --extra-body: a JSON object, or nothing.
func ParseExtraBody(raw string) (map[string]any, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		return nil, Invalidf("--extra-body %q: expected a JSON object such as {\"think\": false}", s)
	}
	return m, nil
}

// extraBodyDoer adds the --extra-body members to every request it sends
// (a request's own Extra members win).
type extraBodyDoer struct {
	next  loadgen.Doer
	extra map[string]any
}

func (d extraBodyDoer) Do(ctx context.Context, r workload.Request) record.Request {
	merged := make(map[string]any, len(d.extra)+len(r.Extra))
	for k, v := range d.extra {
		merged[k] = v
	}
	for k, v := range r.Extra {
		merged[k] = v
	}
	r.Extra = merged
	return d.next.Do(ctx, r)
}

// applyExtraBody wraps the run's client so that every request carries
// --extra-body, and records it in run.json.
func (e *engineRun) applyExtraBody() error {
	extra, err := ParseExtraBody(e.s.ExtraBody)
	if err != nil || extra == nil {
		return err
	}
	if next := e.deps.NewClient; next != nil {
		e.deps.NewClient = func(baseURL string) loadgen.Doer { return extraBodyDoer{next: next(baseURL), extra: extra} }
	}
	if e.deps.Client != nil {
		e.deps.Client = extraBodyDoer{next: e.deps.Client, extra: extra}
	}
	b, err := json.Marshal(e.s.Redact.Value(extra))
	if err != nil {
		return fmt.Errorf("extra body: %w", err)
	}
	return e.out.UpdateMeta(func(m *record.Meta) {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels["extra_body"] = string(b)
	})
}
