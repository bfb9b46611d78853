//go:build unix

package processtest

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// escape starts the fake's copy in a new session, serving ln, and writes
// its pid to f.EscapeFile.
func escape(f Fake, ln net.Listener) error {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return fmt.Errorf("not a TCP listener")
	}
	lf, err := tl.File()
	if err != nil {
		return err
	}
	defer lf.Close()
	child := f
	child.Escaped, child.ArgvFile, child.ExitAfter = true, "", 0
	b, err := json.Marshal(child)
	if err != nil {
		return err
	}
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), envVar+"="+string(b))
	cmd.ExtraFiles = []*os.File{lf}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release() // a daemon: nobody waits for it here
	tmp := f.EscapeFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, f.EscapeFile)
}
