package engines

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
)

// fakePart is an engine part that records what was done to it.
type fakePart struct {
	name               string
	log                *[]string
	startErr, readyErr error
	model              string
	external           bool
	exited             chan struct{}
}

func newFake(name, model string, log *[]string) *fakePart {
	return &fakePart{name: name, model: model, log: log, exited: make(chan struct{})}
}

func (f *fakePart) Kind() string    { return "fake" }
func (f *fakePart) Simulated() bool { return true }
func (f *fakePart) External() bool  { return f.external }
func (f *fakePart) Start(context.Context) error {
	*f.log = append(*f.log, "start "+f.name)
	return f.startErr
}
func (f *fakePart) WaitReady(context.Context, time.Duration) error { return f.readyErr }
func (f *fakePart) Identity(context.Context) (Identity, error) {
	return Identity{Model: f.model, EngineVersion: "v1"}, nil
}
func (f *fakePart) BaseURL() string { return "http://127.0.0.1:1/" + f.name }
func (f *fakePart) API() string     { return APIOpenAI }
func (f *fakePart) Stop(context.Context, time.Duration) (time.Time, error) {
	*f.log = append(*f.log, "stop "+f.name)
	close(f.exited)
	return time.Now(), nil
}
func (f *fakePart) Exited() <-chan struct{} { return f.exited }
func (f *fakePart) Info() record.EngineInfo {
	return record.EngineInfo{Kind: "fake", Command: []string{"serve", f.name}, Model: f.model}
}

func threeParts(log *[]string) (pre, dec, router *fakePart, parts []Part) {
	pre, dec, router = newFake("p", "m", log), newFake("d", "m", log), newFake("r", "m", log)
	return pre, dec, router, []Part{
		{Name: "prefill", Role: record.RolePrefill, Host: "node-a", Devices: []string{"gpu0"}, Engine: pre},
		{Name: "decode", Role: record.RoleDecode, Host: "node-b", Devices: []string{"gpu1"}, Engine: dec},
		{Name: "router", Role: record.RoleRouter, Host: "node-a", Engine: router},
	}
}

// TestDeploymentLifecycle: the parts start in order and stop in reverse;
// the entry's URL is the deployment's; the record lists each part with
// its identity; the deployment has exited once any part has.
func TestDeploymentLifecycle(t *testing.T) {
	var log []string
	_, _, _, parts := threeParts(&log)
	d, err := NewDeployment(parts, "router")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitReady(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Identity(ctx); err != nil {
		t.Fatal(err)
	}
	if d.BaseURL() != "http://127.0.0.1:1/r" || d.Info().Model != "m" || d.Info().Command[1] != "p" {
		t.Errorf("url %s info %+v: want the router's URL, the prefill part's configuration", d.BaseURL(), d.Info())
	}
	rec := d.Record()
	if rec.Entry != "router" || len(rec.Parts) != 3 || rec.Parts[1].Host != "node-b" || rec.Parts[1].Identity == nil ||
		rec.Parts[1].Identity.EngineVersion != "v1" || rec.Parts[1].Command[1] != "d" || !rec.Parts[1].Managed {
		t.Errorf("record %+v", rec)
	}
	select {
	case <-d.Exited():
		t.Fatal("exited before any part did")
	default:
	}
	if _, err := d.Stop(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	<-d.Exited()
	if got := strings.Join(log, ", "); got != "start p, start d, start r, stop r, stop d, stop p" {
		t.Errorf("order: %s", got)
	}
}

// TestDeploymentFailuresNameThePart: a part not ready, one failing to
// start (the started ones are stopped), one serving another model.
func TestDeploymentFailuresNameThePart(t *testing.T) {
	ctx := context.Background()
	var log []string
	_, dec, _, parts := threeParts(&log)
	dec.readyErr = errors.New("exited with status 1")
	d, _ := NewDeployment(parts, "router")
	_ = d.Start(ctx)
	err := d.WaitReady(ctx, time.Second)
	if err == nil || !strings.Contains(err.Error(), `deployment part "decode" (decode on node-b): not ready: exited with status 1`) {
		t.Errorf("ready: %v", err)
	}

	log = nil
	_, dec, _, parts = threeParts(&log)
	dec.startErr = errors.New("no such file")
	d, _ = NewDeployment(parts, "router")
	err = d.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), `part "decode"`) || strings.Join(log, ", ") != "start p, start d, stop p" {
		t.Errorf("start: %v; %v", err, log)
	}

	log = nil
	_, dec, _, parts = threeParts(&log)
	dec.model = "other"
	d, _ = NewDeployment(parts, "router")
	if _, err := d.Identity(ctx); err == nil || !strings.Contains(err.Error(), `part "decode"`) || !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("identity: %v", err)
	}
}

func TestNewDeploymentRefuses(t *testing.T) {
	var log []string
	for _, tc := range []struct {
		name  string
		edit  func([]Part) []Part
		entry string
		want  string
	}{
		{"bad role", func(p []Part) []Part { p[0].Role = "prefil"; return p }, "router", `part "prefill": role "prefil"`},
		{"no entry", func(p []Part) []Part { return p }, "gateway", `entry "gateway" is not a part`},
		{"twice", func(p []Part) []Part { p[1].Name = "prefill"; return p }, "router", `part "prefill" named twice`},
		{"none", func([]Part) []Part { return nil }, "router", "no parts"},
	} {
		_, _, _, parts := threeParts(&log)
		if _, err := NewDeployment(tc.edit(parts), tc.entry); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
