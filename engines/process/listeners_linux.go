//go:build linux

package process

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Listeners lists the processes that hold a TCP socket listening on port
// (any address, IPv4 or IPv6): the sockets from /proc/net/tcp{,6}, their
// holders from /proc/PID/fd (only processes whose descriptors this user
// may read). ok is false when the system cannot say.
func Listeners(port int) (pids []int, ok bool) {
	inodes := map[string]bool{}
	read := false
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if listenInodes(f, port, inodes) {
			read = true
		}
	}
	if !read {
		return nil, false
	}
	if len(inodes) == 0 {
		return nil, true
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", d.Name(), "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			l, err := os.Readlink(filepath.Join("/proc", d.Name(), "fd", fd.Name()))
			if err == nil && strings.HasPrefix(l, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, true
}

// listenInodes adds to inodes the socket inodes of file (/proc/net/tcp's
// format: "sl local_address rem_address st ... inode") listening (st 0A)
// on port; it reports whether the file could be read.
func listenInodes(file string, port int, inodes map[string]bool) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != "0A" {
			continue
		}
		_, hexPort, ok := strings.Cut(fs[1], ":")
		if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
			inodes[fs[9]] = true
		}
	}
	return true
}
