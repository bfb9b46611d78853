package compare

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/profiles"
)

// FlagProfileEdited marks a run whose profile bears a built-in's name but
// not its content (sha256): another method under the same name.
const FlagProfileEdited = "profile_edited"

// method is the method a run was evaluated with: its profile's name and
// sha256 (key, the same for the same profile text), said in words (text);
// edited tells what differs from the built-in it names ("" when it is
// that built-in, names none, or has no sha256 to compare).
type method struct {
	key, text, edited string
}

// profileRef is the profile a run was evaluated with: its results' (the
// profile compare re-evaluated it with), else run.json's.
func profileRef(r Run) record.ProfileRef {
	if r.Results != nil && r.Results.Profile.Name != "" {
		return r.Results.Profile
	}
	return r.Meta.Profile
}

// methodOf is the method of a run: a profile named like a built-in
// (profiles/) whose sha256 is not the built-in's is edited (or another
// version's), told apart from the built-in by name and sha256.
func methodOf(r Run) method {
	ref := profileRef(r)
	m := method{key: ref.Name + "\x00" + ref.SHA256, text: orDash(ref.Name)}
	if ref.SHA256 == "" {
		return m
	}
	short := ref.SHA256[:min(12, len(ref.SHA256))]
	builtin := builtinSHA256(ref.Name)
	switch {
	case builtin == "":
		m.text += " (sha256 " + short + ")"
	case builtin == ref.SHA256:
		m.text += " (built-in, sha256 " + short + ")"
	default:
		m.edited = "differs from built-in " + ref.Name + " (sha256 " + short + ", the built-in's " + builtin[:12] +
			"): an edited copy, or another version's"
		m.text += " (sha256 " + short + "; profile edited: differs from built-in " + ref.Name + ", sha256 " + builtin[:12] + ")"
	}
	return m
}

// builtinSHA256 is the sha256 of the built-in profile name; "" when name
// is not a built-in.
func builtinSHA256(name string) string {
	if name == "" || !slices.Contains(profiles.Names(), name) {
		return ""
	}
	b, err := profiles.Read(name)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// methodFlag is the flag of a run whose profile differs from the built-in
// it names: shown with the run, it removes nothing (the run is compared
// apart, as its own method).
func methodFlag(m method) (Flag, bool) {
	if m.edited == "" {
		return Flag{}, false
	}
	return Flag{Name: FlagProfileEdited, Detail: m.edited, Removes: []string{ValueNone}}, true
}

// methodsOf are the methods of the rows in the statistics, in words, in
// order of first appearance.
func methodsOf(rows []*RunRow) []string {
	var out []string
	for _, r := range rows {
		if r.Included && !slices.Contains(out, r.method.text) {
			out = append(out, r.method.text)
		}
	}
	return out
}
