package campaign

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFile is the lock a sweep holds in the campaign directory while it
// runs: a second sweep of the same campaign refuses to start. It holds the
// PID of the sweep that locked it. The lock is an flock(2) on the open
// file, so the kernel drops it when its holder dies, even by SIGKILL; the
// file itself stays and is reused.
const LockFile = "sweep.lock"

// ErrLocked is returned (wrapped) by Lock when another sweep holds the
// campaign.
var ErrLocked = errors.New("campaign is locked by another sweep")

// Lock is a held campaign lock.
type Lock struct {
	f *os.File
}

// Lock takes the campaign's lock (OUT/sweep.lock) without waiting. When
// another sweep holds it, the error wraps ErrLocked and names the holder's
// PID.
func (c *Campaign) Lock() (*Lock, error) {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("campaign directory: %w", err)
	}
	path := filepath.Join(c.Dir, LockFile)
	// O_CLOEXEC (Go's default): the runs do not inherit the lock, so it
	// dies with the sweep, not with its last run.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("campaign lock: %w", err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("campaign lock %s: %w", path, err)
	}
	if !held {
		b, _ := os.ReadFile(path)
		f.Close()
		holder := strings.TrimSpace(string(b))
		if holder == "" {
			holder = "unknown"
		}
		return nil, fmt.Errorf("campaign %s: %w (pid %s holds %s); wait for it to end or stop it", c.Name, ErrLocked, holder, path)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("campaign lock %s: %w", path, err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("campaign lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock (the file stays: removing it would race with a
// sweep that opened it).
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the descriptor drops the flock
	l.f = nil
	return err
}
