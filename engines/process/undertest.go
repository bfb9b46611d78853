package process

import (
	"net"
	"net/url"
	"strconv"
	"strings"
)

// URLListeners are the processes listening on the port of a server's
// base URL when its host is this machine (nil for a remote host, a URL
// without a usable port, or a system that cannot say).
func URLListeners(base string) []int {
	u, err := url.Parse(base)
	if err != nil || !localHost(u.Hostname()) {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return nil
	}
	pids, _ := Listeners(n)
	return pids
}

// localHost reports whether host names this machine: localhost, a
// loopback or unspecified address, or an address of one of its interfaces.
func localHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// SplitUnderTest separates the server under test from the inference
// servers found: a process listening on its port (listeners), or in the
// process group of one (Ollama's model runners, vLLM's workers), is it;
// the others are other servers.
func SplitUnderTest(servers []ProcInfo, listeners []int) (target, others []ProcInfo) {
	pids, groups := map[int]bool{}, map[int]bool{}
	for _, pid := range listeners {
		pids[pid] = true
	}
	for _, p := range servers {
		if pids[p.PID] && p.PGID > 0 {
			groups[p.PGID] = true
		}
	}
	for _, p := range servers {
		if pids[p.PID] || groups[p.PGID] {
			target = append(target, p)
		} else {
			others = append(others, p)
		}
	}
	return target, others
}
