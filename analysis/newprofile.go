package analysis

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/joulebench/joulebench/internal/exitcode"
	"github.com/joulebench/joulebench/internal/safename"
	"github.com/joulebench/joulebench/metricdefs"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// List writes one line per profile the finder knows: its name, where it
// comes from, and its description (or why it cannot be used).
func (p Profiles) List(w io.Writer) error {
	entries, err := p.finder().List()
	if err != nil {
		return err
	}
	for _, e := range entries {
		where := e.Origin
		if e.Path != "" {
			where += " " + e.Path
		}
		fmt.Fprintf(w, "%-16s %-40s %s\n", e.Name, where, p.describe(e))
	}
	return nil
}

// describe is an entry's description: a conflict, a profile that does not
// load, or its description (with the profile it extends).
func (p Profiles) describe(e profiles.Entry) string {
	if e.Conflict != "" {
		return "UNUSABLE: " + e.Conflict
	}
	src, file, err := p.Read(e.Name)
	if err != nil {
		return "error: " + err.Error()
	}
	l, err := p.Load(src, file, nil)
	if err != nil {
		return "invalid: " + oneLine(err.Error())
	}
	desc := oneLine(l.Profile.Description)
	if ext := l.Extends(); len(ext) > 1 {
		desc = "extends " + ext[1] + ". " + desc
	}
	return desc
}

// Show is a profile's YAML; resolved: flattened (extends resolved), each
// entry with the file and line it came from.
func (p Profiles) Show(ref string, resolved bool) ([]byte, error) {
	src, name, err := p.Read(ref)
	if err != nil {
		return nil, exitcode.With(exitcode.Invalid, err)
	}
	if !resolved {
		return src, nil
	}
	l, err := p.Load(src, name, nil)
	if err != nil {
		return nil, err
	}
	return l.Resolved()
}

// New writes a starting profile NAME.yaml in dir (default: the user's
// profile directory) that extends parent, refusing a name that is taken
// (built-in or existing file) and checking that the file loads. It returns
// the file written.
func (p Profiles) New(name, parent, dir string) (string, error) {
	if err := safename.Check("profile name", name); err != nil {
		return "", exitcode.Invalidf("%v (the file becomes NAME.yaml)", err)
	}
	for _, b := range profiles.Names() {
		if b == name {
			return "", exitcode.Invalidf("%q is a built-in profile: choose another name (the new profile extends it)", name)
		}
	}
	psrc, pfile, err := p.Read(parent)
	if err != nil {
		return "", exitcode.With(exitcode.Invalid, fmt.Errorf("--extends: %w", err))
	}
	pl, err := p.Load(psrc, pfile, nil)
	if err != nil {
		return "", err
	}
	if dir == "" {
		if dir, err = profiles.UserDir(); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("profiles new: %w", err)
	}
	path := filepath.Join(dir, name+".yaml")
	src := starterProfile(name, parent, pl)
	if _, err := p.Load(src, path, nil); err != nil {
		return "", fmt.Errorf("profiles new: the starting file does not load (a bug): %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return "", exitcode.Invalidf("%s exists: never overwritten; edit it or choose another name", path)
	}
	if err != nil {
		return "", fmt.Errorf("profiles new: %w", err)
	}
	if _, err := f.Write(src); err != nil {
		_ = f.Close()
		return "", fmt.Errorf("profiles new: %w", err)
	}
	return path, f.Close()
}

// starterProfile is the commented starting file of `profiles new`.
func starterProfile(name, parent string, pl *workflow.Loaded) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: a profile of your own. It extends %s and inherits its steps,\n", name, parent)
	b.WriteString("# parameters, derived values, metrics and checks; add or change them here.\n")
	fmt.Fprintf(&b, "# See everything it inherits: joulebench profiles show %s --resolved\n", name)
	b.WriteString("# Check it: joulebench validate " + name + "   Run it: joulebench run " + name + "\n")
	fmt.Fprintf(&b, "name: %s\nextends: %s\ndescription: %s, with my additions\n\n", name, parent, parent)
	b.WriteString("# New entries go in the usual sections (a name the parent already has is an\n# error: change it under override: instead).\n")
	b.WriteString("# metrics:\n#   - {name: tokens_per_kj, unit: token/kJ, expr: 1000 / full_lifecycle_j_per_token, format: \"%.1f\"}\n")
	b.WriteString("# checks:\n#   - {name: enough_requests, expr: formal_output_tokens > 1000, severity: warn, message: too few tokens}\n\n")
	b.WriteString("# Changing an inherited entry: only the fields given change; a name the\n# parent lacks is an error (typo protection).\n")
	b.WriteString("# override:\n#   parameters:\n")
	for i, p := range pl.Profile.Parameters {
		if i == 4 {
			break
		}
		fmt.Fprintf(&b, "#     %s: %v\n", p.Name, p.Default)
	}
	if len(pl.Profile.Checks) > 0 {
		c := pl.Profile.Checks[0]
		fmt.Fprintf(&b, "#   checks:\n#     - {name: %s, severity: %s}\n", c.Name, c.Severity)
	}
	b.WriteString("\n# steps: (a list here replaces the parent's steps as a whole)\n")
	return []byte(b.String())
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// WriteBuiltins lists what a profile can use: the step kinds and the
// functions and data formulas can call.
func WriteBuiltins(w io.Writer) {
	reg := steps.Registry()
	fmt.Fprintln(w, "Step kinds:")
	for _, n := range reg.Names() {
		k, _ := reg.Lookup(n)
		fmt.Fprintf(w, "  %-14s %s\n", n, k.Doc)
	}
	fmt.Fprintln(w, "\nFunctions (besides expr's own: filter, map, sum, len, ...):")
	for _, b := range metricdefs.Builtins() {
		fmt.Fprintf(w, "  %s\n      %s\n", b.Signature, b.Doc)
	}
	fmt.Fprintln(w, "\nData: run, stages.NAME.{start,end,duration}, events.NAME, requests[], devices[], parameters and derived values by name, baseline.METRIC (with --baseline).")
}
