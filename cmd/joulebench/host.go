package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/joulebench/joulebench/archive"
)

// hostInfo describes this machine for run.json (asiai's os_version among
// others).
func hostInfo() archive.HostInfo {
	h, _ := os.Hostname()
	return archive.HostInfo{Hostname: h, OS: runtime.GOOS, OSVersion: osVersion(), Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
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
