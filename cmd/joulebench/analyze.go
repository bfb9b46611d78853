package main

import (
	"context"
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

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

func (a *app) analyzeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "analyze DIR",
		Short: "Re-evaluate an archived run from its raw data with a profile",
		Long: `analyze reads a run archive (run.json, power.csv, requests.jsonl, ...)
and evaluates a profile's derived values, metrics and checks over it. By
default it uses the profile archived with the run; --profile names a
built-in profile or a YAML file, so an edited method can be applied to old
runs without re-running anything.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sets, _ := cmd.Flags().GetStringArray("set")
			return a.analyze(cmd, args[0], a.v.GetString("profile"), sets)
		},
	}
	cmd.Flags().String("profile", "", "profile name or file (default: the run's own)")
	resultsFlags(cmd.Flags(), "output format: table (a summary of the headline figures; --all for every value), json, csv, markdown")
	setFlag(cmd.Flags())
	baselineFlags(cmd.Flags())
	return cmd
}

// loadProfile resolves and loads a profile, turning its errors into invalid
// input.
func (a *app) loadProfile(src []byte, name string, sets []string) (*workflow.Loaded, error) {
	overrides, err := parseSets(sets)
	if err != nil {
		return nil, err
	}
	l, err := workflow.Load(src, name, workflow.Options{Registry: steps.Registry(), Overrides: overrides, Lookup: a.finder().Find})
	if err != nil {
		return nil, withCode(exitInvalid, fmt.Errorf("invalid profile:\n%w", err))
	}
	return l, nil
}

func (a *app) analyze(cmd *cobra.Command, dir, profile string, sets []string) error {
	view, err := a.resultsView()
	if err != nil {
		return err
	}
	view.hint = "every value: joulebench analyze " + dir + " --all"
	if base := a.v.GetString("baseline"); base != "" {
		run, l, _, _, err := a.evaluateArchiveLoaded(cmd.Context(), dir, profile, sets)
		if err != nil {
			return err
		}
		return a.gateRun(cmd.Context(), l, run, base, view.format, view.all)
	}
	return a.evaluateAndShow(cmd.Context(), dir, profile, sets, view)
}

// evaluateArchive loads a run archive and evaluates a profile over it: the
// named profile, or by default the run's own archived profile with the
// parameters it ran with. sets apply on top. err is a failure to load or
// start; evalErr joins the formulas that failed on this run's data.
func (a *app) evaluateArchive(ctx context.Context, dir, profile string, sets []string) (run *archive.Run, res *archive.Results, evalErr, err error) {
	run, _, res, evalErr, err = a.evaluateArchiveLoaded(ctx, dir, profile, sets)
	return run, res, evalErr, err
}

// evaluateArchiveLoaded is evaluateArchive that also returns the loaded
// profile (report needs its stage_energy rows).
func (a *app) evaluateArchiveLoaded(ctx context.Context, dir, profile string, sets []string) (run *archive.Run, l *workflow.Loaded, res *archive.Results, evalErr, err error) {
	// results.json is not read: everything is evaluated again from the
	// raw data, so a broken or edited results.json changes nothing.
	run, err = archive.LoadData(dir)
	if err != nil {
		return nil, nil, nil, nil, withCode(exitInvalid, err)
	}
	var src []byte
	var name string
	if profile != "" {
		src, name, err = a.readProfile(profile)
		if err == nil {
			l, err = a.loadProfile(src, name, sets)
		}
	} else {
		src, name, err = archivedProfile(dir, run.Meta)
		if err == nil {
			l, err = a.loadArchivedProfile(src, name, run.Meta, sets)
		}
	}
	if err != nil {
		if isExitError(err) {
			return nil, nil, nil, nil, err
		}
		return nil, nil, nil, nil, withCode(exitInvalid, err)
	}
	// A run killed or interrupted during a stage has it open: it is
	// evaluated up to the end of its data, and the values over it say they
	// are partial.
	run.ClampOpenStages()
	restore := limitEvalMemory()
	res, evalErr = workflow.Evaluate(ctx, l, run)
	restore()
	if res == nil {
		return nil, nil, nil, nil, withCode(exitInvalid, evalErr)
	}
	if profile != "" {
		// Label headers and CSV with the profile evaluated, not the one
		// the run was archived with.
		run.Meta.Profile = l.Ref
	}
	return run, l, res, evalErr, nil
}

// checksOutcome returns an exit error when a check of severity fail or
// exclude did not pass.
func checksOutcome(res *archive.Results) error {
	var failed []error
	for _, n := range res.Order {
		r := res.Values[n]
		if r.Kind == "check" && r.Passed != nil && !*r.Passed && (r.Severity == "fail" || r.Severity == "exclude") {
			failed = append(failed, fmt.Errorf("check %s (%s) failed: %s", n, r.Severity, r.Message))
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return withCode(exitChecks, errors.Join(failed...))
}

// archivedProfile is the profile to re-evaluate a run with when --profile
// is not given: the archive's copy (profile.yaml), which must be the one
// the run used (its sha256 is run.json's profile.sha256). Without the
// copy, only a built-in with exactly that sha256 is the profile the run
// used; anything else (no sha256 to compare, a built-in changed since the
// run) is an error that asks for --profile and names the change: a run is
// never evaluated silently with another method than its own. The name in
// run.json is only ever looked up among the built-ins, never opened as a
// path.
func archivedProfile(dir string, meta archive.Meta) ([]byte, string, error) {
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

// loadArchivedProfile loads a run's own profile with the parameters the
// run resolved (run.json) and then the user's --set values. An archived
// parameter the profile refuses is reported as run.json's, not as --set.
func (a *app) loadArchivedProfile(src []byte, name string, meta archive.Meta, sets []string) (*workflow.Loaded, error) {
	user, err := parseSets(sets)
	if err != nil {
		return nil, err
	}
	archived := runParamSets(meta)
	l, err := a.loadProfile(src, name, append(archived, sets...))
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
	if more := len(list) - maxListedErrors; more > 0 {
		list = append(list[:maxListedErrors:maxListedErrors], &workflow.Error{File: archive.RunFile + " parameters",
			Msg: fmt.Sprintf("… and %d more errors (not listed)", more)})
	}
	return nil, withCode(exitInvalid, fmt.Errorf("invalid profile:\n%w", list))
}

// maxListedErrors bounds the errors listed when a run's own profile refuses
// its archived parameters: each unknown parameter is one error naming
// every known one, and run.json may have up to archive.MaxParameters.
const maxListedErrors = 20

// runParamSets returns the parameters a run resolved (run.json) as
// key=value pairs, so that its own profile is re-evaluated exactly as it
// ran. A whole number is written in full (1000000, not 1e+06, which an
// integer parameter would refuse).
func runParamSets(m archive.Meta) []string {
	keys := make([]string, 0, len(m.Parameters))
	for k := range m.Parameters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		switch v := m.Parameters[k].(type) {
		case float64:
			out = append(out, k+"="+formatParam(v))
		default:
			out = append(out, fmt.Sprintf("%s=%v", k, v))
		}
	}
	return out
}

// formatParam writes a number from run.json as a parameter value: whole
// numbers that an int64 holds in full digits, others in the shortest form
// that reads back exactly.
func formatParam(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
