package report

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/doc"

	"github.com/joulebench/joulebench/internal/num"
)

// HostEnergyName is the derived value of the built-in profiles that holds
// the GPU energy of the formal stage by host and role (host_energy()).
const HostEnergyName = "energy_by_host"

// tokensName is the metric whose value is the formal output tokens.
const tokensName = "formal_output_tokens"

// HostEnergy is the GPU devices of one host (and role) over the formal
// stage.
type HostEnergy struct {
	Host string `json:"host"`
	// Role is the devices' role; absent for a run without roles.
	Role    string   `json:"role,omitempty"`
	Devices []string `json:"devices"`
	EnergyJ float64  `json:"energy_j"`
	// MeanPowerW is EnergyJ / the formal stage's duration, its devices
	// together.
	MeanPowerW float64 `json:"mean_power_w"`
	// Share is EnergyJ / TotalJ; absent when TotalJ is 0.
	Share *float64 `json:"share,omitempty"`
	// JPerTokenShare is EnergyJ / the formal output tokens: the host's
	// part of formal J/token (the parts add up to it). Only for a run
	// without prefill and decode roles, whose hosts all serve every
	// token; absent otherwise.
	JPerTokenShare *float64 `json:"j_per_token_share,omitempty"`
}

// HostBreakdown is the GPU energy of one run's formal stage by host and
// role: shown for a run whose GPUs span more than one host or have roles.
type HostBreakdown struct {
	RunID     string       `json:"run_id"`
	Simulated bool         `json:"simulated"`
	Hosts     []HostEnergy `json:"hosts"`
	// TotalJ is the sum over Hosts: the formal stage's GPU energy.
	TotalJ float64 `json:"total_j"`
	// Note says why there are no rows (no power, the profile has no
	// energy by host).
	Note string `json:"note,omitempty"`
}

// SeveralHosts reports whether a run's GPUs span more than one host or
// any has a role: the runs that get an energy by host.
func SeveralHosts(m record.Meta) bool {
	hosts := map[string]bool{}
	for _, d := range m.Hardware.Devices {
		if d.DomainOrGPU() != record.DomainGPU {
			continue
		}
		if d.Role != "" {
			return true
		}
		hosts[d.Host] = true
	}
	return len(hosts) > 1
}

// Hosts builds a run's energy by host from its evaluated results (the
// profile's energy_by_host, never recomputed here); nil for a run on one
// host without roles, which shows none (SeveralHosts).
func Hosts(run *record.Run, res *record.Results) *HostBreakdown {
	if !SeveralHosts(run.Meta) {
		return nil
	}
	b := &HostBreakdown{RunID: run.Meta.RunID, Simulated: run.Meta.Simulated, Hosts: []HostEnergy{}}
	if res == nil {
		b.Note = "run not evaluated"
		return b
	}
	r, ok := res.Values[HostEnergyName]
	if !ok {
		b.Note = "the profile has no " + HostEnergyName + " (re-evaluate with --profile benchmark-1.5 for one)"
		return b
	}
	list, ok := r.Value.([]any)
	if !ok {
		b.Note = cmp.Or(r.Note, fmt.Sprintf("%s is not a list (%T)", HostEnergyName, r.Value))
		return b
	}
	disaggregated := false
	for _, d := range run.Meta.Hardware.Devices {
		disaggregated = disaggregated || d.Role == record.RolePrefill || d.Role == record.RoleDecode
	}
	tokens, haveTokens := finiteNumber(res.Values[tokensName].Value)
	for _, item := range list {
		h, err := hostOf(item)
		if err != nil {
			b.Note = fmt.Sprintf("%s: %v", HostEnergyName, err)
			b.Hosts = []HostEnergy{}
			return b
		}
		if !disaggregated && haveTokens && tokens > 0 {
			jpt := h.EnergyJ / tokens
			h.JPerTokenShare = &jpt
		}
		b.TotalJ += h.EnergyJ
		b.Hosts = append(b.Hosts, h)
	}
	if b.TotalJ > 0 {
		for i := range b.Hosts {
			sh := b.Hosts[i].EnergyJ / b.TotalJ
			b.Hosts[i].Share = &sh
		}
	}
	return b
}

// hostOf reads one element of energy_by_host.
func hostOf(item any) (HostEnergy, error) {
	m, ok := item.(map[string]any)
	if !ok {
		return HostEnergy{}, fmt.Errorf("element is %T, not an object", item)
	}
	h := HostEnergy{Devices: []string{}}
	h.Host, _ = m["host"].(string)
	h.Role, _ = m["role"].(string)
	if ds, ok := m["devices"].([]any); ok {
		for _, d := range ds {
			h.Devices = append(h.Devices, fmt.Sprint(d))
		}
	}
	var okE, okP bool
	h.EnergyJ, okE = finiteNumber(m["energy_j"])
	h.MeanPowerW, okP = finiteNumber(m["mean_power_w"])
	if !okE || !okP {
		return HostEnergy{}, fmt.Errorf("host %q: energy_j or mean_power_w is not a number", h.Host)
	}
	return h, nil
}

// finiteNumber is v as a finite float64.
func finiteNumber(v any) (float64, bool) { return num.Finite(v) }

// withJPerToken reports whether any row has a J/token share.
func (b *HostBreakdown) withJPerToken() bool {
	return slices.ContainsFunc(b.Hosts, func(h HostEnergy) bool { return h.JPerTokenShare != nil })
}

// hostBlocks are a run's energy by host for people: a title, a note
// when it has no rows, else a table with its total.
func hostBlocks(b *HostBreakdown) []doc.Block {
	blocks := []doc.Block{&doc.Title{Text: fmt.Sprintf("GPU energy by host · run %s", b.RunID)}}
	if b.Note != "" {
		blocks = append(blocks, &doc.Text{Text: "note: " + b.Note})
	}
	if len(b.Hosts) == 0 {
		return blocks
	}
	jpt := b.withJPerToken()
	roles := slices.ContainsFunc(b.Hosts, func(h HostEnergy) bool { return h.Role != "" })
	cols := []doc.Column{{Name: "host"}}
	if roles {
		cols = append(cols, doc.Column{Name: "role"})
	}
	cols = append(cols, doc.Column{Name: "devices"}, doc.Column{Name: "energy", Unit: "J"}, doc.Column{Name: "mean power", Unit: "W"}, doc.Column{Name: "share"})
	if jpt {
		cols = append(cols, doc.Column{Name: "J/token share"})
	}
	t := &doc.Table{Columns: cols, NoWrapMarkdown: true}
	power, sum := 0.0, 0.0
	for _, h := range b.Hosts {
		power += h.MeanPowerW
		row := []string{orDash(h.Host)}
		if roles {
			row = append(row, orDash(h.Role))
		}
		row = append(row, strings.Join(h.Devices, ", "), strconv.FormatFloat(h.EnergyJ, 'f', 1, 64), strconv.FormatFloat(h.MeanPowerW, 'f', 1, 64), fmtShare(h.Share))
		if jpt {
			row = append(row, fmtOpt(h.JPerTokenShare, 4))
			if h.JPerTokenShare != nil {
				sum += *h.JPerTokenShare
			}
		}
		t.Add(row)
	}
	total := []string{"total"}
	if roles {
		total = append(total, "")
	}
	total = append(total, "", strconv.FormatFloat(b.TotalJ, 'f', 1, 64), strconv.FormatFloat(power, 'f', 1, 64), "100.0 %")
	if jpt {
		total = append(total, strconv.FormatFloat(sum, 'f', 4, 64))
	}
	t.Add(total)
	return append(blocks, t)
}

// hostRows are a run's energy by host as rows of report's data (CSV):
// host.<host>[.<role>].energy_j, .mean_power_w, .share and
// .j_per_token_share, with the columns of the runs' rows (m the run's).
func hostRows(m record.Meta, excluded bool, b *HostBreakdown) [][]string {
	var out [][]string
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return g(*v)
	}
	for _, h := range b.Hosts {
		key := "host." + orDash(h.Host)
		if h.Role != "" {
			key += "." + h.Role
		}
		for _, kv := range []struct{ name, value, unit string }{
			{key + ".energy_j", g(h.EnergyJ), "J"},
			{key + ".mean_power_w", g(h.MeanPowerW), "W"},
			{key + ".share", opt(h.Share), "fraction"},
			{key + ".j_per_token_share", opt(h.JPerTokenShare), "J/token"},
		} {
			if kv.value == "" {
				continue
			}
			out = append(out, []string{m.RunID, m.Profile.Name, m.Engine.Kind, m.Engine.Model, m.Status, strconv.FormatBool(m.Simulated),
				strconv.FormatBool(excluded), kv.name, kv.value, kv.unit, "devices " + strings.Join(h.Devices, " "), ""})
		}
	}
	return out
}
