package ssebench

import (
	"os/exec"
	"slices"
	"testing"
)

// A child started pinned may run only on that CPU; this process keeps
// every CPU it had.
func TestStartPinned(t *testing.T) {
	cpus := CPUs()
	if len(cpus) < 2 {
		t.Skipf("%d CPUs: nothing to pin apart", len(cpus))
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	target := cpus[len(cpus)-1]
	for range 4 { // several, so that more than one thread of ours forks
		cmd := exec.Command(sleep, "5")
		if err := StartPinned(cmd, target, 0); err != nil {
			t.Fatal(err)
		}
		got, err := Affinity(cmd.Process.Pid)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, []int{target}) {
			t.Errorf("child may run on %v, want [%d]", got, target)
		}
	}
	if got := CPUs(); !slices.Equal(got, cpus) {
		t.Errorf("after pinning children this process may run on %v, want %v", got, cpus)
	}
}

// A child started with a nice value has it (raising it needs no
// privilege); this process's threads keep theirs.
func TestStartNice(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	before, err := threadNice(0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sleep, "5")
	if err := StartPinned(cmd, -1, before+3); err != nil {
		t.Fatal(err)
	}
	got, err := threadNice(cmd.Process.Pid)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err != nil || got != before+3 {
		t.Errorf("child nice %d (%v), want %d", got, err, before+3)
	}
	if after, _ := threadNice(0); after != before {
		t.Errorf("this process's nice went from %d to %d", before, after)
	}
}

func TestParseProcStat(t *testing.T) {
	// Fields after the command: state ppid pgrp session tty tpgid flags
	// minflt cminflt majflt cmajflt utime stime ...; utime 150 + stime 50
	// ticks = 200 ticks / 100 per second = 2 s.
	line := "4242 (ssebench (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 50 0 0 20 0 9 0\n"
	got, err := parseProcStat(line)
	if err != nil || got != 2 {
		t.Errorf("parseProcStat = %v, %v; want 2 s", got, err)
	}
	if _, err := parseProcStat("4242 (x) S 1 2"); err == nil {
		t.Error("a short line parsed")
	}
}
