package workload

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// availableMemory is the memory this process may still allocate: the
// kernel's MemAvailable, lowered to what the cgroup (v2) limit leaves.
func availableMemory() (int64, bool) {
	avail, ok := memAvailable()
	if !ok {
		return 0, false
	}
	if lim, ok := readInt("/sys/fs/cgroup/memory.max"); ok {
		if cur, ok := readInt("/sys/fs/cgroup/memory.current"); ok && lim-cur < avail {
			avail = max(lim-cur, 0)
		}
	}
	return avail, true
}

// memAvailable reads MemAvailable from /proc/meminfo.
func memAvailable() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("MemAvailable:"))
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
		if err != nil {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// readInt reads a file holding one integer ("max" and anything else: not
// known).
func readInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}
