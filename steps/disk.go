package steps

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/joulebench/joulebench/workflow"
)

// archiveError is a write to the run's archive that failed: the disk's
// fault, not the power source's nor the engine's, whichever of them was
// writing.
type archiveError struct {
	dir string
	err error
}

func (e *archiveError) Error() string {
	if errors.Is(e.err, syscall.ENOSPC) || errors.Is(e.err, syscall.EDQUOT) {
		return fmt.Sprintf("disk full: the run directory %s is on %s: %v", e.dir, describeDisk(e.dir), e.err)
	}
	return fmt.Sprintf("writing the run directory %s: %v", e.dir, e.err)
}

func (e *archiveError) Unwrap() error { return e.err }

// archiveErr wraps a failed archive write (nil stays nil).
func archiveErr(rc *workflow.RunContext, err error) error {
	return ArchiveWriteError(rc.Out.Dir(), err)
}

// ArchiveWriteError is err, a failed write into the run directory dir,
// said as the disk's fault: on a full disk it names the filesystem and its
// free space (nil stays nil).
func ArchiveWriteError(dir string, err error) error {
	var ae *archiveError
	if err == nil || errors.As(err, &ae) {
		return err
	}
	return &archiveError{dir: dir, err: err}
}

// describeDisk names the filesystem dir is on, and its free space:
// "/data (/dev/nvme0n1p2, ext4), 0 B free of 1.8 TB" (the mount from
// /proc/self/mountinfo where there is one).
func describeDisk(dir string) string {
	desc := "its filesystem"
	if m := mountOf(dir); m != "" {
		desc = m
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err == nil {
		desc += fmt.Sprintf(", %s free of %s", bytesText(uint64(st.Bavail)*uint64(st.Bsize)), bytesText(uint64(st.Blocks)*uint64(st.Bsize)))
	}
	return desc
}

// mountOf is the mount point holding dir with its source and type, from
// /proc/self/mountinfo ("" where there is none).
func mountOf(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	best, found := "", ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fs, ps := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fs) < 5 || len(ps) < 2 {
			continue
		}
		mp := unescapeMount(fs[4])
		if (abs == mp || strings.HasPrefix(abs, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
			best, found = mp, fmt.Sprintf("%s (%s, %s)", mp, unescapeMount(ps[1]), ps[0])
		}
	}
	return found
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline
// and backslash.
func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// bytesText is n in B, kB, MB, GB or TB (powers of 1000).
func bytesText(n uint64) string {
	units := []string{"B", "kB", "MB", "GB", "TB"}
	v, i := float64(n), 0
	for v >= 1000 && i < len(units)-1 {
		v /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
