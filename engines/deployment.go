package engines

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/redact"
)

// Part is one engine part of a Deployment: an engine with the role it
// plays and the host it runs on.
type Part struct {
	// Name is unique in the deployment; errors name the part by it.
	Name string
	// Role is record.RolePrefill, RoleDecode, RoleRouter or RoleReplica.
	Role string
	// Host is the node the part runs on.
	Host string
	// Devices are the IDs (as in power.csv) of the devices it owns.
	Devices []string
	// Engine is the part's engine: a managed one (started and stopped
	// with the deployment) or an already running server (Externaler).
	Engine Engine
}

// managed reports whether the deployment starts and stops the part.
func (p Part) managed() bool {
	x, ok := p.Engine.(Externaler)
	return !ok || !x.External()
}

// Deployment is several engine parts run as one engine: requests go to
// the entry part (the router, or the one entry point); Start, WaitReady,
// Identity and Stop cover every part, and an error names the part. It
// starts the managed parts in order, stops them in the reverse order and
// waits for each; it has exited when any managed part has.
type Deployment struct {
	parts []Part
	entry int

	mu       sync.Mutex
	started  []int // indexes of the parts started, in order
	identity map[int]Identity
	watch    sync.Once
	exited   chan struct{}
}

var (
	_ Engine        = (*Deployment)(nil)
	_ Externaler    = (*Deployment)(nil)
	_ ModelNamer    = (*Deployment)(nil)
	_ Expecter      = (*Deployment)(nil)
	_ MetricsSource = (*Deployment)(nil)
	_ ExitReporter  = (*Deployment)(nil)
)

// NewDeployment checks the parts (at least one, each named once with a
// valid role and an engine) and the entry (the name of one of them).
func NewDeployment(parts []Part, entry string) (*Deployment, error) {
	if len(parts) == 0 {
		return nil, errors.New("deployment: no parts")
	}
	seen := map[string]bool{}
	for i, p := range parts {
		switch {
		case p.Name == "":
			return nil, fmt.Errorf("deployment: part %d has no name", i+1)
		case seen[p.Name]:
			return nil, fmt.Errorf("deployment: part %q named twice", p.Name)
		case !slices.Contains(record.Roles, p.Role):
			return nil, fmt.Errorf("deployment: part %q: role %q, want one of %v", p.Name, p.Role, record.Roles)
		case p.Engine == nil:
			return nil, fmt.Errorf("deployment: part %q has no engine", p.Name)
		}
		seen[p.Name] = true
	}
	i := slices.IndexFunc(parts, func(p Part) bool { return p.Name == entry })
	if i < 0 {
		return nil, fmt.Errorf("deployment: entry %q is not a part", entry)
	}
	return &Deployment{parts: slices.Clone(parts), entry: i, identity: map[int]Identity{}, exited: make(chan struct{})}, nil
}

// Parts are the deployment's parts in start order.
func (d *Deployment) Parts() []Part { return slices.Clone(d.parts) }

// Entry is the part requests go to.
func (d *Deployment) Entry() Part { return d.parts[d.entry] }

// served is the part whose configuration describes the model served: the
// entry, unless it is a router (then the first part that is not).
func (d *Deployment) served() Engine {
	if d.parts[d.entry].Role != record.RoleRouter {
		return d.parts[d.entry].Engine
	}
	for _, p := range d.parts {
		if p.Role != record.RoleRouter {
			return p.Engine
		}
	}
	return d.parts[d.entry].Engine
}

func (d *Deployment) partErr(i int, err error) error {
	p := d.parts[i]
	return fmt.Errorf("deployment part %q (%s on %s): %w", p.Name, p.Role, hostOr(p.Host), err)
}

func hostOr(h string) string {
	if h == "" {
		return "this host"
	}
	return h
}

// Kind is the kind of the part that serves the model.
func (d *Deployment) Kind() string { return d.served().Kind() }

// Simulated is true when every part is.
func (d *Deployment) Simulated() bool {
	for _, p := range d.parts {
		if !p.Engine.Simulated() {
			return false
		}
	}
	return true
}

// External is true when no part is managed.
func (d *Deployment) External() bool {
	return !slices.ContainsFunc(d.parts, Part.managed)
}

// Start starts the managed parts in order; when one fails, those already
// started are stopped and the error names the part.
func (d *Deployment) Start(ctx context.Context) error {
	for i, p := range d.parts {
		if !p.managed() {
			continue
		}
		if err := p.Engine.Start(ctx); err != nil {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			_, serr := d.Stop(stopCtx, 5*time.Second)
			cancel()
			return errors.Join(d.partErr(i, fmt.Errorf("start: %w", err)), serr)
		}
		d.mu.Lock()
		d.started = append(d.started, i)
		d.mu.Unlock()
	}
	d.watch.Do(d.watchExits)
	return nil
}

// watchExits closes exited when any managed part exits.
func (d *Deployment) watchExits() {
	for _, p := range d.parts {
		if !p.managed() {
			continue
		}
		go func(ch <-chan struct{}) {
			<-ch
			d.mu.Lock()
			defer d.mu.Unlock()
			select {
			case <-d.exited:
			default:
				close(d.exited)
			}
		}(p.Engine.Exited())
	}
}

// WaitReady waits for every part in order, within one timeout (<= 0: no
// limit besides ctx); a part that is not ready fails it, named.
func (d *Deployment) WaitReady(ctx context.Context, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	for i, p := range d.parts {
		left := time.Duration(0)
		if dl, ok := ctx.Deadline(); ok {
			if left = time.Until(dl); left <= 0 {
				return d.partErr(i, fmt.Errorf("not ready after %s", timeout))
			}
		}
		if err := p.Engine.WaitReady(ctx, left); err != nil {
			return d.partErr(i, fmt.Errorf("not ready: %w", err))
		}
	}
	return nil
}

// Identity asks every part for its identity (kept for Record) and returns
// the entry's; a part that serves another model than the entry fails it,
// named.
func (d *Deployment) Identity(ctx context.Context) (Identity, error) {
	ids := make([]Identity, len(d.parts))
	for i, p := range d.parts {
		id, err := p.Engine.Identity(ctx)
		if err != nil {
			return Identity{}, d.partErr(i, fmt.Errorf("identity: %w", err))
		}
		ids[i] = id
	}
	want := ids[d.entry].Model
	for i, id := range ids {
		if !SameModel(want, id.Model) {
			return Identity{}, d.partErr(i, fmt.Errorf("serves model %q, the entry %q serves %q", id.Model, d.parts[d.entry].Name, want))
		}
	}
	d.mu.Lock()
	for i, id := range ids {
		d.identity[i] = id
	}
	d.mu.Unlock()
	return ids[d.entry], nil
}

// BaseURL is the entry's.
func (d *Deployment) BaseURL() string { return d.parts[d.entry].Engine.BaseURL() }

// API is the entry's.
func (d *Deployment) API() string { return d.parts[d.entry].Engine.API() }

// Stop stops the managed parts that started, last started first, each
// waited for; it returns the latest exit, and the errors joined, each
// naming its part.
func (d *Deployment) Stop(ctx context.Context, grace time.Duration) (time.Time, error) {
	d.mu.Lock()
	started := slices.Clone(d.started)
	d.mu.Unlock()
	var last time.Time
	var errs []error
	for k := len(started) - 1; k >= 0; k-- {
		i := started[k]
		at, err := d.parts[i].Engine.Stop(ctx, grace)
		if err != nil {
			errs = append(errs, d.partErr(i, fmt.Errorf("stop: %w", err)))
		}
		if at.After(last) {
			last = at
		}
	}
	return last, errors.Join(errs...)
}

// Exited is closed when any managed part has exited.
func (d *Deployment) Exited() <-chan struct{} { return d.exited }

// ExitError says which managed part exited, and why when it can.
func (d *Deployment) ExitError() error {
	for i, p := range d.parts {
		if !p.managed() {
			continue
		}
		select {
		case <-p.Engine.Exited():
		default:
			continue
		}
		why := errors.New("exited")
		if x, ok := p.Engine.(ExitReporter); ok {
			if err := x.ExitError(); err != nil {
				why = err
			}
		}
		return d.partErr(i, why)
	}
	return nil
}

// Info is the configuration of the part that serves the model, at the
// entry's URL; Record lists the parts.
func (d *Deployment) Info() record.EngineInfo {
	info := d.served().Info()
	info.URL = d.BaseURL()
	info.Managed = !d.External()
	return info
}

// RequestModel is the served part's, when it says.
func (d *Deployment) RequestModel() string {
	if x, ok := d.served().(ModelNamer); ok {
		return x.RequestModel()
	}
	return ""
}

// Expect is the served part's, when it says.
func (d *Deployment) Expect() Identity {
	if x, ok := d.served().(Expecter); ok {
		return x.Expect()
	}
	return Identity{}
}

// MetricsURL is the served part's /metrics, when it has one.
func (d *Deployment) MetricsURL() string {
	if x, ok := d.served().(MetricsSource); ok {
		return x.MetricsURL()
	}
	return ""
}

// Record describes the deployment for run.json: every part with its
// role, host, command (redacted as the engine's is), URL, devices and the
// identity it reported.
func (d *Deployment) Record() *record.Deployment {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := &record.Deployment{Entry: d.parts[d.entry].Name, Simulated: d.Simulated()}
	for i, p := range d.parts {
		info := p.Engine.Info()
		rp := record.DeploymentPart{Name: p.Name, Role: p.Role, Host: p.Host, Kind: p.Engine.Kind(),
			Managed: p.managed(), URL: redact.URL(p.Engine.BaseURL()), Devices: slices.Clone(p.Devices)}
		if rp.Managed {
			rp.Command = slices.Clone(info.Command)
		}
		if id, ok := d.identity[i]; ok {
			rp.Identity = &record.PartIdentity{Model: id.Model, Revision: id.Revision, EngineVersion: id.EngineVersion}
		}
		out.Parts = append(out.Parts, rp)
	}
	return out
}

// Deployer is an engine made of several parts (Deployment): run.json
// lists them.
type Deployer interface {
	Record() *record.Deployment
}

var _ Deployer = (*Deployment)(nil)
