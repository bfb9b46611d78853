//go:build unix && !linux

package process

import (
	"os/exec"
	"strconv"
	"strings"
)

// listProcs asks ps. The command line is split on spaces.
func listProcs() ([]ProcInfo, error) {
	out, err := exec.Command("ps", "-axww", "-o", "pid=", "-o", "pgid=", "-o", "stat=", "-o", "comm=").Output()
	if err != nil {
		return nil, err
	}
	args := map[int][]string{}
	if a, err := exec.Command("ps", "-axww", "-o", "pid=", "-o", "args=").Output(); err == nil {
		for _, l := range strings.Split(string(a), "\n") {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			if pid, err := strconv.Atoi(f[0]); err == nil {
				args[pid] = f[1:]
			}
		}
	}
	var procs []ProcInfo
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || strings.HasPrefix(f[2], "Z") {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		pgid, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			continue
		}
		comm := strings.Join(f[3:], " ")
		if i := strings.LastIndexByte(comm, '/'); i >= 0 {
			comm = comm[i+1:]
		}
		procs = append(procs, ProcInfo{PID: pid, PGID: pgid, Name: comm, Args: args[pid]})
	}
	return procs, nil
}

// hasEnv is false: another process's environment is not readable here.
func hasEnv(int, string) bool { return false }

// canTag: the tag cannot be read back; an engine's processes are found by
// name among the processes that were not there before it started.
const canTag = false
