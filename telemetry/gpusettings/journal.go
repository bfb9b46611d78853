package gpusettings

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/joulebench/joulebench/internal/boundedfile"
)

// JournalFile is the journal's name under the per-user state directory.
const JournalFile = "gpu-settings-journal.json"

// Journal is the record of GPU settings a run changed and has not yet
// restored. It is written before the first change and removed once every
// device is restored, so a run killed outright (SIGKILL, a power loss)
// leaves it behind: the next run refuses to start while it exists, and
// `joulebench restore` applies and clears it.
type Journal struct {
	// RunID is the run that changed the settings; PID its process.
	RunID string `json:"run_id"`
	PID   int    `json:"pid"`
	// Created is when the journal was written (RFC 3339, UTC).
	Created string `json:"created"`
	// Controller applied the settings ("nvml").
	Controller string          `json:"controller"`
	Devices    []JournalDevice `json:"devices"`
}

// JournalDevice is one GPU's previous values.
type JournalDevice struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid,omitempty"`
	// PreviousPowerLimitW is the limit to restore (0: the limit was not
	// changed).
	PreviousPowerLimitW float64 `json:"previous_power_limit_w,omitempty"`
	// ResetClocks says the SM clocks were locked and are to be unlocked;
	// ResetMemClocks the same of the memory clocks.
	ResetClocks    bool `json:"reset_clocks,omitempty"`
	ResetMemClocks bool `json:"reset_mem_clocks,omitempty"`
}

// DefaultJournalPath is the journal's fixed per-user place:
// $XDG_STATE_HOME/joulebench/gpu-settings-journal.json, with
// XDG_STATE_HOME defaulting to ~/.local/state. getenv reads the
// environment (os.Getenv).
func DefaultJournalPath(getenv func(string) string) (string, error) {
	dir := getenv("XDG_STATE_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home := getenv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("GPU settings journal: no XDG_STATE_HOME and no home directory: %w", err)
			}
			home = h
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "joulebench", JournalFile), nil
}

// ReadJournal reads the journal at path; nil (and no error) when there is
// none.
func ReadJournal(path string) (*Journal, error) {
	b, err := readJournalFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w (it stands where a GPU settings journal goes: remove it by hand)", err)
	}
	var j Journal
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("GPU settings journal %s: %w (it records GPU settings to restore: fix or remove it by hand after restoring them)", path, err)
	}
	return &j, nil
}

// WriteJournal writes j to path (mode 0600) through a temporary file:
// written, synced, renamed, and the directory synced, so the journal is on
// disk before the first change.
func WriteJournal(path string, j *Journal) error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("GPU settings journal: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+JournalFile+".tmp-*")
	if err != nil {
		return fmt.Errorf("GPU settings journal: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("GPU settings journal %s: %w", path, werr)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// RemoveJournal removes the journal at path (none is not an error).
func RemoveJournal(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("GPU settings journal %s: %w", path, err)
	}
	return nil
}

// CheckNoJournal refuses to start while a journal is outstanding, naming
// it and the run that left it.
func CheckNoJournal(path string) error {
	j, err := ReadJournal(path)
	if err != nil {
		return err
	}
	if j == nil {
		return nil
	}
	return fmt.Errorf("GPU settings changed by run %s (pid %d, %s) were never restored: the journal %s is outstanding; run `joulebench restore` to restore them before another run",
		j.RunID, j.PID, j.Created, path)
}

// maxJournalBytes caps a journal file: one GPU's previous values take
// about 300 bytes, a journal of 64 GPUs under 20 KiB.
const maxJournalBytes = 64 << 10

// journalReadTimeout bounds the read of one journal: a regular file of at
// most maxJournalBytes reads at once; a stuck file system is an error, not
// a run that never starts.
const journalReadTimeout = 5 * time.Second

// readJournalFile reads the journal file at path: a regular file only (a
// symbolic link, FIFO, device or directory is refused before a byte is
// read), at most maxJournalBytes, within journalReadTimeout.
func readJournalFile(path string) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := boundedfile.ReadNoFollow(path, "GPU settings journal", maxJournalBytes)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-time.After(journalReadTimeout):
		return nil, fmt.Errorf("GPU settings journal %s: not read within %v", path, journalReadTimeout)
	}
}
