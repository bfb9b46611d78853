package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/internal/safename"
	"github.com/joulebench/joulebench/metricdefs"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

// finder finds profiles by name: the built-ins, the user's profile
// directory ($XDG_CONFIG_HOME/joulebench/profiles) and --profile-path
// (also `profile-path:` in the config file).
func (a *app) finder() *profiles.Finder {
	f := &profiles.Finder{}
	if dir, err := profiles.UserDir(); err == nil {
		f.Dirs = append(f.Dirs, profiles.Dir{Path: dir, Origin: profiles.OriginUser})
	}
	for _, p := range a.v.GetStringSlice("profile-path") {
		for _, d := range filepath.SplitList(p) {
			if d != "" {
				f.Dirs = append(f.Dirs, profiles.Dir{Path: d, Origin: profiles.OriginPath})
			}
		}
	}
	return f
}

// readProfile resolves a profile argument (a file, or a name found by
// finder) to its YAML and the name errors report it by.
func (a *app) readProfile(ref string) ([]byte, string, error) {
	return a.finder().Find(ref, "")
}

func (a *app) profilesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List, show and start profiles; list step kinds and formula built-ins",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the profiles found by name, and where each comes from",
		Long: `list shows every profile run, analyze and validate find by name: the
built-ins, the user's profiles in $XDG_CONFIG_HOME/joulebench/profiles and
those in --profile-path directories. A user profile named like a built-in
or like a profile of an earlier directory is listed with the conflict and
cannot be used by name.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			entries, err := a.finder().List()
			if err != nil {
				return err
			}
			for _, e := range entries {
				where := e.Origin
				if e.Path != "" {
					where += " " + e.Path
				}
				desc := ""
				if e.Conflict != "" {
					desc = "UNUSABLE: " + e.Conflict
				} else if src, file, err := a.finder().Find(e.Name, ""); err != nil {
					desc = "error: " + err.Error()
				} else if l, err := a.loadProfile(src, file, nil); err != nil {
					desc = "invalid: " + oneLine(err.Error())
				} else {
					desc = oneLine(l.Profile.Description)
					if ext := l.Extends(); len(ext) > 1 {
						desc = "extends " + ext[1] + ". " + desc
					}
				}
				fmt.Fprintf(a.out, "%-16s %-40s %s\n", e.Name, where, desc)
			}
			return nil
		},
	})
	show := &cobra.Command{
		Use:   "show NAME|FILE",
		Short: "Print a profile's YAML (the method as data); --resolved: flattened, with where each entry came from",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, name, err := a.readProfile(args[0])
			if err != nil {
				return withCode(exitInvalid, err)
			}
			if resolved, _ := cmd.Flags().GetBool("resolved"); resolved {
				l, err := a.loadProfile(src, name, nil)
				if err != nil {
					return err
				}
				if src, err = l.Resolved(); err != nil {
					return err
				}
			}
			_, err = a.out.Write(src)
			return err
		},
	}
	show.Flags().Bool("resolved", false, "print the flattened profile (extends resolved), each entry with the file and line it came from")
	cmd.AddCommand(show)
	newCmd := &cobra.Command{
		Use:   "new NAME --extends PROFILE",
		Short: "Write a commented starting profile NAME.yaml in the user's profile directory",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			parent, _ := cmd.Flags().GetString("extends")
			dir, _ := cmd.Flags().GetString("dir")
			path, err := a.newProfile(args[0], parent, dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.out, "wrote %s\nrun it with: joulebench run %s   (check it: joulebench validate %s)\n", path, args[0], args[0])
			return nil
		},
	}
	newCmd.Flags().String("extends", "benchmark-1.5", "the profile the new one extends")
	newCmd.Flags().String("dir", "", "directory to write to (default: $XDG_CONFIG_HOME/joulebench/profiles)")
	cmd.AddCommand(newCmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "builtins",
		Short: "List the step kinds and the functions formulas can call",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			reg := steps.Registry()
			fmt.Fprintln(a.out, "Step kinds:")
			for _, n := range reg.Names() {
				k, _ := reg.Lookup(n)
				fmt.Fprintf(a.out, "  %-14s %s\n", n, k.Doc)
			}
			fmt.Fprintln(a.out, "\nFunctions (besides expr's own: filter, map, sum, len, ...):")
			for _, b := range metricdefs.Builtins() {
				fmt.Fprintf(a.out, "  %s\n      %s\n", b.Signature, b.Doc)
			}
			fmt.Fprintln(a.out, "\nData: run, stages.NAME.{start,end,duration}, events.NAME, requests[], devices[], parameters and derived values by name, baseline.METRIC (with --baseline).")
			return nil
		},
	})
	return cmd
}

// newProfile writes a starting profile that extends parent, refusing a
// name that is taken (built-in or existing file) and checking that the
// file loads.
func (a *app) newProfile(name, parent, dir string) (string, error) {
	if err := safename.Check("profile name", name); err != nil {
		return "", invalidf("%v (the file becomes NAME.yaml)", err)
	}
	for _, b := range profiles.Names() {
		if b == name {
			return "", invalidf("%q is a built-in profile: choose another name (the new profile extends it)", name)
		}
	}
	psrc, pfile, err := a.finder().Find(parent, "")
	if err != nil {
		return "", withCode(exitInvalid, fmt.Errorf("--extends: %w", err))
	}
	pl, err := a.loadProfile(psrc, pfile, nil)
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
	if _, err := a.loadProfile(src, path, nil); err != nil {
		return "", fmt.Errorf("profiles new: the starting file does not load (a bug): %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return "", invalidf("%s exists: never overwritten; edit it or choose another name", path)
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
