package workflow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/boundedfile"
	"github.com/joulebench/joulebench/internal/safename"
	"github.com/joulebench/joulebench/metricdefs"
	"github.com/joulebench/joulebench/profiles"
)

// ProfileFile is the copy of the profile a run archive keeps, so that the
// run can be re-evaluated with exactly the method it was run with.
const ProfileFile = "profile.yaml"

// ReadProfile resolves a profile argument: an existing file path, or the
// name of a built-in profile. It returns the YAML and the name to report
// errors against.
func ReadProfile(nameOrPath string) ([]byte, string, error) {
	if st, err := os.Stat(nameOrPath); err == nil && !st.IsDir() {
		b, err := boundedfile.Read(nameOrPath, "profile", boundedfile.MaxProfileBytes)
		if err != nil {
			return nil, "", err
		}
		return b, nameOrPath, nil
	}
	if looksLikePath(nameOrPath) {
		if _, err := os.Stat(nameOrPath); errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("profile file %s does not exist", nameOrPath)
		}
	}
	b, err := profiles.Read(nameOrPath)
	if err != nil {
		return nil, "", fmt.Errorf("%w; or give the path of a profile file", err)
	}
	return b, nameOrPath + ".yaml (built-in)", nil
}

// looksLikePath tells a file argument from a built-in profile's name.
func looksLikePath(s string) bool {
	ext := filepath.Ext(s)
	return strings.ContainsRune(s, '/') || strings.ContainsRune(s, filepath.Separator) || ext == ".yaml" || ext == ".yml"
}

// ProfileForRun picks the profile to evaluate an archived run with when the
// user names none: the copy in the archive, else the built-in it names.
func ProfileForRun(dir string, meta record.Meta) ([]byte, string, error) {
	p := filepath.Join(dir, ProfileFile)
	if b, err := boundedfile.Read(p, "profile", boundedfile.MaxProfileBytes); err == nil {
		return b, p, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", err
	}
	if meta.Profile.Name == "" {
		return nil, "", fmt.Errorf("%s names no profile and has no %s: give --profile", filepath.Join(dir, archive.RunFile), ProfileFile)
	}
	// An archive names a built-in profile, never a path to read.
	if err := safename.Check("profile name", meta.Profile.Name); err != nil {
		return nil, "", fmt.Errorf("%s: %w; give --profile", filepath.Join(dir, archive.RunFile), err)
	}
	return ReadProfile(meta.Profile.Name)
}

// Evaluate computes a loaded profile's derived values, metrics and checks
// over an archived run. The results are complete as far as the data allows;
// the error joins every formula that failed.
func Evaluate(ctx context.Context, l *Loaded, run *record.Run) (*record.Results, error) {
	data, err := metricdefs.NewData(run)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", run.Dir, err)
	}
	return EvaluateData(ctx, l, data)
}

// EvaluateData is Evaluate over a run already indexed (metricdefs.NewData),
// for a caller that frees the run's raw rows before evaluating.
func EvaluateData(ctx context.Context, l *Loaded, data *metricdefs.Data) (*record.Results, error) {
	res, err := l.Program.Evaluate(ctx, data, l.Params)
	if res != nil {
		res.Profile = l.Ref
	}
	return res, err
}
