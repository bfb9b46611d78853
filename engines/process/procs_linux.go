//go:build linux

package process

import (
	"bytes"
	"os"
	"strconv"
)

// listProcs reads /proc.
func listProcs() ([]ProcInfo, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var out []ProcInfo
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// readProc reads one process from /proc (ok false when it is gone or a
// zombie).
func readProc(pid int) (ProcInfo, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return ProcInfo{}, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return ProcInfo{}, false
	}
	f := bytes.Fields(b[end+1:])
	if len(f) < 3 || f[0][0] == 'Z' || f[0][0] == 'X' {
		return ProcInfo{}, false
	}
	pgid, _ := strconv.Atoi(string(f[2]))
	p := ProcInfo{PID: pid, PGID: pgid, Name: string(b[open+1 : end])}
	if c, err := os.ReadFile(dir + "/cmdline"); err == nil {
		for _, a := range bytes.Split(bytes.TrimRight(c, "\x00"), []byte{0}) {
			if len(a) > 0 || len(p.Args) > 0 {
				p.Args = append(p.Args, string(a))
			}
		}
	}
	return p, true
}

// hasEnv reports whether process pid's environment holds kv ("K=V"); it
// is false when the environment cannot be read (another user's process).
func hasEnv(pid int, kv string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, e := range bytes.Split(b, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// canTag: the environment of a process is readable, so that the tag
// identifies an engine's processes wherever they went.
const canTag = true
