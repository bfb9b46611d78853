package analysis

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/workflow"
)

// ArchivedProfile is the profile to re-evaluate a run with when none is
// named: the archive's copy (profile.yaml), which must be the one the run
// used (its sha256 is run.json's profile.sha256). Without the copy, only a
// built-in with exactly that sha256 is the profile the run used; anything
// else (no sha256 to compare, a built-in changed since the run) is an
// error that asks for --profile and names the change: a run is never
// evaluated silently with another method than its own. The name in
// run.json is only ever looked up among the built-ins, never opened as a
// path.
func ArchivedProfile(dir string, meta record.Meta) ([]byte, string, error) {
	path := filepath.Join(dir, workflow.ProfileFile)
	src, err := readArchiveFile(dir, workflow.ProfileFile)
	switch {
	case err == nil:
		sum := sha256.Sum256(src)
		if got := hex.EncodeToString(sum[:]); meta.Profile.SHA256 != "" && got != meta.Profile.SHA256 {
			return nil, "", fmt.Errorf("%s: sha256 %s differs from %s's profile.sha256 %s: the profile was edited after the run; give --profile %s to evaluate the run with it anyway",
				path, got, archive.RunFile, meta.Profile.SHA256, path)
		}
		return src, path, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, "", err
	}
	runFile := filepath.Join(dir, archive.RunFile)
	name := meta.Profile.Name
	if name == "" {
		return nil, "", fmt.Errorf("%s names no profile and %s has no %s: give --profile", runFile, dir, workflow.ProfileFile)
	}
	if !slices.Contains(profiles.Names(), name) {
		return nil, "", fmt.Errorf("%s: profile %q is not a built-in and the archive has no %s: give --profile NAME|FILE (built-ins: %s)",
			runFile, name, workflow.ProfileFile, strings.Join(profiles.Names(), ", "))
	}
	b, err := profiles.Read(name)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(b)
	builtin := hex.EncodeToString(sum[:])
	switch meta.Profile.SHA256 {
	case builtin:
		return b, name + ".yaml (built-in)", nil
	case "":
		return nil, "", fmt.Errorf("%s: the archive has no %s and %s records no profile.sha256, so whether the run used today's built-in %q cannot be told: give --profile %s to evaluate it with today's built-in, or --profile FILE with the profile it ran",
			runFile, workflow.ProfileFile, archive.RunFile, name, name)
	}
	return nil, "", fmt.Errorf("%s: the archive has no %s, and built-in profile %q has changed since the run (sha256 %s now, %s in %s): give --profile %s to evaluate the run with the changed built-in, or --profile FILE with the profile it ran",
		runFile, workflow.ProfileFile, name, builtin, meta.Profile.SHA256, archive.RunFile, name)
}

// readArchiveFile reads a regular file of the run directory; a symbolic
// link is followed only while it stays in the directory.
func readArchiveFile(dir, name string) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	st, err := root.Stat(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, lerr := root.Lstat(name); lerr == nil {
				return nil, fmt.Errorf("%s: a symbolic link to nothing", filepath.Join(dir, name))
			}
			return nil, err
		}
		return nil, fmt.Errorf("%s: not readable inside the run directory (a symbolic link out of it is refused): %w", filepath.Join(dir, name), err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", filepath.Join(dir, name))
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, archive.MaxDocumentBytes))
}

// loadArchived loads a run's own profile with the parameters the run
// resolved (run.json) and then the user's --set values. An archived
// parameter the profile refuses is reported as run.json's, not as --set.
func (p Profiles) loadArchived(src []byte, name string, meta record.Meta, sets []string) (*workflow.Loaded, error) {
	user, err := workflow.ParseSets(sets)
	if err != nil {
		return nil, err
	}
	archived := RunParamSets(meta)
	l, err := p.Load(src, name, append(archived, sets...))
	if err == nil {
		return l, nil
	}
	var list workflow.ErrorList
	if !errors.As(err, &list) {
		return nil, err
	}
	for _, e := range list {
		if _, byUser := user[e.Where]; e.File == "--set" && !byUser {
			e.File = archive.RunFile + " parameters"
			e.Msg += " (archived with the run)"
		}
	}
	if more := len(list) - MaxListedErrors; more > 0 {
		list = append(list[:MaxListedErrors:MaxListedErrors], &workflow.Error{File: archive.RunFile + " parameters",
			Msg: fmt.Sprintf("… and %d more errors (not listed)", more)})
	}
	return nil, exitcode.With(exitcode.Invalid, fmt.Errorf("invalid profile:\n%w", list))
}

// MaxListedErrors bounds the errors listed when a run's own profile
// refuses its archived parameters: each unknown parameter is one error
// naming every known one, and run.json may have up to
// archive.MaxParameters.
const MaxListedErrors = 20

// RunParamSets returns the parameters a run resolved (run.json) as
// key=value pairs, so that its own profile is re-evaluated exactly as it
// ran. A whole number is written in full (1000000, not 1e+06, which an
// integer parameter would refuse).
func RunParamSets(m record.Meta) []string {
	keys := make([]string, 0, len(m.Parameters))
	for k := range m.Parameters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		switch v := m.Parameters[k].(type) {
		case float64:
			out = append(out, k+"="+FormatParam(v))
		default:
			out = append(out, fmt.Sprintf("%s=%v", k, v))
		}
	}
	return out
}

// FormatParam writes a number from run.json as a parameter value: whole
// numbers that an int64 holds in full digits, others in the shortest form
// that reads back exactly.
func FormatParam(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
