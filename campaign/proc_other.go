//go:build !unix

package campaign

import "os/exec"

func runAttr(*exec.Cmd) {}
