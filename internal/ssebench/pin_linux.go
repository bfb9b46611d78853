package ssebench

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CPUs lists the CPUs this process may run on, lowest first (nil when
// the system does not say).
func CPUs() []int {
	cpus, _ := Affinity(0)
	return cpus
}

// StartPinned starts cmd with every thread of it allowed only on cpu and
// at scheduling priority nice: it forks from a thread given both for the
// moment, which the child inherits, so that even threads the child makes
// before it could set them itself have them. A cpu below 0 leaves the
// affinity alone, a nice of 0 the priority (a negative nice needs the
// privilege to raise priority).
func StartPinned(cmd *exec.Cmd, cpu, nice int) error {
	if cpu < 0 && nice == 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the thread is dropped if it cannot be restored
		restored := true
		defer func() {
			if restored {
				runtime.UnlockOSThread()
			}
		}()
		tid := unix.Gettid()
		var old unix.CPUSet
		if cpu >= 0 {
			if err := unix.SchedGetaffinity(0, &old); err != nil {
				errc <- fmt.Errorf("start pinned: affinity: %w", err)
				return
			}
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				errc <- fmt.Errorf("start pinned to cpu %d: %w", cpu, err)
				return
			}
			defer func() { restored = restored && unix.SchedSetaffinity(0, &old) == nil }()
		}
		if nice != 0 {
			oldNice, err := threadNice(tid)
			if err == nil {
				err = unix.Setpriority(unix.PRIO_PROCESS, tid, nice)
			}
			if err != nil {
				errc <- fmt.Errorf("start with nice %d: %w", nice, err)
				return
			}
			defer func() { restored = restored && unix.Setpriority(unix.PRIO_PROCESS, tid, oldNice) == nil }()
		}
		errc <- cmd.Start()
	}()
	return <-errc
}

// threadNice is the nice value of thread (or process) id; the system call
// answers 20 - nice.
func threadNice(id int) (int, error) {
	p, err := unix.Getpriority(unix.PRIO_PROCESS, id)
	if err != nil {
		return 0, err
	}
	return 20 - p, nil
}

// Affinity lists the CPUs process pid may run on.
func Affinity(pid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return nil, fmt.Errorf("affinity of %d: %w", pid, err)
	}
	var cpus []int
	for i := 0; i < len(set)*64 && len(cpus) < set.Count(); i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// ticksPerSecond is USER_HZ, the unit of /proc/PID/stat's CPU times,
// which Linux fixes at 100 for user space on every architecture Go runs on.
const ticksPerSecond = 100

// ProcCPU is the user + system CPU time of process pid so far (all its
// threads, from /proc/PID/stat; 10 ms resolution).
func ProcCPU(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseProcStat(string(b))
}

// parseProcStat reads utime + stime (fields 14 and 15) of a /proc/PID/stat
// line, whose second field (the command in parentheses) may hold spaces.
func parseProcStat(s string) (float64, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("proc stat %q: no command field", s)
	}
	f := strings.Fields(s[i+1:]) // fields 3 on
	if len(f) < 13 {
		return 0, fmt.Errorf("proc stat: %d fields after the command, want 13 or more", len(f))
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("proc stat: utime %q, stime %q: want tick counts", f[11], f[12])
	}
	return float64(ut+st) / ticksPerSecond, nil
}
