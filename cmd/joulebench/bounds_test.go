package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// badProfileFiles makes one path of each kind a profile argument must not
// be read from whole: a device, a symbolic link to one, a FIFO (no writer:
// a read would block), a directory, and a sparse regular file far over the
// size cap (reading it would exhaust memory). It returns name → path and,
// for each, what the error must say.
func badProfileFiles(t *testing.T) (map[string]string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	devLink := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", devLink); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "dir.yaml")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 30); err != nil { // sparse: 8 GiB that take no disk
		t.Skipf("sparse file: %v", err)
	}
	f.Close()
	paths := map[string]string{"/dev/zero": "/dev/zero", "symlink to /dev/zero": devLink, "FIFO": fifo, "directory": sub, "8 GiB file": huge}
	want := map[string]string{"/dev/zero": "a character device", "symlink to /dev/zero": "a character device",
		"FIFO": "a named pipe", "directory": "a directory", "8 GiB file": "8589934592 bytes, more than"}
	return paths, want
}

// Every way a profile file is named (validate's argument, extends:,
// analyze --profile, a campaign's profile:, and the campaign file itself)
// refuses a file that is no regular file or is over the cap, with an
// invalid-input exit code and the kind in words, instead of reading it
// until memory runs out or blocking on a FIFO.
func TestProfileFileKindsRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("devices and FIFOs are unix files")
	}
	paths, want := badProfileFiles(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	entries := []struct {
		name string
		args func(kind, path string) []string
	}{
		{"validate FILE", func(_, p string) []string { return []string{"validate", p} }},
		{"extends: FILE", func(k, p string) []string {
			return []string{"validate", write(strings.ReplaceAll(k, "/", "_")+"-child.yaml", fmt.Sprintf("extends: %q\nname: child\n", p))}
		}},
		{"analyze --profile FILE", func(_, p string) []string { return []string{"analyze", smallRun, "--profile", p} }},
		{"campaign profile: FILE", func(k, p string) []string {
			return []string{"validate", write(strings.ReplaceAll(k, "/", "_")+"-campaign.yaml",
				fmt.Sprintf("name: t\nprofile: %q\nout: out\nmatrix:\n  engine: [{kind: sim}]\n", p))}
		}},
		{"sweep --dry-run CAMPAIGN", func(_, p string) []string { return []string{"sweep", "--dry-run", p} }},
	}
	for _, e := range entries {
		for kind, p := range paths {
			t.Run(e.name+"/"+kind, func(t *testing.T) {
				out, errOut, code := runCLI(t, e.args(kind, p)...)
				if code != exitInvalid {
					t.Fatalf("exit code %d, want %d\n%s%s", code, exitInvalid, out, errOut)
				}
				if !strings.Contains(errOut, want[kind]) || !strings.Contains(errOut, filepath.Base(p)) {
					t.Errorf("error does not name the file and say %q:\n%s", want[kind], errOut)
				}
			})
		}
	}
}
