package all

import "github.com/joulebench/joulebench/engines/process"

// What a run asks of this machine about inference servers, for the
// preflight and the host's state (engines/process does the work).

// PidDir is where a managed engine's pid file goes while it runs, per
// user, so that a later run reports an engine left running
// (process.DefaultPidDir).
func PidDir() string { return process.DefaultPidDir() }

// Listeners are the processes listening on the port of a server's base
// URL when its host is this machine (nil for a remote host or a system
// that cannot say).
func Listeners(baseURL string) []int { return process.URLListeners(baseURL) }

// ServerGroups are the processes running one of the named inference
// servers that are in the process group of one of the listeners (the
// server under test's workers and model runners); ok is false when the
// system cannot say.
func ServerGroups(names []string, listeners []int) (pids []int, ok bool) {
	servers, ok := process.FindServers(names)
	if !ok {
		return nil, false
	}
	target, _ := process.SplitUnderTest(servers, listeners)
	for _, p := range target {
		pids = append(pids, p.PID)
	}
	return pids, true
}
