// Package profiles embeds the built-in methodology profiles and finds
// profiles by name among the built-ins and the user's profile directories.
// The profiles are plain YAML with the same schema as a user's profile
// file; there is no methodology logic here, only listing and reading.
package profiles

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/joulebench/joulebench/internal/boundedfile"
)

//go:embed *.yaml
var files embed.FS

// Names lists the built-in profiles.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// Read returns the YAML of a built-in profile.
func Read(name string) ([]byte, error) {
	b, err := files.ReadFile(name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no built-in profile %q (built-in: %s)", name, strings.Join(Names(), ", "))
	}
	return b, nil
}

// IsPath reports whether a profile argument is a file path rather than a
// name: it has a directory separator or a .yaml/.yml extension.
func IsPath(ref string) bool {
	return strings.ContainsRune(ref, '/') || strings.ContainsRune(ref, filepath.Separator) ||
		strings.HasSuffix(ref, ".yaml") || strings.HasSuffix(ref, ".yml")
}

// Origins of a profile in a listing.
const (
	OriginBuiltin = "built-in"
	OriginUser    = "user"
	OriginPath    = "--profile-path"
)

// Dir is a directory of user profiles (NAME.yaml).
type Dir struct {
	Path   string
	Origin string // OriginUser or OriginPath
}

// UserDir is the directory of a user's named profiles:
// $XDG_CONFIG_HOME/joulebench/profiles (os.UserConfigDir).
func UserDir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("user profile directory: %w", err)
	}
	return filepath.Join(dir, "joulebench", "profiles"), nil
}

// Finder finds profiles by name among the built-ins and directories of
// user profiles, in order. A user profile never shadows a built-in or
// another directory's profile silently: such a name is an error naming
// both files.
type Finder struct {
	Dirs []Dir
}

// NewFinder finds profiles in the user's profile directory (UserDir, when
// there is one) and then in each directory of pathLists, each a list
// joined by the OS's list separator (--profile-path, also `profile-path:`
// in the config file); empty entries are skipped.
func NewFinder(pathLists []string) *Finder {
	f := &Finder{}
	if dir, err := UserDir(); err == nil {
		f.Dirs = append(f.Dirs, Dir{Path: dir, Origin: OriginUser})
	}
	for _, p := range pathLists {
		for _, d := range filepath.SplitList(p) {
			if d != "" {
				f.Dirs = append(f.Dirs, Dir{Path: d, Origin: OriginPath})
			}
		}
	}
	return f
}

// Entry is one profile a Finder knows.
type Entry struct {
	Name   string
	Origin string // built-in, user or --profile-path
	Path   string // the file; "" for a built-in
	// Conflict, when set, is why the name cannot be used (it shadows a
	// built-in or a profile of an earlier directory).
	Conflict string
}

// List returns every profile by name: the built-ins, then each directory's
// NAME.yaml files (a missing directory is empty).
func (f *Finder) List() ([]Entry, error) {
	var out []Entry
	seen := map[string]int{}
	for _, n := range Names() {
		seen[n] = len(out)
		out = append(out, Entry{Name: n, Origin: OriginBuiltin})
	}
	for _, d := range f.Dirs {
		files, err := os.ReadDir(d.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("profile directory %s: %w", d.Path, err)
		}
		for _, e := range files {
			name, ok := strings.CutSuffix(e.Name(), ".yaml")
			if !ok || e.IsDir() {
				continue
			}
			en := Entry{Name: name, Origin: d.Origin, Path: filepath.Join(d.Path, e.Name())}
			if i, dup := seen[name]; dup {
				prev := out[i]
				if prev.Origin == OriginBuiltin {
					en.Conflict = fmt.Sprintf("%s shadows the built-in profile %q: rename the file (it can extend %s under another name)", en.Path, name, name)
				} else {
					en.Conflict = fmt.Sprintf("%s and %s both define profile %q: rename one", prev.Path, en.Path, name)
				}
			} else {
				seen[name] = len(out)
			}
			out = append(out, en)
		}
	}
	return out, nil
}

// Find resolves a profile argument: an existing file, else a name among
// the built-ins and the user directories. from, when set, is the file that
// names ref (extends:), against which a relative path is read. It returns
// the YAML and the name errors report it by.
func (f *Finder) Find(ref, from string) ([]byte, string, error) {
	if IsPath(ref) {
		return readFile(ref, from)
	}
	entries, err := f.List()
	if err != nil {
		return nil, "", err
	}
	var found *Entry
	var names []string
	for i, e := range entries {
		if e.Conflict == "" {
			names = append(names, e.Name)
		}
		if e.Name != ref {
			continue
		}
		if e.Conflict != "" {
			return nil, "", fmt.Errorf("profile %q: %s", ref, e.Conflict)
		}
		found = &entries[i]
	}
	if found == nil {
		// A bare file name that names no profile: a file in the current
		// directory (never one that would shadow a profile's name).
		if fileExists(ref) {
			return readFile(ref, from)
		}
		return nil, "", fmt.Errorf("no built-in profile or user profile %q (known: %s); or give the path of a profile file", ref, strings.Join(names, ", "))
	}
	if found.Origin == OriginBuiltin {
		b, err := Read(ref)
		return b, ref + ".yaml (built-in)", err
	}
	b, err := boundedfile.Read(found.Path, "profile", boundedfile.MaxProfileBytes)
	if err != nil {
		return nil, "", err
	}
	return b, found.Path, nil
}

// readFile reads a profile file given by path, relative to the directory
// of from (an extending profile) when from is a file.
func readFile(ref, from string) ([]byte, string, error) {
	p := ref
	if from != "" && !filepath.IsAbs(ref) && fileExists(from) {
		p = filepath.Join(filepath.Dir(from), ref)
	}
	b, err := boundedfile.Read(p, "profile", boundedfile.MaxProfileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("profile file %s does not exist", p)
	}
	if err != nil {
		return nil, "", err
	}
	return b, p, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
