package record

// Deployment is a run of several engine parts (run.json deployment):
// disaggregated prefill and decode behind a router, or replicas of one
// engine on several nodes. Requests go to the part named Entry; every
// part is recorded with its role, host and how it runs. Absent for a run
// of one engine.
type Deployment struct {
	// Entry names the part requests are sent to (the router, or the one
	// entry point).
	Entry string `json:"entry"`
	// Parts are the deployment's parts in the order they start.
	Parts []DeploymentPart `json:"parts"`
	// Simulated is true for the simulator's deployment (--sim-preset
	// disaggregated).
	Simulated bool `json:"simulated,omitempty"`
}

// DeploymentPart is one engine part of a deployment.
type DeploymentPart struct {
	// Name is the part's name, unique in the deployment.
	Name string `json:"name"`
	// Role is RolePrefill, RoleDecode, RoleRouter or RoleReplica.
	Role string `json:"role"`
	// Host is the node the part runs on; its devices carry the same host.
	Host string `json:"host,omitempty"`
	// Kind is the engine kind of a managed part ("" for an external one
	// of unknown kind).
	Kind string `json:"kind,omitempty"`
	// Managed is true for a part joulebench started (and stopped); false
	// for an external part, given by its URL.
	Managed bool `json:"managed"`
	// Command is a managed part's argv, secrets redacted as the engine's
	// command is.
	Command []string `json:"command,omitempty"`
	// URL is the part's server root.
	URL string `json:"url,omitempty"`
	// Devices are the IDs (as in power.csv) of the devices the part owns.
	Devices []string `json:"devices,omitempty"`
	// Identity is what the part reported of itself once ready (absent
	// before, or for a part that reports nothing).
	Identity *PartIdentity `json:"identity,omitempty"`
}

// PartIdentity is what a part reports of itself: the model it serves
// and its engine's version.
type PartIdentity struct {
	Model         string `json:"model,omitempty"`
	Revision      string `json:"revision,omitempty"`
	EngineVersion string `json:"engine_version,omitempty"`
}

// PartNamed returns the part named name, nil when there is none.
func (d *Deployment) PartNamed(name string) *DeploymentPart {
	for i := range d.Parts {
		if d.Parts[i].Name == name {
			return &d.Parts[i]
		}
	}
	return nil
}

// Served is the part whose engine run.json's engine describes: the
// entry, unless it is a router, then the first part that is not (as the
// runner chooses it); nil when the entry names no part.
func (d *Deployment) Served() *DeploymentPart {
	e := d.PartNamed(d.Entry)
	if e == nil || e.Role != RoleRouter {
		return e
	}
	for i := range d.Parts {
		if d.Parts[i].Role != RoleRouter {
			return &d.Parts[i]
		}
	}
	return e
}
