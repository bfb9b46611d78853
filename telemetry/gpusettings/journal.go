package gpusettings

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/boundedfile"
)

// Where the journals live: one file per GPU in a machine-wide state
// directory, so that every user's runs (and `sudo -E`, which keeps the
// caller's HOME) see the GPUs' outstanding settings.
const (
	// StateDirEnv names the environment variable that overrides the
	// directory: when set (an absolute path) it is the only place.
	StateDirEnv = "JOULEBENCH_STATE_DIR"
	// SystemStateDir is the machine-wide directory.
	SystemStateDir = "/var/lib/joulebench"
	// JournalPrefix and JournalSuffix frame a journal's file name:
	// gpu-settings-<GPU UUID>.json.
	JournalPrefix = "gpu-settings-"
	JournalSuffix = ".json"
	// JournalFile is the single journal of earlier versions (per user),
	// still found and restored.
	JournalFile = "gpu-settings-journal.json"
)

// Journal is the record of GPU settings a run changed and has not yet
// restored. It is written before the first change and removed once every
// device is restored, so a run killed outright (SIGKILL, a power loss)
// leaves it behind: the next run refuses to start while it exists, and
// `joulebench restore` applies and clears it. Each GPU has its own file,
// holding that one device.
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
	// GPUSettingResets say which locks (record.GPUSettingsTable) were
	// locked and are to be unlocked.
	record.GPUSettingResets
}

// Journals are the directories a machine's journals may be in. A journal
// is written to the first that can be written (created if missing) and
// looked for in every one.
type Journals struct {
	Dirs []string
}

// DefaultJournals are the journals' places: $JOULEBENCH_STATE_DIR alone
// when set; else /var/lib/joulebench, falling back (when it cannot be
// written, e.g. not root) to the per-user $XDG_STATE_HOME/joulebench
// (default ~/.local/state/joulebench), where only this user's runs see
// them. getenv reads the environment (os.Getenv).
func DefaultJournals(getenv func(string) string) (Journals, error) {
	if dir := getenv(StateDirEnv); dir != "" {
		if !filepath.IsAbs(dir) {
			return Journals{}, fmt.Errorf("%s=%q: the GPU settings journals' directory must be an absolute path", StateDirEnv, dir)
		}
		return Journals{Dirs: []string{filepath.Clean(dir)}}, nil
	}
	js := Journals{Dirs: []string{SystemStateDir}}
	if user, err := userStateDir(getenv); err == nil {
		js.Dirs = append(js.Dirs, user)
	}
	return js, nil
}

// userStateDir is $XDG_STATE_HOME/joulebench, XDG_STATE_HOME defaulting
// to ~/.local/state (a relative one is invalid and ignored).
func userStateDir(getenv func(string) string) (string, error) {
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
	return filepath.Join(dir, "joulebench"), nil
}

// String names the directories ("/var/lib/joulebench (or ~/.local/...)").
func (js Journals) String() string {
	if len(js.Dirs) == 0 {
		return "(no journal directory)"
	}
	s := js.Dirs[0]
	if len(js.Dirs) > 1 {
		s += " (or " + strings.Join(js.Dirs[1:], ", ") + ")"
	}
	return s
}

// Found is one journal file found, with what it holds.
type Found struct {
	Path    string
	Journal *Journal
}

// maxJournalBytes caps a journal file: one GPU's previous values take
// about 300 bytes, an earlier version's journal of 64 GPUs under 20 KiB.
const maxJournalBytes = 64 << 10

// maxDirEntries caps the entries of a journal directory read: a machine
// has at most a few dozen GPUs.
const maxDirEntries = 4096

// journalReadTimeout bounds the read of one journal: a regular file of at
// most maxJournalBytes reads at once; a stuck file system is an error, not
// a run that never starts.
const journalReadTimeout = 5 * time.Second

// Find reads every journal in the directories (gpu-settings-*.json); a
// directory that does not exist has none. A file in a journal's place
// that cannot be read as one (not a regular file, too large, damaged) is
// an error naming it; the others are still returned.
func (js Journals) Find() ([]Found, error) {
	var out []Found
	var errs []error
	for _, dir := range js.Dirs {
		names, err := journalNames(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, name := range names {
			path := filepath.Join(dir, name)
			j, err := ReadJournal(path)
			switch {
			case err != nil:
				errs = append(errs, err)
			case j != nil:
				out = append(out, Found{Path: path, Journal: j})
			}
		}
	}
	return out, errors.Join(errs...)
}

// journalNames lists dir's journal file names, sorted; none when dir does
// not exist.
func journalNames(dir string) ([]string, error) {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err == nil && !st.IsDir() {
		err = errors.New("not a directory")
	}
	if err != nil {
		return nil, fmt.Errorf("GPU settings journals %s: %w", dir, err)
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("GPU settings journals %s: %w", dir, err)
	}
	defer f.Close()
	entries, err := f.ReadDir(maxDirEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("GPU settings journals %s: %w", dir, err)
	}
	if len(entries) > maxDirEntries {
		return nil, fmt.Errorf("GPU settings journals %s: more than %d entries: not a journal directory", dir, maxDirEntries)
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, JournalPrefix) && strings.HasSuffix(n, JournalSuffix) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// ReadJournal reads the journal file at path; nil (and no error) when
// there is none.
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
		return nil, fmt.Errorf("GPU settings journal %s: %w (it records GPU settings to restore: fix or remove it by hand after restoring them; "+
			"an empty or cut-short one was left by a run that died before changing anything)", path, err)
	}
	return &j, nil
}

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

// Check refuses to start while a journal is outstanding, naming each and
// the run that left it.
func (js Journals) Check() error {
	found, err := js.Find()
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return nil
	}
	msgs := make([]string, len(found))
	for i, f := range found {
		msgs[i] = fmt.Sprintf("GPU settings changed by run %s (pid %d, %s) were never restored, or that run is still going: the journal %s is outstanding",
			f.Journal.RunID, f.Journal.PID, f.Journal.Created, f.Path)
	}
	return fmt.Errorf("%s; run `joulebench restore` to restore them before another run", strings.Join(msgs, "; "))
}

// journalName is GPU d's journal file name: its UUID, or its index when
// it has none, in letters, digits, '-', '_' and '.' only.
func journalName(d JournalDevice) string {
	id := d.UUID
	if id == "" {
		id = fmt.Sprintf("index-%d", d.Index)
	}
	id = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, id)
	return JournalPrefix + strings.TrimLeft(id, ".") + JournalSuffix
}

// split is j as one journal per device.
func split(j *Journal) []*Journal {
	out := make([]*Journal, len(j.Devices))
	for i, d := range j.Devices {
		one := *j
		one.Devices = []JournalDevice{d}
		out[i] = &one
	}
	return out
}

// create writes j, one file per device, to the first directory that can
// be written, each file created exclusively: a GPU whose journal exists
// (another run's, started at the same moment) refuses, and the files
// already created are removed. It returns the directory and the files.
func (js Journals) create(j *Journal) (string, []string, error) {
	if len(js.Dirs) == 0 {
		return "", nil, errors.New("GPU settings: no journal directory")
	}
	var tried []string
	for _, dir := range js.Dirs {
		paths, err := createIn(dir, split(j))
		if err == nil {
			return dir, paths, nil
		}
		if !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.EROFS) {
			return "", nil, err
		}
		tried = append(tried, err.Error())
	}
	return "", nil, fmt.Errorf("GPU settings journal: no directory can be written: %s", strings.Join(tried, "; "))
}

// createIn creates dir (mode 0755: every user's runs read it) and one
// journal file per journal in it, exclusively, synced with the directory.
func createIn(dir string, js []*Journal) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("GPU settings journal: %w", err)
	}
	var paths []string
	for _, j := range js {
		path := filepath.Join(dir, journalName(j.Devices[0]))
		if err := createJournalFile(path, j); err != nil {
			for _, p := range paths {
				os.Remove(p)
			}
			return nil, err
		}
		paths = append(paths, path)
	}
	syncDir(dir)
	return paths, nil
}

// createJournalFile creates path exclusively (never through a link),
// mode 0644, and writes and syncs j in it. A journal there already is an
// error naming its run.
func createJournalFile(path string, j *Journal) error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o644)
	if errors.Is(err, fs.ErrExist) {
		who := "a file is there"
		if other, rerr := ReadJournal(path); rerr == nil && other != nil {
			who = fmt.Sprintf("run %s (pid %d, %s) changed it", other.RunID, other.PID, other.Created)
		}
		return fmt.Errorf("GPU %d (%s): its GPU settings journal %s exists: %s; nothing changed (run `joulebench restore` if that run is gone)",
			j.Devices[0].Index, orUnknown(j.Devices[0].UUID), path, who)
	}
	if err != nil {
		return fmt.Errorf("GPU settings journal: %w", err)
	}
	_, werr := f.Write(append(b, '\n'))
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return fmt.Errorf("GPU settings journal %s: %w", path, werr)
	}
	return nil
}

// WriteJournal writes j to path (mode 0644), replacing the file there
// through a temporary file: written, synced, renamed, and the directory
// synced. It rewrites a journal the run holds (its run id); a new
// journal is created exclusively (Journals.create).
func WriteJournal(path string, j *Journal) error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("GPU settings journal: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("GPU settings journal: %w", err)
	}
	tmp := f.Name()
	werr := f.Chmod(0o644)
	if werr == nil {
		_, werr = f.Write(b)
	}
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
	syncDir(dir)
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// RemoveJournal removes the journal at path (none is not an error).
func RemoveJournal(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("GPU settings journal %s: %w", path, err)
	}
	return nil
}
