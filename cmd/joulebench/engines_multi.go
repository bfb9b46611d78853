package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/compare"
	"github.com/joulebench/joulebench/loadgen"
	"github.com/joulebench/joulebench/workload"
)

// multiEngineFlags are the run flags of the asiai protocol: the format of
// the side-by-side and winner tables, and a JSON object merged into every
// request body.
func multiEngineFlags(f *pflag.FlagSet) {
	f.String("extra-body", "", `JSON object merged into every request body, e.g. '{"think": false}' (recorded in run.json as the label extra_body)`)
	f.String("sweep", "", "run once per value of a profile parameter: NAME=v1,v2,... or NAME for the profile's own list (its parameter sweep_NAME), e.g. --sweep context_tokens or --sweep burst=1,4,8; one result row per value and engine")
}

// extraBody parses --extra-body: a JSON object, or nothing.
func (a *app) extraBody() (map[string]any, error) {
	s := strings.TrimSpace(a.v.GetString("extra-body"))
	if s == "" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		return nil, invalidf("--extra-body %q: expected a JSON object such as {\"think\": false}", s)
	}
	return m, nil
}

// extraBodyDoer adds the --extra-body members to every request it sends
// (a request's own Extra members win).
type extraBodyDoer struct {
	next  loadgen.Doer
	extra map[string]any
}

func (d extraBodyDoer) Do(ctx context.Context, r workload.Request) archive.Request {
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
func (r *engineRun) applyExtraBody() error {
	extra, err := r.a.extraBody()
	if err != nil || extra == nil {
		return err
	}
	if next := r.deps.NewClient; next != nil {
		r.deps.NewClient = func(baseURL string) loadgen.Doer { return extraBodyDoer{next: next(baseURL), extra: extra} }
	}
	if r.deps.Client != nil {
		r.deps.Client = extraBodyDoer{next: r.deps.Client, extra: extra}
	}
	b, err := json.Marshal(r.a.redact.Value(extra))
	if err != nil {
		return fmt.Errorf("extra body: %w", err)
	}
	return r.out.UpdateMeta(func(m *archive.Meta) {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels["extra_body"] = string(b)
	})
}

// hostLabels records the host state the asiai quality gates read: swap in
// use when the run starts (host_swap_used) and other inference engine
// processes already running (other_engine_processes). Neither is set when
// nothing is found or the platform cannot say.
func (r *engineRun) hostLabels() error {
	swap := swapUsed()
	others := otherEngineProcesses(r.a.engines.ServerProcesses())
	if swap == "" && others == "" {
		return nil
	}
	return r.out.UpdateMeta(func(m *archive.Meta) {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		if swap != "" {
			m.Labels["host_swap_used"] = swap
		}
		if others != "" {
			m.Labels["other_engine_processes"] = others
		}
	})
}

// swapUsed returns the swap in use ("" when none or unknown): Linux
// /proc/meminfo SwapTotal − SwapFree, macOS `sysctl vm.swapusage`.
func swapUsed() string {
	switch runtime.GOOS {
	case "linux":
		f, err := os.Open("/proc/meminfo")
		if err != nil {
			return ""
		}
		defer f.Close()
		kb := map[string]int64{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if fs := strings.Fields(v); ok && len(fs) > 0 {
				kb[k], _ = strconv.ParseInt(fs[0], 10, 64)
			}
		}
		if used := kb["SwapTotal"] - kb["SwapFree"]; used > 0 {
			return fmt.Sprintf("%d MiB", used>>10)
		}
	case "darwin":
		out, err := exec.Command("sysctl", "-n", "vm.swapusage").Output()
		if err != nil {
			return ""
		}
		// total = 2048.00M  used = 1024.25M  free = 1023.75M  (encrypted)
		fs := strings.Fields(string(out))
		for i := 0; i+2 < len(fs); i++ {
			if fs[i] == "used" && fs[i+1] == "=" {
				if v, err := strconv.ParseFloat(strings.TrimSuffix(fs[i+2], "M"), 64); err == nil && v > 0 {
					return fs[i+2]
				}
			}
		}
	}
	return ""
}

// otherEngineProcesses lists the running processes of the inference
// servers named (the engines' descriptors say their process names), as
// "name (pid N)", sorted; "" when none or unknown.
func otherEngineProcesses(names []string) string {
	var found []string
	match := func(comm string, pid string) {
		for _, n := range names {
			if strings.EqualFold(filepath.Base(strings.TrimSpace(comm)), n) {
				found = append(found, fmt.Sprintf("%s (pid %s)", n, pid))
			}
		}
	}
	switch runtime.GOOS {
	case "linux":
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return ""
		}
		for _, e := range ents {
			if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == strconv.Itoa(os.Getpid()) {
				continue
			}
			if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); err == nil {
				match(string(b), e.Name())
			}
		}
	case "darwin":
		out, err := exec.Command("ps", "-axo", "pid=,comm=").Output()
		if err != nil {
			return ""
		}
		for _, l := range strings.Split(string(out), "\n") {
			if pid, comm, ok := strings.Cut(strings.TrimSpace(l), " "); ok {
				match(comm, pid)
			}
		}
	}
	sort.Strings(found)
	return strings.Join(found, ", ")
}

// winnerTable prints the asiai winner table of the runs under parent:
// the winner by median tok/s, each engine's change against it, TTFT and
// power deltas, memory in use and the gates each failed.
func (a *app) winnerTable(parent string, dirs []string, format string) error {
	runs := make([]compare.Run, 0, len(dirs))
	for _, dir := range dirs {
		run, err := archive.Load(dir)
		if err != nil {
			continue // a failed engine has no results: reported above
		}
		runs = append(runs, compare.Run{Dir: dir, Meta: run.Meta, Results: run.Results})
	}
	if len(runs) == 0 {
		return nil
	}
	return compare.RenderAsiaiWinner(a.out, compare.AsiaiWinner(runs), format)
}
