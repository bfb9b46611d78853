package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines/all"
)

// hostInfo describes this machine for run.json (asiai's os_version among
// others).
func hostInfo() record.HostInfo {
	h, _ := os.Hostname()
	return record.HostInfo{Hostname: h, OS: runtime.GOOS, OSVersion: osVersion(), Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
}

// osVersion is the OS release: PRETTY_NAME of /etc/os-release on Linux,
// `sw_vers -productVersion` on macOS; empty when unknown.
func osVersion() string {
	switch runtime.GOOS {
	case "darwin":
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "sw_vers", "-productVersion").Output()
		if err != nil {
			return ""
		}
		return "macOS " + strings.TrimSpace(string(out))
	default:
		f, err := os.Open("/etc/os-release")
		if err != nil {
			return ""
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
				return strings.Trim(v, `"`)
			}
		}
		return ""
	}
}

// Host reports the state of the host that the asiai quality gates read.
type Host interface {
	// SwapUsed is the swap in use ("" when none or unknown).
	SwapUsed() string
	// EngineProcesses lists the running processes of the inference
	// servers named, as "name (pid N)", sorted ("" when none or unknown),
	// leaving out the server under test: the processes listening on
	// underTest (PIDs) and those in their process groups.
	EngineProcesses(names []string, underTest []int) string
}

// systemHost is this machine: /proc on Linux, sysctl and ps on macOS.
type systemHost struct{}

func (systemHost) SwapUsed() string { return swapUsed() }
func (systemHost) EngineProcesses(names []string, underTest []int) string {
	return otherEngineProcesses(names, serverUnderTest(names, underTest))
}

// serverUnderTest is the set of PIDs of the server under test: the
// listeners given and the named servers in their process groups.
func serverUnderTest(names []string, listeners []int) map[int]bool {
	if len(listeners) == 0 {
		return nil
	}
	set := map[int]bool{}
	for _, pid := range listeners {
		set[pid] = true
	}
	if pids, ok := all.ServerGroups(names, listeners); ok {
		for _, pid := range pids {
			set[pid] = true
		}
	}
	return set
}

// hostLabels records the host state the asiai quality gates read: swap in
// use when the run starts (host_swap_used) and other inference engine
// processes already running (other_engine_processes). Neither is set when
// nothing is found or the platform cannot say.
func (e *engineRun) hostLabels() error {
	swap := e.s.Host.SwapUsed()
	var underTest []int
	if e.es.External && e.es.Engine != nil {
		// An already running server (--engine-url) on this machine is
		// the one measured, not another engine.
		underTest = all.Listeners(e.es.Engine.BaseURL())
	}
	others := e.s.Host.EngineProcesses(e.s.Registry.ServerProcesses(), underTest)
	if swap == "" && others == "" {
		return nil
	}
	return e.out.UpdateMeta(func(m *record.Meta) {
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
// "name (pid N)", sorted, leaving out the PIDs in skip; "" when none or
// unknown.
func otherEngineProcesses(names []string, skip map[int]bool) string {
	var found []string
	match := func(comm string, pid string) {
		if n, err := strconv.Atoi(strings.TrimSpace(pid)); err == nil && skip[n] {
			return
		}
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
