package metricdefs

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/measure"
)

// PhaseEnergyView is what phase_energy() returns to expressions: the GPU
// energy of [a, b] by phase of inference (docs/methodology.md, "Several
// nodes").
type PhaseEnergyView struct {
	// PrefillJ is the energy of the devices of role prefill, plus the
	// prefill share of the devices that serve both phases; DecodeJ the
	// same for decode.
	PrefillJ float64 `expr:"prefill_j"`
	DecodeJ  float64 `expr:"decode_j"`
	// IdleJ is the energy of the devices serving both phases while no
	// request was in flight: neither phase's.
	IdleJ float64 `expr:"idle_j"`
	// RouterJ is the energy of the devices of role router, apart.
	RouterJ float64 `expr:"router_j"`
	// TotalJ is energy(a, b, method): PrefillJ + DecodeJ + IdleJ +
	// RouterJ, up to rounding.
	TotalJ float64 `expr:"total_j"`
	// The devices of each kind: dedicated to a phase, routers, and those
	// serving both (no role, or role replica) whose energy is split.
	PrefillDevices int `expr:"prefill_devices"`
	DecodeDevices  int `expr:"decode_devices"`
	RouterDevices  int `expr:"router_devices"`
	SplitDevices   int `expr:"split_devices"`
	// Requests counts the requests in flight in [a, b] that the split
	// used (0 when no device is split).
	Requests int `expr:"requests"`
}

// HostEnergyView is an element of what host_energy() returns: the GPU
// devices of one host and role, and their energy over [a, b].
type HostEnergyView struct {
	Host string `expr:"host"`
	// Role is the devices' role ("" for a single-engine run).
	Role    string   `expr:"role"`
	Devices []string `expr:"devices"`
	EnergyJ float64  `expr:"energy_j"`
	// MeanPowerW is EnergyJ / (b - a), all its devices together (0 for an
	// empty interval).
	MeanPowerW float64 `expr:"mean_power_w"`
}

// phaseBuiltinDefs are the built-ins of runs of several engine parts:
// energy by phase and by host.
func phaseBuiltinDefs() []builtinDef {
	return []builtinDef{
		{
			Builtin: Builtin{"phase_energy", `phase_energy(requests, a, b, method) {prefill_j, decode_j, idle_j, router_j, total_j, prefill_devices, decode_devices, router_devices, split_devices, requests}`,
				`GPU energy on [a, b] by phase: devices of role prefill count to prefill, decode to decode, router apart; a device without role (or replica) serves both and is split by time-sliced attribution over the requests (each request in flight an equal share, to prefill from sent_at to first_token_at, to decode from then to done_at); its energy with no request in flight is idle_j`},
			fn: func(p ...any) (any, error) {
				d, reqs, a, b, err := requestsInterval("phase_energy", p)
				if err != nil {
					return nil, err
				}
				v, err := d.phaseEnergy(reqs, a, b, p[4].(string))
				if err != nil {
					return nil, fmt.Errorf("phase_energy: %w", err)
				}
				return v, nil
			},
			types: []any{new(func(context.Context, []*record.Request, float64, float64, string) PhaseEnergyView),
				new(func(context.Context, []any, float64, float64, string) PhaseEnergyView)},
		},
		{
			Builtin: Builtin{"host_energy", `host_energy(a, b, method) list`,
				`GPU energy on [a, b] by host and role: [{host, role, devices, energy_j, mean_power_w}], ordered by host then role; each device integrated on its own samples, never summed sample by sample across hosts`},
			fn: func(p ...any) (any, error) {
				d, a, b, err := dataInterval("host_energy", p)
				if err != nil {
					return nil, err
				}
				v, err := d.hostEnergy(a, b, p[3].(string))
				if err != nil {
					return nil, fmt.Errorf("host_energy: %w", err)
				}
				return v, nil
			},
			types: ctxT(new(func(context.Context, float64, float64, string) []HostEnergyView)),
		},
	}
}

// gpuRoles returns the role of each device run.json lists (a device it
// does not list has none: "").
func (d *Data) gpuRoles() map[string]string {
	roles := map[string]string{}
	for _, dev := range d.Meta.Hardware.Devices {
		roles[dev.ID] = dev.Role
	}
	return roles
}

// concreteMethod resolves "auto" once for all the GPU devices (counter
// only when every one has a counter), so that parts integrated apart add
// up to energy(a, b, method).
func concreteMethod(pd *measure.PowerData, method string) string {
	if method != measure.MethodAuto {
		return method
	}
	if pd.HasCounter() {
		return measure.MethodCounter
	}
	return measure.MethodTrapz
}

// phaseEnergy is phase_energy(reqs, a, b, method).
func (d *Data) phaseEnergy(reqs []*record.Request, a, b float64, method string) (PhaseEnergyView, error) {
	if d.Power == nil {
		return PhaseEnergyView{}, fmt.Errorf("no power source: this run has no power samples")
	}
	total, err := d.Power.Energy(a, b, method)
	if err != nil {
		return PhaseEnergyView{}, err
	}
	method = concreteMethod(d.Power, method)
	roles := d.gpuRoles()
	var prefill, decode, router, split []string
	for _, id := range d.Power.Devices() {
		switch roles[id] {
		case record.RolePrefill:
			prefill = append(prefill, id)
		case record.RoleDecode:
			decode = append(decode, id)
		case record.RoleRouter:
			router = append(router, id)
		default: // no role, or a replica: serves both phases
			split = append(split, id)
		}
	}
	v := PhaseEnergyView{TotalJ: total, PrefillDevices: len(prefill), DecodeDevices: len(decode), RouterDevices: len(router), SplitDevices: len(split)}
	for _, part := range []struct {
		ids []string
		out *float64
	}{{prefill, &v.PrefillJ}, {decode, &v.DecodeJ}, {router, &v.RouterJ}} {
		if *part.out, err = d.subsetEnergy(part.ids, a, b, method); err != nil {
			return PhaseEnergyView{}, err
		}
	}
	if len(split) > 0 {
		sub, err := d.Power.Subset(split)
		if err != nil {
			return PhaseEnergyView{}, err
		}
		s, err := sub.SplitPhases(reqs, a, b, method)
		if err != nil {
			return PhaseEnergyView{}, err
		}
		v.PrefillJ += s.PrefillJ
		v.DecodeJ += s.DecodeJ
		v.IdleJ = s.IdleJ
		v.Requests = s.Requests
	}
	return v, nil
}

// subsetEnergy is the energy of the GPU devices ids on [a, b] (0 for
// none).
func (d *Data) subsetEnergy(ids []string, a, b float64, method string) (float64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	sub, err := d.Power.Subset(ids)
	if err != nil {
		return 0, err
	}
	return sub.Energy(a, b, method)
}

// hostEnergy is host_energy(a, b, method).
func (d *Data) hostEnergy(a, b float64, method string) ([]HostEnergyView, error) {
	if d.Power == nil {
		return nil, fmt.Errorf("no power source: this run has no power samples")
	}
	if _, err := d.Power.Energy(a, b, method); err != nil {
		return nil, err // the whole interval's error, before any part's
	}
	method = concreteMethod(d.Power, method)
	hosts := map[string]string{}
	for _, dev := range d.Meta.Hardware.Devices {
		hosts[dev.ID] = dev.Host
	}
	roles := d.gpuRoles()
	type key struct{ host, role string }
	groups := map[key][]string{}
	var keys []key
	for _, id := range d.Power.Devices() {
		k := key{hosts[id], roles[id]}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], id)
	}
	slices.SortFunc(keys, func(x, y key) int { return cmp.Or(cmp.Compare(x.host, y.host), cmp.Compare(x.role, y.role)) })
	out := make([]HostEnergyView, 0, len(keys))
	for _, k := range keys {
		e, err := d.subsetEnergy(groups[k], a, b, method)
		if err != nil {
			return nil, err
		}
		v := HostEnergyView{Host: k.host, Role: k.role, Devices: groups[k], EnergyJ: e}
		if b > a {
			v.MeanPowerW = e / (b - a)
		}
		out = append(out, v)
	}
	return out, nil
}
