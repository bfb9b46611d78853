package process

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ProcInfo is one running process (zombies are not listed).
type ProcInfo struct {
	PID, PGID int
	// Name is the process's command name; Args its command line (split
	// on spaces where the system gives it as one string).
	Name string
	Args []string
}

// MatchName returns the name of names that p runs, if any: its command
// name, the base of its argv[0], or the module a Python interpreter runs
// or its top package (`python -m sglang.launch_server` is sglang,
// `python -m mlx_lm.server` is mlx_lm.server).
// The system's command name may be cut (Linux: 15 bytes).
func (p ProcInfo) MatchName(names []string) (string, bool) {
	var mine []string
	if p.Name != "" {
		mine = append(mine, p.Name)
	}
	if len(p.Args) > 0 {
		mine = append(mine, filepath.Base(p.Args[0]))
	}
	for i := 0; i+1 < len(p.Args); i++ {
		if p.Args[i] == "-m" {
			mod, _, _ := strings.Cut(p.Args[i+1], ".")
			mine = append(mine, p.Args[i+1], mod)
			break
		}
	}
	for _, n := range names {
		for _, m := range mine {
			if strings.EqualFold(m, n) || len(m) == 15 && len(n) > 15 && strings.EqualFold(m, n[:15]) {
				return n, true
			}
		}
	}
	return "", false
}

// String is "name (pid N)" with the command line when known.
func (p ProcInfo) String() string {
	s := fmt.Sprintf("%s (pid %d)", p.Name, p.PID)
	if len(p.Args) > 0 {
		cmd := strings.Join(Redact(p.Args), " ")
		if len(cmd) > 120 {
			cmd = cmd[:120] + "..."
		}
		s += ": " + cmd
	}
	return s
}

// FindServers lists the running processes, other than this one, that run
// one of the named inference servers (the engines' descriptors name their
// processes), sorted by pid. ok is false when the system cannot say.
func FindServers(names []string) (found []ProcInfo, ok bool) {
	procs, err := listProcs()
	if err != nil {
		return nil, false
	}
	self := os.Getpid()
	for _, p := range procs {
		if _, m := p.MatchName(names); m && p.PID != self {
			found = append(found, p)
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].PID < found[j].PID })
	return found, true
}
