package campaign

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
)

// Points against a running server (--engine-url) share its GPUs with no
// engine start or release between them: the tail of one point's load is
// still in the power when the next point's idle baseline starts. Before
// each such point the sweep passes --cooldown-idle-w, the lowest idle
// baseline of the complete earlier points against the same server (the
// sum over devices of the mean power in the baseline stage), and the run
// waits for its GPUs to come back within the profile's release tolerance
// of it (bounded by release_max_wait, recorded in its run.json) before
// its own baseline (docs/campaigns.md).

// engineURLOf is the value of --engine-url in a run's arguments ("" for a
// managed engine).
func engineURLOf(args []string) string {
	for i, a := range args {
		if a == "--engine-url" && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--engine-url="); ok {
			return v
		}
	}
	return ""
}

// serverIdleW is the lowest idle baseline (W, all devices) of the
// campaign's complete runs against the server url; ok is false when none
// has one.
func (c *Campaign) serverIdleW(url string) (float64, bool) {
	entries, err := os.ReadDir(c.RunsDir())
	if err != nil {
		return 0, false
	}
	best, ok := 0.0, false
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(c.RunsDir(), e.Name())
		meta, err := archive.ReadMeta(filepath.Join(dir, archive.RunFile))
		if err != nil || meta.Status != record.StatusComplete || meta.Engine.URL != url || meta.Engine.Managed {
			continue
		}
		run, err := archive.LoadData(dir)
		if err != nil {
			continue
		}
		if w, found := baselineIdleW(run); found && (!ok || w < best) {
			best, ok = w, true
		}
	}
	return best, ok
}

// baselineIdleW is the sum over devices of each device's mean power over
// the run's baseline stage (ok false without the stage or samples in it).
func baselineIdleW(run *record.Run) (float64, bool) {
	st, found := run.Meta.StageByName("baseline")
	if !found {
		return 0, false
	}
	sum := map[string]float64{}
	n := map[string]int{}
	for _, s := range run.Power {
		if s.T >= st.Start && s.T <= st.End {
			sum[s.Device] += s.PowerW
			n[s.Device]++
		}
	}
	if len(n) == 0 {
		return 0, false
	}
	devs := make([]string, 0, len(n))
	for d := range n {
		devs = append(devs, d)
	}
	slices.Sort(devs) // a fixed order of addition
	total := 0.0
	for _, d := range devs {
		total += sum[d] / float64(n[d])
	}
	return total, true
}

// cooldownArgs are the arguments that make a point against a running
// server wait for the server's idle level before its baseline (none for a
// managed engine or before the server's first complete point).
func (c *Campaign) cooldownArgs(r Run) []string {
	w, ok := c.cooldownIdleW(r)
	if !ok {
		return nil
	}
	return []string{"--cooldown-idle-w", strconv.FormatFloat(w, 'f', 3, 64)}
}

// cooldownIdleW is the idle level (W) a point against a running server
// waits for before its baseline (cooldownArgs); ok is false for none.
func (c *Campaign) cooldownIdleW(r Run) (float64, bool) {
	url := engineURLOf(r.Config.Args)
	if url == "" {
		return 0, false
	}
	return c.serverIdleW(url)
}
